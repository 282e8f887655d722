"""Feedback on long runs: progress lines in logs, -v/-q/--log-file on every command, no import noise."""

from __future__ import annotations

import io
import logging

import pytest
from typer.testing import CliRunner

from negvocab.cli import app, load_commands, logs
from negvocab.core import progress as P

runner = CliRunner()


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _restore():
    yield
    logs.restore()


def _emit() -> None:
    logging.getLogger("negvocab.builders.wordnet").info("ours-info")
    logging.getLogger("negvocab.vlm.text").debug("ours-debug")
    logging.getLogger("faiss.loader").info("faiss-import-noise")
    logging.getLogger("open_clip").warning("theirs-warning")
    logging.getLogger("negvocab.core.progress").info("encoding 10 labels: 5/10 prompts")
    logging.getLogger("negvocab.scoring").error("ours-error")


@pytest.mark.parametrize(
    ("verbose", "quiet", "tty", "shown", "hidden"),
    [
        (
            0,
            False,
            False,
            {"theirs-warning", "encoding 10", "ours-error"},
            {"ours-info", "faiss-import-noise", "ours-debug"},
        ),
        (0, False, True, {"theirs-warning", "ours-error"}, {"encoding 10", "ours-info"}),  # the bar shows it
        (1, False, False, {"ours-info", "encoding 10", "theirs-warning"}, {"faiss-import-noise", "ours-debug"}),
        (2, False, False, {"ours-info", "ours-debug", "faiss-import-noise"}, set()),
        (1, True, False, {"ours-error"}, {"ours-info", "encoding 10", "theirs-warning"}),
    ],
)
def test_console_levels(verbose, quiet, tty, shown, hidden):
    stream = _Tty() if tty else io.StringIO()
    logs.configure(verbose, quiet, stderr=stream)
    _emit()
    text = stream.getvalue()
    assert all(s in text for s in shown), text
    assert not any(h in text for h in hidden), text


def test_log_file_keeps_info_and_progress_even_when_quiet(tmp_path):
    stream, path = io.StringIO(), tmp_path / "logs" / "run.log"
    logs.configure(0, True, path, stderr=stream)
    _emit()
    logging.getLogger("negvocab.llm.client").info("GET https://user:secret@host/v1?key=abc")
    logs.restore()
    text = path.read_text()
    for s in ("ours-info", "encoding 10", "theirs-warning", "ours-error"):
        assert s in text
    assert "faiss-import-noise" not in text and "ours-debug" not in text
    assert "secret" not in text and "key=abc" not in text  # credentials masked in the file too
    assert stream.getvalue().strip().endswith("ours-error")  # -q: errors only on stderr


def test_restore_puts_levels_back():
    before = {n: logging.getLogger(n).level for n in ("", "negvocab", "negvocab.core.progress")}
    handlers = list(logging.getLogger().handlers)
    logs.configure(2, False, stderr=io.StringIO())
    logs.restore()
    assert {n: logging.getLogger(n).level for n in before} == before
    assert logging.getLogger().handlers == handlers


def test_every_command_takes_v_q_and_log_file():
    from negvocab.cli.app import add_log_options  # noqa: F401 (the hook is in place)

    load_commands()  # every command, not only those imported so far
    group = __import__("typer").main.get_command(app)
    ctx = group.make_context("negvocab", ["classes"], resilient_parsing=True)
    todo = [(group, ctx, "negvocab")]
    seen = 0
    while todo:
        grp, gctx, path = todo.pop()
        for name in grp.list_commands(gctx):
            cmd = grp.get_command(gctx, name)
            opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
            assert {"-v", "--verbose", "--log-file"} <= opts, f"{path} {name}"
            assert "-q" in opts or "--quiet" in opts, f"{path} {name}"
            seen += 1
            if hasattr(cmd, "list_commands"):
                todo.append((cmd, gctx, f"{path} {name}"))
    assert seen >= 12


def test_flags_show_no_value_in_help():
    r = runner.invoke(app, ["info", "--help"])
    assert r.exit_code == 0
    assert "<bool>" not in r.output and "<int>" not in r.output.split("--verbose")[1].splitlines()[0]


