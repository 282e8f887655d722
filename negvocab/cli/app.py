"""The ``negvocab`` Typer application, its ``build`` sub-group and the one place errors are shown.

Command modules (``negvocab.cli.<topic>``) register on :data:`app` / :data:`build_app`; they only
parse options, call the public API and print. Each is imported when one of its commands runs (the
table of :mod:`negvocab.cli.commands`), so ``--help`` and ``--version`` start without numpy or
pydantic. Plug-ins (:mod:`negvocab.core.plugins`) are loaded here,
first, so that their methods' parameters are options of ``score``, ``sweep`` and ``coverage``. A
:class:`~negvocab.core.errors.NegvocabError` raised anywhere below becomes one ``error: ...`` line on
stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, get_args

import typer
from typer.core import TyperCommand, TyperGroup, TyperOption

from negvocab.cli.commands import (
    BUILD_COMMANDS,
    BUILD_HELP,
    COMMANDS,
    builders_known,
    refuse_unknown_choices,
)
from negvocab.cli.logs import add_options as add_log_options
from negvocab.cli.logs import restore as restore_logging
from negvocab.core.errors import InputError, NegvocabError
from negvocab.core.extras import missing_extra
from negvocab.core.plugins import load_plugins
from negvocab.core.progress import forget_kept, kept_work
from negvocab.core.provenance import negvocab_version, set_command

__all__ = [
    "EXIT_USER_ERROR",
    "CommandGroup",
    "app",
    "brackets_kept",
    "build_app",
    "import_build_commands",
    "interrupted_line",
    "refuse_empty_paths",
    "refuse_repeats",
]

EXIT_USER_ERROR = 2

PLUGIN_ERROR: str | None = None  # set by the plug-in load at the end of this module

# click's UsageError, wherever this typer takes click from (typer >= 0.26 vendors it): found through
# the public typer.BadParameter, never a private module of typer.
UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _usage_error(e: Any, where: str) -> None:
    """One line for a bad flag or a missing argument (the help text is already out for a bare group:
    click >= 8.2 raises NoArgsIsHelpError for it, older click exits after printing it)."""
    if type(e).__name__ != "NoArgsIsHelpError":
        path = e.ctx.command_path if e.ctx is not None else where
        typer.echo(f"error: {e.format_message()} (see '{path} --help')", err=True)


def refuse_repeats(command: Any, args: list[str], where: str = "negvocab", *, group: bool = False) -> None:
    """Raise a one-line InputError when an option that takes one value is given more than once.

    Click keeps the last of repeated options silently (``--ood A --ood B`` scored only B); options
    declared as lists (``multiple``) and counters are left alone. Stops at ``--``, and for a
    ``group`` at the sub-command's name (what follows is the sub-command's).
    """
    by_flag = {flag: p for p in command.params if isinstance(p, TyperOption) for flag in (*p.opts, *p.secondary_opts)}
    seen: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        arg, attached = args[i], False
        if arg == "--":
            break
        flag = arg.split("=", 1)[0] if arg.startswith("--") else arg
        param = by_flag.get(flag)
        if group and not arg.startswith("-"):
            break
        if param is None and arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
            param, flag, attached = by_flag.get(arg[:2]), arg[:2], True  # -mViT-B-32
        if param is not None:
            if not (param.multiple or param.count):
                seen.setdefault(param.name or flag, []).append(flag)
            if not (param.is_flag or param.count or attached or "=" in arg):
                i += max(1, param.nargs)  # skip the value, which may itself start with "-"
        i += 1
    for flags in seen.values():
        if len(flags) > 1:
            raise InputError(
                f"option {flags[0]} given {len(flags)} times ({' '.join(flags)}); "
                f"it takes one value, give it once (see '{where} --help')"
            )


def _command_at(group: Any, args: list[str]) -> int | None:
    """Where the command's name is in ``args`` of ``group`` (after the group's own options), or None
    where there is none or an argument before it is not a known option of the group (help, version)."""
    params = [p for p in group.params if isinstance(p, TyperOption)]
    flags = {f: p for p in params for f in (*p.opts, *p.secondary_opts)}
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-"):
            return i
        param = flags.get(arg.split("=", 1)[0]) or flags.get(arg[:2])
        if param is None or param.is_eager:  # unknown (click says so) or --help / --version
            return None
        takes_value = not (param.is_flag or param.count) and "=" not in arg and arg in flags
        i += 2 if takes_value else 1
    return None


EMPTY_PATH = "an empty path (an unset shell variable?); give a file or folder"


def refuse_empty_paths(command: Any) -> None:
    """Every path argument and option of ``command`` refuses an empty or blank value (``''``, an
    unset shell variable) instead of reading it as ``.``, the working folder: one rule for all."""
    for param in command.params:
        if not _takes_paths(param) or getattr(param, "_refuses_empty", False):
            continue
        process = param.process_value

        def checked(ctx: Any, value: Any, _process: Any = process, _param: Any = param) -> Any:
            values = value if isinstance(value, list | tuple) else [value]
            if any(isinstance(v, str) and not v.strip() for v in values):
                raise typer.BadParameter(EMPTY_PATH, ctx=ctx, param=_param)
            return _process(ctx, value)

        param.process_value = checked
        param._refuses_empty = True


def _takes_paths(param: Any) -> bool:
    """Whether a parameter takes a path (or a list of paths): click's ``path`` type, or (typer >= 0.26)
    an annotation that is or holds ``Path``."""
    if getattr(getattr(param, "type", None), "name", None) == "path":
        return True
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    pending = [annotation]
    while pending:
        kind = pending.pop()
        if kind is Path:
            return True
        pending.extend(get_args(kind))
    return False


def _rich_markup(command: Any) -> bool:
    """Whether typer reads ``command``'s help texts as Rich markup: Rich is there (typer >= 0.17 says so in
    ``typer.core.HAS_RICH``; 0.16 holds ``typer.core.rich``, None without it) and the command's markup
    mode is ``"rich"`` (typer 0.16 leaves a default placeholder there and writes the texts as they are)."""
    has = getattr(typer.core, "HAS_RICH", None)
    rich = bool(has) if has is not None else getattr(typer.core, "rich", None) is not None
    return rich and getattr(command, "rich_markup_mode", "rich") == "rich"


@contextmanager
def brackets_kept(*commands: Any) -> Iterator[None]:
    """While a help is written: the help texts of ``commands`` and of their parameters with Rich markup
    escaped, so square brackets ("edit its [id] and [ood] paths", "[published: PAPER]") show as written
    instead of being read as style tags and dropped; each text is as declared again afterwards."""
    saved: list[tuple[Any, str, str]] = []
    if commands and _rich_markup(commands[0]):  # else the texts are written as they are
        from rich.markup import escape

        objs = {id(o): o for c in commands if c is not None for o in (c, *getattr(c, "params", ()))}
        for obj in objs.values():
            for attr in ("help", "short_help", "epilog"):
                text = getattr(obj, attr, None)
                if isinstance(text, str):
                    saved.append((obj, attr, text))
                    setattr(obj, attr, escape(text))
    try:
        yield
    finally:
        for obj, attr, text in reversed(saved):
            setattr(obj, attr, text)


def _keep_brackets(command: Any) -> None:
    """``command``'s help written with its square brackets kept (:func:`brackets_kept`); idempotent."""
    if getattr(command, "_brackets_kept", False):
        return
    write = command.format_help

    def format_help(ctx: Any, formatter: Any) -> None:
        with brackets_kept(command):
            write(ctx, formatter)

    command.format_help = format_help
    command._brackets_kept = True


