"""Results folders: claimed for the run's lifetime, written whole, any earlier output protected."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.core.outdir import claim_folder

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]
HOLD = (
    "import sys; from negvocab.core.outdir import claim_folder; claim_folder(sys.argv[1], "
    "(), overwrite=True); print('held', flush=True); sys.stdin.read()"
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _score_args(tiny, model_args, vocab: str, out: Path) -> list[str]:
    return [
        "score",
        "--id",
        str(tiny / "id"),
        "--ood",
        str(tiny / "ood"),
        "--vocab",
        str(tiny / vocab),
        "--groups",
        "2",
        "--n-boot",
        "0",
        "--explain",
        "1",
        "-o",
        str(out),
        *model_args,
    ]


def test_a_folder_another_run_holds_is_refused_at_once(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        r = CliRunner().invoke(app, _score_args(tiny, model_args, "negA.txt", out))
        assert (
            r.exit_code == 2
            and r.stderr.strip()
            == f"error: {out} is being written by another negvocab run; wait for it to finish or give another -o"
        )
        assert list(out.iterdir()) == []
    finally:
        holder.communicate("", timeout=30)
    r = CliRunner().invoke(app, _score_args(tiny, model_args, "negA.txt", out))  # released when that run ends
    assert r.exit_code == 0, r.output


def test_two_concurrent_score_runs_one_wins_whole_the_other_refuses(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    procs = [
        subprocess.Popen(
            [*CLI, *_score_args(tiny, model_args, v, out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        for v in ("negA.txt", "negB.txt")
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    codes = sorted(rc for rc, _ in results)
    assert codes == [0, 2], results
    loser = next(err for rc, err in results if rc == 2)
    assert ("being written by another negvocab run" in loser or "holds the results of an earlier run" in loser) and len(
        loser.strip().splitlines()
    ) == 1
    winner = json.loads((out / "results.json").read_text())["rows"][0]["vocabulary"]
    # every file is the winner's: the table, the per-image scores and the explanations
    assert {r["vocabulary"] for r in csv.DictReader((out / "results.csv").open())} == {winner}
    assert next(csv.DictReader((out / "scores.csv").open())).keys() >= {f"neglabel@{winner}"}
    assert list(json.loads((out / "explanations.json").read_text())["vocabularies"]) == [winner]
    assert sorted(p.name for p in out.iterdir()) == [
        "explanations.json",
        "report.html",
        "results.csv",
        "results.json",
        "scores.csv",
        "scores.npz",
    ]


def test_any_earlier_output_file_is_protected_not_only_results_json(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "scores.csv").write_text("an earlier run's scores\n")
    r = CliRunner().invoke(app, _score_args(tiny, model_args, "negA.txt", out))
    assert (
        r.exit_code == 2
        and "holds the results of an earlier run (scores.csv); give another -o, or --overwrite" in r.stderr
    )
    assert (out / "scores.csv").read_text() == "an earlier run's scores\n"
    (out / "notes.txt").write_text("mine")
    r = CliRunner().invoke(app, [*_score_args(tiny, model_args, "negA.txt", out), "--overwrite"])
    assert r.exit_code == 0, r.output
    assert (out / "notes.txt").read_text() == "mine" and "neglabel@negA" in (out / "scores.csv").read_text()


#: claims a folder, forks a child that lives on (as an image loader's worker does), kills itself
FORK_AND_DIE = """
import os, signal, sys, time
from negvocab.core.outdir import claim_folder
claim_folder(sys.argv[1], (), overwrite=True)
pid = os.fork()
if pid == 0:  # off the captured output (the caller waits for it to close), then lives on
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    time.sleep(120)
    os._exit(0)