def test_v_after_the_command_and_log_file(tmp_path, monkeypatch):
    import negvocab.cli.labels as imagenet  # where the command looks the function up

    real = imagenet.imagenet1k

    def logged():  # negvocab's own INFO line, and an import-noise INFO line of another library
        logging.getLogger("negvocab.labels.imagenet").info("ours: the ImageNet-1k classes")
        logging.getLogger("faiss.loader").info("Loading faiss with AVX2 support.")
        return real()

    monkeypatch.setattr(imagenet, "imagenet1k", logged)
    log = tmp_path / "classes.log"
    r = runner.invoke(app, ["classes", "-o", str(tmp_path / "c.tsv"), "--log-file", str(log), "-v"])
    assert r.exit_code == 0, r.output
    assert "ours: the ImageNet-1k classes" in r.stderr and "faiss" not in r.stderr  # -v after the command
    assert "ours: the ImageNet-1k classes" in log.read_text() and "faiss" not in log.read_text()
    r = runner.invoke(app, ["classes", "-o", str(tmp_path / "c2.tsv")])
    assert r.exit_code == 0 and "ours" not in r.stderr and "INFO" not in r.stderr
    r = runner.invoke(app, ["-vv", "classes", "-o", str(tmp_path / "c3.tsv")])
    assert r.exit_code == 0 and "Loading faiss" in r.stderr  # -vv: other libraries' INFO too


def test_an_unwritable_log_file_is_one_line(tmp_path):
    (tmp_path / "f").write_text("")
    for args in (
        ["--log-file", str(tmp_path / "f" / "x.log"), "classes"],
        ["classes", "--log-file", str(tmp_path / "f" / "x.log")],
    ):
        r = runner.invoke(app, args)
        assert r.exit_code == 2 and "cannot write the log file" in r.output and "Traceback" not in r.output, r.output
        assert len(r.output.strip().splitlines()) == 1, r.output


# -- progress -------------------------------------------------------------------------------------
def test_progress_lines_every_interval(caplog):
    t = iter(range(0, 1000, 10)).__next__  # 10 s per call
    with caplog.at_level(logging.INFO, logger="negvocab.core.progress"):
        with P.Progress(12, "encoding 3 labels", "prompt", bar=False, clock=lambda: float(t())) as p:
            for _ in range(12):
                p.update(1)
    lines = [r.getMessage() for r in caplog.records if r.name == "negvocab.core.progress"]
    assert len(lines) == 4 == p.lines  # 120 s in all, one line per 30 s
    assert lines[0] == "encoding 3 labels: 3/12 prompts (25.0%), 0.1 prompts/s, ETA 1m30s"
    assert lines[-1].startswith("encoding 3 labels: 12/12 prompts (100.0%)") and lines[-1].endswith("ETA 0s")


def test_format_duration():
    assert [P.format_duration(s) for s in (0, 59.4, 61, 3600 * 2 + 60 * 5 + 3)] == ["0s", "59s", "1m01s", "2h05m"]


def test_text_encoding_logs_progress_whatever_its_length(monkeypatch, caplog):
    """No size threshold: even a short encoding logs its progress once the interval has passed."""
    from tests.vlm.conftest import make_tiny_vlm

    monkeypatch.setattr(P, "LOG_EVERY_S", 0.0)
    vlm = make_tiny_vlm(cache=False)
    with caplog.at_level(logging.INFO, logger="negvocab.core.progress"):
        vlm.encode_text(["goldfish", "umbrella", "kite"], "single", progress=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "negvocab.core.progress"]
    assert lines and lines[-1].startswith("encoding 3 labels: 3/3 prompts (100.0%)"), lines


def test_no_widget_bar_without_ipywidgets(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    from tqdm.std import tqdm

    assert P._bar_class() is tqdm


def test_quiet_means_the_same_before_and_after_the_command(tmp_path):
    """``negvocab -q filter`` and ``negvocab filter -q``: the summary line only, either way; without -q
    a line per rule first; with -v, before or after, one line per removed label (goldfish and tench are
    ImageNet-1k classes, meadow is not)."""
    vocab = tmp_path / "v.txt"
    vocab.write_text("goldfish\nmeadow\ntench\n", encoding="utf-8")
    outs = {}
    for name, args in {
        "none": ["filter", str(vocab)],
        "before": ["-q", "filter", str(vocab)],
        "after": ["filter", str(vocab), "-q"],
        "verbose_before": ["-v", "filter", str(vocab)],
        "verbose_after": ["filter", str(vocab), "-v"],
    }.items():
        r = runner.invoke(app, [*args, "-o", str(tmp_path / f"{name}.txt")])
        assert r.exit_code == 0, r.output
        outs[name] = r.stdout.replace(name, "X").splitlines()
        assert (tmp_path / f"{name}.txt").read_text(encoding="utf-8").split() == ["meadow"]
        logs.restore()
    assert (
        outs["before"] == outs["after"]
        and len(outs["before"]) == 1
        and outs["before"][0].startswith("removed 2 of 3 labels")
    )
    assert outs["none"] == ["  clean-name/exact: 2, e.g. 'goldfish' (goldfish), 'tench' (tench)", outs["before"][0]]
    for name in ("verbose_before", "verbose_after"):
        assert [ln.split(":")[0] for ln in outs[name][:2]] == ["removed 'goldfish'", "removed 'tench'"]
        assert outs[name][2] == outs["before"][0] and len(outs[name]) == 3
