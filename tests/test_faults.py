"""Fault injection, table-driven: each case a command, the exit status, a fragment of the one-line
message, and the files that must come out unchanged. Cases that need a model live beside the
feature's tests (tests/report/test_results.py, tests/vlm/test_disk_full.py); these run in-process
without loading one, so the table stays fast."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from negvocab.cli import app

EARLIER = "an earlier run's file\n"


@dataclass(frozen=True)
class Case:
    name: str
    files: dict[str, str]  # relative path -> text, made before the command
    args: list[str]  # "{t}" is the temporary folder
    exit: int
    message: str  # in stderr (exit != 0) or in the whole output
    unchanged: tuple[str, ...] = ()
    inject: Callable[[pytest.MonkeyPatch, Path], None] | None = None


def _full_disk(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
    def full(self: Path, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)


def _locked(folder: str) -> Callable[[pytest.MonkeyPatch, Path], None]:
    """Another run holds ``folder`` (a lock on its own descriptor, as a second process would)."""

    def hold(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
        (tmp / folder).mkdir(exist_ok=True)
        fd = os.open(tmp / folder, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        monkeypatch.setattr(_locked, f"fd_{fd}", fd, raising=False)  # closed (unlocked) by the test

    return hold


def _null_device(monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
    try:
        os.mknod(tmp / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("mknod needs root")


V = {"v.txt": "sofa\nlamp\n"}
IMAGES = ["--id", "{t}", "--ood", "{t}"]
EXPORT = json.dumps({"format": "negvocab-embeddings/1", "complete": True})

CASES = [
    # one overwrite rule for every command that writes
    Case(
        "merge over an existing file",
        {**V, "u.json": EARLIER},
        ["merge", "{t}/v.txt", "-o", "{t}/u.json"],
        2,
        "u.json exists; give --overwrite",
        ("u.json",),
    ),
    Case(
        "classes over an existing file",
        {"c.tsv": EARLIER},
        ["classes", "-o", "{t}/c.tsv"],
        2,
        "exists; give --overwrite",
        ("c.tsv",),
    ),
    Case(
        "filter over an existing report",
        {**V, "r.json": EARLIER},
        ["filter", "{t}/v.txt", "-o", "{t}/f.json", "--removed", "{t}/r.json"],
        2,
        "r.json exists",
        ("r.json",),
    ),
    Case(
        "build oracle over an existing file",
        {"labels.txt": "kite\n", "o.json": EARLIER},
        ["build", "oracle", "--labels", "{t}/labels.txt", "-o", "{t}/o.json"],
        2,
        "o.json exists",
        ("o.json",),
    ),
    Case(
        "build wordnet over an existing file",
        {"w.json": EARLIER},
        ["build", "wordnet", "--random-weights", "-o", "{t}/w.json"],
        2,
        "w.json exists",
        ("w.json",),
    ),
    Case(
        "embed over a finished export",
        {**V, "e/manifest.json": EXPORT},
        ["embed", "--vocab", "{t}/v.txt", "-o", "{t}/e"],
        2,
        "manifest.json exists; give --overwrite",
        ("e/manifest.json",),
    ),
    Case(
        "demo over an earlier demo",
        {"d/vocab.json": EARLIER},
        ["demo", "--random-weights", "-o", "{t}/d"],
        2,
        "vocab.json exists",
        ("d/vocab.json",),
    ),
    Case(
        "report over an earlier report",
        {"r/results.json": "{}", "r/report.html": EARLIER},
        ["report", "{t}/r"],
        2,
        "report.html exists; give --overwrite",
        ("r/report.html",),
    ),
    Case(
        "build siblings over an existing file",
        {"s.json": EARLIER},
        ["build", "siblings", "--random-weights", "-o", "{t}/s.json"],
        2,
        "s.json exists",
        ("s.json",),
    ),
    Case(
        "filter over its input",
        V,
        ["filter", "{t}/v.txt", "-o", "{t}/v.txt", "--overwrite"],
        2,
        "it is an input of this command",
        ("v.txt",),
    ),
    # results folders: any earlier output, a folder another run holds, a stream
    Case(
        "score over an earlier scores.csv",
        {**V, "r/scores.csv": EARLIER},
        ["score", *IMAGES, "--vocab", "{t}/v.txt", "-o", "{t}/r"],
        2,
        "holds the results of an earlier run (scores.csv)",
        ("r/scores.csv",),
    ),
    Case(
        "sweep over an earlier sweep.png",
        {**V, "s/sweep.png": EARLIER},
        ["sweep", *IMAGES, "--vocab", "{t}/v.txt", "--sizes", "1", "-o", "{t}/s"],
        2,
        "holds the results of an earlier run (sweep.png)",
        ("s/sweep.png",),
    ),
    Case(
        "score into a folder another run holds",
        {**V, "r/notes.txt": EARLIER},
        ["score", *IMAGES, "--vocab", "{t}/v.txt", "-o", "{t}/r", "--overwrite"],
        2,
        "is being written by another negvocab run",
        ("r/notes.txt",),
        _locked("r"),
    ),
    Case(
        "score to stdout",
        V,
        ["score", *IMAGES, "--vocab", "{t}/v.txt", "-o", "-"],
        2,
        "-o -: this command writes a folder of files",
    ),
    Case("embed to stdout", V, ["embed", "--vocab", "{t}/v.txt", "-o", "-"], 2, "-o -: embed writes a folder of files"),
    # streams are written in place and need no --overwrite
    Case(
        "merge to a device",
        V,
        ["merge", "{t}/v.txt", "-o", "{t}/null"],
        0,
        "merged v.txt 2 (file) -> 2 unique labels",
        (),
        _null_device,
    ),
    Case("merge to stdout", V, ["merge", "{t}/v.txt", "-o", "-"], 0, '"labels": [', ("v.txt",)),
    # a full disk: one line, the earlier output intact
    Case(
        "merge on a full disk",
        {**V, "u.json": EARLIER},
        ["merge", "{t}/v.txt", "-o", "{t}/u.json", "--overwrite"],
        2,
        "the disk is full (",
        ("u.json",),
        _full_disk,
    ),
    # wrong data
    Case(
        "labels as a JSON string",
        {"s.json": '{"labels": "umbrella"}'},
        ["merge", "{t}/s.json", "-o", "{t}/m.json"],
        2,
        "'labels' must be a JSON list of strings, got str",
        ("s.json",),
    ),
    Case(
        "a NUL label", {"n.txt": "sofa\n\x00\n"}, ["info", "{t}/n.txt"], 2, "label 2 '\\x00' holds a control character"
    ),
    Case(
        "a 10,000-character label",
        {"l.txt": "x" * 10_000 + "\n"},
        ["info", "{t}/l.txt"],
        2,
        "is 10,000 characters long (at most 200)",
    ),
    Case(
        "a JSON label with a newline",
        {"j.json": '["sofa", "two\\nlines"]'},
        ["merge", "{t}/j.json", "-o", "{t}/m.json"],
        2,
        "holds a control character ('\\n')",
    ),
    # bad arguments: one line before any model is loaded
    Case(
        "score with a negative seed",
        V,
        ["score", *IMAGES, "--vocab", "{t}/v.txt", "--grouping", "random", "--seed", "-1", "-o", "{t}/r"],
        2,
        "--seed must be >= 0, got -1",
    ),
    Case(
        "sweep with a negative seed",
        V,
        [
            "sweep",
            *IMAGES,
            "--vocab",
            "{t}/v.txt",
            "--sizes",
            "1",
            "--grouping",
            "random",
            "--seed",
            "-1",
            "-o",
            "{t}/s",
        ],
        2,
        "--seed must be >= 0, got -1",
    ),
    # guards that cannot be bypassed (issue 23): set names, empty paths, the transductive check
    Case(
        "score with an empty --ood path",
        V,
        ["score", "--id", "{t}", "--ood", "a=", "--vocab", "{t}/v.txt", "-o", "{t}/r"],
        2,
        "--ood 'a=': an empty path",
    ),
    Case(
        "sweep with an empty --ood path",
        V,
        ["sweep", "--id", "{t}", "--ood", "a= ", "--vocab", "{t}/v.txt", "--sizes", "1", "-o", "{t}/s"],
        2,
        "--ood 'a= ': an empty path",
    ),
    Case(
        "coverage with an empty --ood path",
        V,
        ["coverage", "--id", "{t}", "--ood", "a=", "--vocab", "{t}/v.txt", "-o", "{t}/c"],
        2,
        "--ood 'a=': an empty path",
    ),
    Case(
        "score with an empty --id",
        V,
        ["score", "--id", "", "--ood", "{t}", "--vocab", "{t}/v.txt", "-o", "{t}/r"],
        2,
        "Invalid value for '--id': an empty path",
    ),
    Case(
        "score with two OOD sets of one name",
        V,
        ["score", "--id", "{t}", "--ood", "a={t}", "--ood", "a={t}/x", "--vocab", "{t}/v.txt", "-o", "{t}/r"],
        2,
        "two OOD sets are named 'a'",
    ),
    Case(
        "coverage with two OOD sets of one name",
        V,
        ["coverage", "--id", "{t}", "--ood", "x={t}", "--ood", "{t}/x", "--vocab", "{t}/v.txt", "-o", "{t}/c"],
        2,
        "two OOD sets are named 'x'",
    ),
    Case(
        "mined with an empty --images",
        {},
        ["build", "mined", "--random-weights", "--images", "", "-o", "{t}/m.json"],
        2,
        "Invalid value for '--images': an empty path",
    ),
    Case(
        "mined with an empty --ood path",
        {"s/a.png": "x"},
        ["build", "mined", "--random-weights", "--images", "{t}/s", "--ood", "n=", "-o", "{t}/m.json"],
        2,
        "--ood 'n=': an empty path",
    ),
    Case(
        "mined with two OOD sets of one name",
        {"s/a.png": "x"},
        [
            "build",
            "mined",
            "--random-weights",
            "--images",
            "{t}/s",
            "--ood",
            "n={t}/s",
            "--ood",
            "n={t}",
            "-o",
            "{t}/m.json",
        ],
        2,
        "two OOD sets are named 'n'",
    ),
    Case(
        "mined with --threshold nan",
        {"s/a.png": "x"},
        ["build", "mined", "--random-weights", "--images", "{t}/s", "--threshold", "nan", "-o", "{t}/m.json"],
        2,
        "--threshold = nan: must be a finite ID similarity",
    ),
    Case(
        "filter with a bogus wnid",
        {**V, "ids.txt": "n01440764\nn0144O764\n"},
        ["filter", "{t}/v.txt", "-o", "{t}/f.json", "--id-classes", "{t}/ids.txt"],
        2,
        "line 2: 'n0144O764' is not a wnid (n and 8 digits",
    ),
    Case(
        "an image list leaving its root",
        {"list.txt": "../../../../../../etc/passwd\n"},
        ["score", "--id", "{t}/list.txt", "--ood", "{t}/list.txt", "--method", "mcm", "-o", "{t}/r"],
        2,
        "the folder the list's paths resolve against",
    ),
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault(case: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for rel, text in case.files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    before = {rel: _digest(tmp_path / rel) for rel in case.unchanged}
    monkeypatch.chdir(tmp_path)
    if case.inject is not None:
        case.inject(monkeypatch, tmp_path)
    try:
        r = CliRunner().invoke(app, [a.replace("{t}", str(tmp_path)) for a in case.args])
    finally:
        monkeypatch.undo()
        for name in [n for n in vars(_locked) if n.startswith("fd_")]:
            os.close(getattr(_locked, name))
            delattr(_locked, name)
    assert r.exit_code == case.exit, (r.exit_code, r.output)
    if case.exit:
        assert case.message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "Traceback" not in r.output
    else:
        assert case.message in r.output, r.output
    assert {rel: _digest(tmp_path / rel) for rel in case.unchanged} == before
    assert not (tmp_path / "-").exists()  # "-" is never a file