print(pid, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_run_frees_its_folder_though_a_forked_worker_lives_on(tmp_path):
    """The lock dies with the run: a forked child (a DataLoader worker) closes its copy, so the
    folder of a run killed with SIGKILL is free at once, with that child still alive."""
    out = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-c", FORK_AND_DIE, str(out)], capture_output=True, text=True, env=_env())
    child = int(proc.stdout.strip())
    try:
        os.kill(child, 0)  # still alive, holding whatever it inherited (ProcessLookupError if not)
        claim = claim_folder(out, (), overwrite=True)  # InputError if the dead run's lock were still held
        assert claim.fd is not None and out.is_dir()
        claim.release()
    finally:
        os.kill(child, signal.SIGKILL)


#: claims a relative folder, releases it from another directory, then forks with the descriptor's
#: number reused (as a DataLoader's pipe reuses it): the child must leave that descriptor open
RELEASE_ELSEWHERE_THEN_FORK = """
import os, sys
from negvocab.core import outdir
os.chdir(sys.argv[1])
claim = outdir.claim_folder("res", (), overwrite=True)
fd = claim.fd
os.chdir(os.path.dirname(sys.argv[1]))
claim.release()
assert not outdir._held, outdir._held
r, w = os.pipe()
assert fd in (r, w), (fd, r, w)  # the released number is reused at once
pid = os.fork()
if pid == 0:
    try:
        os.write(w, b"alive")
        os._exit(0)
    except OSError:
        os._exit(3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), os.read(r, 5).decode())
"""


def test_a_released_claim_closes_nothing_in_a_forked_child(tmp_path):
    """A claim released after the working directory changed is forgotten all the same: a child
    forked later (a DataLoader worker) does not close the descriptor that took its number. Before
    the fix such a child closed its loader's pipe and died ("DataLoader worker exited unexpectedly")."""
    (tmp_path / "cwd").mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", RELEASE_ELSEWHERE_THEN_FORK, str(tmp_path / "cwd")],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "alive"]


def test_a_killed_writes_temporary_files_go_when_the_folder_is_claimed(tmp_path):
    out = tmp_path / "res"
    (out / "cells").mkdir(parents=True)
    left = [out / ".results.json.ab12cd.tmp", out / "cells" / ".x.json.ef34.tmp"]
    for p in left:
        p.write_text("half")
    (out / "cells" / "x.json").write_text("{}")
    claim_folder(
        out, ("results.json",), overwrite=True, work_dirs=("cells",)
    ).release()  # its own outputs only (tests/test_outputs.py)
    assert not any(p.exists() for p in left) and (out / "cells" / "x.json").exists()


def test_a_claim_released_from_another_directory_removes_its_own_empty_folder(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b" / "res").mkdir(parents=True)  # another folder of the same relative name
    monkeypatch.chdir(tmp_path / "a")
    claim = claim_folder("res", (), overwrite=False)
    monkeypatch.chdir(tmp_path / "b")
    claim.release()
    assert not (tmp_path / "a" / "res").exists() and (tmp_path / "b" / "res").is_dir()


def test_the_api_shares_this_process_claim_and_refuses_streams(tmp_path):
    claim = claim_folder(tmp_path / "r", ("results.json",), overwrite=False)
    again = claim_folder(tmp_path / "r", ("results.json",), overwrite=False)
    assert again is claim and claim.depth == 2
    again.release()
    claim.release()
    assert not (tmp_path / "r").exists()  # made by the claim, left empty: removed
    from negvocab.core.errors import InputError

    with pytest.raises(InputError, match="writes a folder of files"):
        claim_folder("-", (), overwrite=True)


def test_a_run_killed_while_moving_its_files_in_is_rolled_forward(tmp_path, monkeypatch):
    """After the commit point a kill leaves the folder mid-move; the next claim finishes the moves."""
    import negvocab.core.outdir as outdir

    folder = tmp_path / "res"
    outputs = ("results.json", "results.csv", "scores.csv", "old_only.csv")
    with outdir.staged_folder(folder, outputs, "results.json", overwrite=False) as stage:
        for name in ("results.json", "results.csv", "scores.csv", "old_only.csv"):
            (stage / name).write_text(f"old {name}")
    real_replace, moved = os.replace, []

    def dies_after_one_move(src, dst):
        if Path(src).parent.name == outdir.COMMIT_DIR and moved:
            raise KeyboardInterrupt  # killed here: one file moved in, the rest still pending
        if Path(src).parent.name == outdir.COMMIT_DIR:
            moved.append(Path(dst).name)
        return real_replace(src, dst)

    monkeypatch.setattr(outdir.os, "replace", dies_after_one_move)
    with (
        pytest.raises(KeyboardInterrupt),
        outdir.staged_folder(folder, outputs, "results.json", overwrite=True) as stage,
    ):
        for name in ("results.json", "results.csv", "scores.csv"):
            (stage / name).write_text(f"new {name}")
    monkeypatch.setattr(outdir.os, "replace", real_replace)
    assert moved == ["results.csv"] and not (folder / "results.json").exists()  # mid-move: no marker vouches
    assert (folder / outdir.COMMIT_DIR).is_dir()
    claim = outdir.claim_folder(folder, outputs, overwrite=True)  # the next run rolls the commit forward
    claim.release()
    assert sorted(p.name for p in folder.iterdir()) == ["results.csv", "results.json", "scores.csv"]
    assert all((folder / n).read_text() == f"new {n}" for n in ("results.csv", "results.json", "scores.csv"))


def test_a_run_killed_before_its_commit_point_keeps_the_earlier_run(tmp_path, monkeypatch):
    import negvocab.core.outdir as outdir

    folder = tmp_path / "res"
    outputs = ("results.json", "results.csv")
    with outdir.staged_folder(folder, outputs, "results.json", overwrite=False) as stage:
        for name in outputs:
            (stage / name).write_text(f"old {name}")
    real_replace = os.replace

    def dies_at_commit_point(src, dst):
        if Path(dst).name == outdir.COMMIT_DIR:
            raise KeyboardInterrupt
        return real_replace(src, dst)

    monkeypatch.setattr(outdir.os, "replace", dies_at_commit_point)
    with (
        pytest.raises(KeyboardInterrupt),
        outdir.staged_folder(folder, outputs, "results.json", overwrite=True) as stage,
    ):
        for name in outputs:
            (stage / name).write_text(f"new {name}")
    monkeypatch.undo()
    outdir.claim_folder(folder, outputs, overwrite=True).release()
    assert sorted(p.name for p in folder.iterdir()) == ["results.csv", "results.json"]
    assert all((folder / n).read_text() == f"old {n}" for n in outputs)
