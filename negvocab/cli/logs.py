"""Logging for the ``negvocab`` command: ``-v``/``-q``/``--log-file`` on every command.

- default: warnings and errors; progress lines (``negvocab.core.progress``) when stderr is not a terminal
  (on a terminal the bar shows it);
- ``-v``: negvocab's own detail (INFO), not the import chatter of open_clip, faiss or HTTP
  libraries (their warnings still show); ``-vv``: negvocab's DEBUG and the others' INFO;
- ``-q``: errors only, no progress lines;
- ``--log-file PATH``: appends negvocab's INFO lines (DEBUG with ``-vv``), progress lines and every
  warning to PATH, whatever ``-q`` says, with URL credentials masked as on stderr.

The options are accepted before the sub-command (``negvocab -v score ...``) and after it
(``negvocab score ... -v``); the larger verbosity wins.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from negvocab.core.redact import redact_urls

__all__ = ["FORMAT", "add_options", "configure", "is_quiet", "options", "restore", "verbosity"]

FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"
_OURS = "negvocab"
_PROGRESS = "negvocab.core.progress"
_META = "negvocab.logging"
_MARK = "_negvocab_log_options"


class _Filter(logging.Filter):
    """Pass negvocab's records at ``ours`` and above, other libraries' at ``others`` and above;
    progress lines only when ``progress``."""

    def __init__(self, ours: int, others: int, progress: bool) -> None:
        super().__init__()
        self.ours, self.others, self.progress = ours, others, progress

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == _PROGRESS or record.name.startswith(_PROGRESS + "."):
            return self.progress and record.levelno >= logging.INFO
        mine = record.name == _OURS or record.name.startswith(_OURS + ".")
        return record.levelno >= (self.ours if mine else self.others)


def _redact_urls(record: logging.LogRecord) -> bool:
    """Mask user info and query strings of URLs in a log line (HTTP clients log request URLs)."""
    text = record.getMessage()
    clean = redact_urls(text)
    if clean != text:
        record.msg, record.args = clean, None
    return True


def configure(verbose: int = 0, quiet: bool = False, log_file: Path | None = None, *, stderr: Any = None) -> None:
    """(Re)install negvocab's handlers on the root logger for these settings."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_negvocab", False)]:
        root.removeHandler(h)
        h.close()
    stream = stderr if stderr is not None else sys.stderr
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if quiet:
        ours = others = logging.ERROR
    else:
        ours = logging.DEBUG if verbose >= 2 else logging.INFO if verbose == 1 else logging.WARNING
        others = logging.INFO if verbose >= 2 else logging.WARNING
    handlers: list[logging.Handler] = []
    console = logging.StreamHandler(stream)
    console.addFilter(_Filter(ours, others, progress=not quiet and not tty))
    handlers.append(console)
    if log_file is not None:
        log_file = Path(log_file).expanduser()
        log_file.parent.mkdir(parents=True, exist_ok=True)
        fh = logging.FileHandler(log_file, mode="a", encoding="utf-8")
        fh.addFilter(
            _Filter(
                logging.DEBUG if verbose >= 2 else logging.INFO,
                logging.INFO if verbose >= 2 else logging.WARNING,
                progress=True,
            )
        )
        handlers.append(fh)
    for h in handlers:
        h.setFormatter(logging.Formatter(FORMAT))
        h.addFilter(_redact_urls)
        h._negvocab = True  # type: ignore[attr-defined]
        root.addHandler(h)
    # records are made only where some handler wants them: other libraries' INFO only with -vv,
    # negvocab's INFO with -v or a log file, progress lines unless -q (or with a log file)
    ours_made = min(ours, logging.DEBUG if verbose >= 2 else logging.INFO) if log_file is not None else ours
    levels = {
        "": others if log_file is None else min(others, logging.WARNING),
        _OURS: ours_made,
        _PROGRESS: logging.INFO if (log_file is not None or not quiet) else logging.ERROR,
    }
    for name, level in levels.items():  # only ever lowered: a caller's own (finer) levels stay
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() > level:
            _saved.setdefault(name, logger.level)
            logger.setLevel(level)


_saved: dict[str, int] = {}