def import_build_commands() -> None:
    """Import the hand-written ``build`` commands, then generate one for every other registered
    builder (:func:`negvocab.cli.build_generic.add_builder_commands`); idempotent."""
    importlib.import_module("negvocab.cli.build_generic").add_builder_commands(plugins=False)


def interrupted_line() -> str:
    """The Ctrl-C line: "re-run to resume" with what was kept, only when something was."""
    kept = kept_work()
    if not kept:
        return "interrupted; nothing was kept (no work had finished): a re-run starts over"
    held = ", ".join(f"{n:,} {what}" for what, n in kept.items())
    return f"interrupted; re-run the same command to resume (kept: {held})"


class CommandGroup(TyperGroup):
    """Turns user-facing errors into one line on stderr and a non-zero exit; refuses repeated
    single-value options (:func:`refuse_repeats`) for every command; gives the group and every
    command under it ``-v``/``-q``/``--log-file`` (:mod:`negvocab.cli.logs`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_log_options(self)
        refuse_empty_paths(self)

    _listing = False  # while the group's help is written: commands not imported yet are listed from the table

    def list_commands(self, ctx: Any) -> list[str]:
        """The root group: commands added by plug-ins, then the table's (imported or not); ``build``:
        its commands, imported (their help is generated from the builder registry)."""
        if self.name == BUILD:
            self._import_build()
        names = super().list_commands(ctx)
        if self.name != ROOT:
            return names
        return [*(n for n in names if n not in COMMANDS), *COMMANDS]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name) or self._import_command(cmd_name)
        if cmd is None or getattr(cmd, "_listed", False):
            return cmd
        if not getattr(cmd, "epilog", None) and not isinstance(cmd, TyperGroup):
            from negvocab.cli.examples import epilog  # deferred: the builder registry imports pydantic

            parent = " ".join(ctx.command_path.split()[1:])  # "" at the top, "build" under negvocab build
            cmd.epilog = epilog(f"{parent} {cmd_name}".strip())
        cmd = add_log_options(cmd)
        refuse_empty_paths(cmd)
        if not isinstance(cmd, TyperGroup):  # a group keeps its own (format_help below)
            _keep_brackets(cmd)
        return cmd

    def _import_command(self, name: str) -> Any:
        """The command ``name`` of the table, its module imported now (None if there is no such command).
        While the group's help is written, a stand-in with the table's help (nothing imported)."""
        if self.name == ROOT and name in COMMANDS:
            if self._listing:  # one stand-in a command, so that its help is escaped where it is written
                stand_ins = self.__dict__.setdefault("_stand_ins", {})
                if name not in stand_ins:
                    stand_ins[name] = TyperCommand(name, help=COMMANDS[name].help)
                    stand_ins[name]._listed = True
                return stand_ins[name]
            importlib.import_module(COMMANDS[name].module)  # registers its commands on app
            cmd = _click_group(app).commands.get(name)
        elif self.name == BUILD and (name in BUILD_COMMANDS or not builders_known()):
            self._import_build()
            cmd = self.commands.get(name)
        else:
            return None
        if cmd is not None:
            self.add_command(cmd, name)
        return cmd

    def _import_build(self) -> None:
        """Give the ``build`` group every build command (:func:`import_build_commands`)."""
        if getattr(self, "_imported", False):
            return
        import_build_commands()
        for name, cmd in _click_group(build_app).commands.items():
            self.commands.setdefault(name, cmd)
        self._imported = True

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            listed = [self.get_command(ctx, name) for name in self.list_commands(ctx)]
            with brackets_kept(self, *listed):
                super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, cmd, rest = super().resolve_command(ctx, args)
        if cmd is not None and not isinstance(cmd, TyperGroup):
            refuse_repeats(cmd, rest, f"{ctx.command_path} {name}")
        return name, cmd, rest

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        set_command(["negvocab", *(sys.argv[1:] if args is None else args)])  # recorded in results files (masked)
        forget_kept()  # what this command keeps for a re-run, said if it is interrupted
        try:
            return super().main(args, *a, **kw)
        finally:
            set_command(None)

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        if parent is None and PLUGIN_ERROR is not None:
            if not args or any(a in ("--help", "-h", "--version") for a in args):  # help still helps
                typer.echo(f"warning: {PLUGIN_ERROR}; what it registers is missing below", err=True)
            else:
                typer.echo(f"error: {PLUGIN_ERROR}", err=True)
                raise typer.Exit(EXIT_USER_ERROR)
        try:
            refuse_repeats(self, args, info_name or "negvocab", group=True)  # the group's own options
            at = _command_at(self, args) if self.name == ROOT and parent is None else None
            if at is not None:  # an unknown --method / --convention: before the command (and numpy) is imported
                refuse_unknown_choices(args[at], args[at + 1 :])
        except NegvocabError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(EXIT_USER_ERROR) from None
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except UsageError as e:  # the top-level options themselves (negvocab --bogus)
            _usage_error(e, info_name or "negvocab")
            raise typer.Exit(EXIT_USER_ERROR) from None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """A bare group prints its help and exits 2 with every click (older click exits 0)."""
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            typer.echo(ctx.get_help())
            ctx.exit(EXIT_USER_ERROR)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:  # click's Context: typer's own or click's, by version (as above)
        try:
            return super().invoke(ctx)
        except NegvocabError as e:
            from negvocab.cli.flags import cli_message  # deferred: it reads the method registry (numpy)

            typer.echo(f"error: {cli_message(e)}", err=True)  # the library's parameter names as flags
            ctx.exit(EXIT_USER_ERROR)
        except UsageError as e:  # a sub-command's bad flag or missing argument: one line too
            sub = f" {ctx.invoked_subcommand}" if ctx.invoked_subcommand else ""
            _usage_error(e, ctx.command_path + sub)
            ctx.exit(EXIT_USER_ERROR)
        except ModuleNotFoundError as e:  # an optional package (torch, openai, ...): the extra to install
            missing = missing_extra(e)
            if missing is None:
                raise
            typer.echo(f"error: {missing}", err=True)
            ctx.exit(EXIT_USER_ERROR)
        except KeyboardInterrupt:
            typer.echo(interrupted_line(), err=True)
            ctx.exit(130)
        finally:
            if ctx.parent is None:  # the whole command is done: folders released, logging as it was before
                outputs = sys.modules.get("negvocab.cli.outputs")  # a folder is claimed only once it is imported
                if outputs is not None:
                    outputs.release_claims()
                restore_logging()


ROOT, BUILD = "negvocab", "build"  # the groups whose commands are imported on first use


def _click_group(group: typer.Typer) -> TyperGroup:
    """The click group typer builds for ``group`` (typer types it as any command)."""
    built = typer.main.get_command(group)
    assert isinstance(built, TyperGroup)  # a CommandGroup: app and build_app have several commands
    return built


app = typer.Typer(
    cls=CommandGroup,
    name=ROOT,
    help="Negative-label vocabularies for zero-shot OOD detection.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish, PowerShell)
    pretty_exceptions_enable=False,
)
build_app = typer.Typer(
    cls=CommandGroup,
    help=BUILD_HELP,  # set again from the builder registry when the build commands are imported
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(build_app, name=BUILD)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(negvocab_version())
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Print the version and exit.", is_eager=True, callback=_print_version
    ),
) -> None:
    """Logging is set up by the -v/-q/--log-file options of each command (negvocab.cli.logs)."""


# plug-ins ($NEGVOCAB_PLUGINS, the "negvocab.core.plugins" entry points) register their methods before the
# commands read the registry for their options; a plug-in that fails is one line when a command runs.
# Loaded last, so that a plug-in may import this module (its `app`, to add a command of its own).
try:
    load_plugins()
except NegvocabError as _e:
    PLUGIN_ERROR = str(_e)