def restore() -> None:
    """Remove negvocab's handlers and put the logger levels back (when a command returns, so that
    an in-process caller's logging is as it was)."""
    root = logging.getLogger()
    for h in [h for h in root.handlers if getattr(h, "_negvocab", False)]:
        root.removeHandler(h)
        h.close()
    while _saved:
        name, level = _saved.popitem()
        logging.getLogger(name).setLevel(level)


def _settings(ctx: typer.Context) -> dict[str, Any]:
    return ctx.find_root().meta.setdefault(_META, {"verbose": 0, "quiet": False, "log_file": None})


def is_quiet(ctx: typer.Context) -> bool:
    """Whether -q was given, before the command's name or after it (a command prints less too)."""
    return bool(_settings(ctx)["quiet"])


def verbosity(ctx: typer.Context) -> int:
    """How many -v were given, before the command's name or after it (a command may print more too)."""
    return int(_settings(ctx)["verbose"])


def _set(name: str) -> Any:
    def callback(ctx: typer.Context, value: Any) -> Any:
        s = _settings(ctx)
        if name == "verbose":
            s["verbose"] = max(s["verbose"], int(value or 0))
        elif name == "quiet":
            s["quiet"] = s["quiet"] or bool(value)
        elif value is not None:
            s["log_file"] = value
        # ctx.meta is shared by nested contexts: count this command's options apart
        seen = ctx.meta.setdefault(f"{_MARK}:{id(ctx)}", set())  # ctx.meta takes str keys
        seen.add(name)
        if seen >= getattr(ctx.command, _MARK, set()):  # all of them parsed: apply once per command
            try:
                configure(s["verbose"], s["quiet"], s["log_file"])
            except OSError as e:  # one line, as any bad option
                raise typer.BadParameter(
                    f"cannot write the log file {s['log_file']}: {e.strerror or e}", param_hint="--log-file"
                ) from None
        return value

    return callback


def options() -> list[Any]:
    """Fresh ``-v``, ``-q`` and ``--log-file`` options for one command (built by typer from a probe
    command, so they are typer's own option objects)."""
    probe = typer.Typer(add_completion=False)

    @probe.command()
    def _probe(
        verbose: Annotated[
            int,
            typer.Option(
                "--verbose",
                "-v",
                count=True,
                expose_value=False,
                callback=_set("verbose"),
                help="More detail: -v negvocab's progress and timings, -vv debug output (also other libraries' INFO).",
            ),
        ] = 0,
        quiet: Annotated[
            bool,
            typer.Option(
                "--quiet",
                "-q",
                expose_value=False,
                callback=_set("quiet"),
                help="Errors only: no warnings, no progress lines.",
            ),
        ] = False,
        log_file: Annotated[
            Path | None,
            typer.Option(
                "--log-file",
                expose_value=False,
                callback=_set("log_file"),
                metavar="PATH",
                dir_okay=False,
                help="Also append the log (INFO, progress lines, warnings) to PATH, whatever -q says.",
            ),
        ] = None,
    ) -> None:
        pass

    return [p for p in typer.main.get_command(probe).params if p.name in ("verbose", "quiet", "log_file")]


def _no_flag_metavar(param: Any) -> Any:
    """A flag or counter takes no value: show no ``<bool>``/``<int>`` after it in the help."""
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        param.metavar = ""
        param.show_default = False
    return param


def add_options(command: Any) -> Any:
    """Give ``command`` the logging options (once); a command with an option of the same flag keeps
    its own (none does: ``-q`` means :func:`is_quiet` everywhere, wherever it is placed).
    Its flags (and ``--help``) lose the ``<bool>`` metavar, which suggested they take a value."""
    if getattr(command, _MARK, None) is None:
        taken = {o for p in command.params for o in getattr(p, "opts", [])}
        added = [o for o in options() if not set(o.opts) & taken]
        command.params.extend(added)
        for p in command.params:
            _no_flag_metavar(p)
        help_option = command.get_help_option
        command.get_help_option = lambda ctx: (lambda o: o and _no_flag_metavar(o))(help_option(ctx))
        setattr(command, _MARK, {o.name for o in added})
    return command
