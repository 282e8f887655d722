"""A grid's reliability (issue 23): a resumed grid equals a clean one file for file, work is keyed by
content, damaged stored files are computed again, the folder follows the output rules, and bad
inputs fail only their own cells."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from tests.grid.conftest import GRID_TOML

#: the conftest grid's [grid] section and first model, one convention, then sets and vocabularies to fill in
SMALL = (
    GRID_TOML.split('[[models]]\nname = "TinyB"')[0].replace(
        'conventions = ["paper", "openood"]', 'conventions = ["paper"]'
    )
    + """
[id]
path = "id"

[ood]
{ood}

[vocabularies]
A = {{ file = "vocabA.txt", sizes = [4, 8] }}
{vocab}

[[methods]]
name = "neglabel"
params = {{ groups = 2 }}
"""
)


def _files(root: Path) -> dict[str, bytes]:
    """Every file of a grid folder but the run's own record (times, counts of work done)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "run.json"
    }


@pytest.fixture
def small(grid_files, tmp_path):
    """A one-model grid in its own folder (its images copied, so a test may replace one)."""
    root = tmp_path / "g"
    shutil.copytree(grid_files, root, ignore=shutil.ignore_patterns("grid_*.toml"))
    negvocab.Vocabulary(labels=["kettle", "ladder", "tower", "glacier"], source="oracle").save(root / "oracle.json")

    def write(ood: str = 'oodA = "oodA"\noodB = "oodB"', vocab: str = 'O = "oracle.json"') -> Path:
        path = root / "grid.toml"
        path.write_text(SMALL.format(cache=tmp_path / "cache", ood=ood, vocab=vocab))
        return path

    return root, write, tmp_path / "cache"


#: ``negvocab`` in a child that kills itself with SIGKILL at its K-th commit of a file (``os.replace``,
#: which every atomic write, cache shard and folder commit ends with), just before or just after it.
#: The embedding cache checkpoints after every chunk (as a slow, loaded machine does by time), so
#: kills fall between its pieces too. Kill points are counted commits, not times: the same on any load.
KILLER = """
import os, signal, sys
from negvocab.vlm import cache
cache.Checkpoints.__init__.__kwdefaults__["every_s"] = 0.0
at, when, real, seen = int(os.environ["KILL_AT"]), os.environ.get("KILL_WHEN", "after"), os.replace, [0]
def replace(*a, **k):
    seen[0] += 1
    if seen[0] == at and when == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    real(*a, **k)
    if seen[0] == at:
        os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
from negvocab.cli import main
sys.argv[0] = "negvocab"
main()
"""


def _killed_at(toml: Path, out: Path, at: int, when: str) -> int:
    env = {**os.environ, "KILL_AT": str(at), "KILL_WHEN": when}
    # not waiting for the output to close: the run's orphaned image-loader workers may still hold it
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, "grid", "run", str(toml), "-o", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc.returncode


def test_a_killed_grid_resumed_equals_a_clean_run_file_for_file(small, tmp_path, monkeypatch):
    """SIGKILL at random commit points (three seeds; just before or just after the commit), run
    again at once: every file equals a clean run's, no temporary file is left, the oracle
    vocabulary is still marked not deployable with its size, hash and source."""
    from negvocab.vlm.cache import Checkpoints

    root, write, cache = small
    toml = write()
    clean, real, seen = tmp_path / "clean", os.replace, []
    with monkeypatch.context() as m:  # a clean run here, its commits counted, checkpoints as in the child
        m.setitem(Checkpoints.__init__.__kwdefaults__, "every_s", 0.0)
        m.setattr(os, "replace", lambda *a, **k: (seen.append(1), real(*a, **k)))
        assert CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(clean)]).exit_code == 0
    commits = len(seen)
    want = _files(clean)
    rows = [
        r for r in (json.loads(v)["row"] for k, v in want.items() if k.startswith("cells/")) if r["vocabulary"] == "O"
    ]
    assert rows and all(
        r["deployable"] is False and r["vocab_size"] == 4 and r["vocab_source"] == "oracle" and r["vocab_hash"]
        for r in rows
    )
    assert "Not deployable (oracle/transductive): O." in want["pivots.md"].decode()
    assert commits > 20  # cache shards, score files, cells, the tables' commit
    for seed in range(3):
        rng = np.random.default_rng(seed)
        at, when = int(rng.integers(1, commits)), str(rng.choice(["before", "after"]))
        shutil.rmtree(cache, ignore_errors=True)  # the embeddings too are computed again, in pieces
        out = tmp_path / f"resumed{seed}"
        assert _killed_at(toml, out, at, when) == -signal.SIGKILL and not (out / "grid.json").exists(), (at, when)
        again = CliRunner().invoke(
            app, ["grid", "run", str(toml), "-o", str(out)]
        )  # at once: the lock died with the run
        assert again.exit_code == 0, (at, when, again.output)
        got = _files(out)
        assert sorted(got) == sorted(want), (at, when)
        assert [k for k in want if got[k] != want[k]] == [], (at, when)
        assert json.loads((out / "run.json").read_text())["finished"]  # the times are there, apart


def test_an_image_replaced_in_place_reruns_its_cells(small, tmp_path):
    root, write, _ = small
    toml = write()
    out = tmp_path / "out"
    first = negvocab.run_grid(toml, out)
    victim = root / "oodB" / "im003.png"
    Image.fromarray(np.full((32, 32, 3), 200, dtype=np.uint8)).save(victim)
    os.utime(victim, ns=(time.time_ns(), time.time_ns() + 10**9))
    again = negvocab.run_grid(toml, out)
    assert again.stats["cells_to_run"] == 3  # A@4, A@8 and O on oodB; oodA's cells kept
    clean = negvocab.run_grid(toml, tmp_path / "clean")
    assert again.rows == clean.rows
    changed = {r["cell"] for r in again.rows} - {r["cell"] for r in first.rows}
    assert len(changed) == 3 and {r["ood_set"] for r in again.rows if r["cell"] in changed} == {"oodB"}


@pytest.mark.parametrize("damage", ["garbage", "bitflip", "list", "other-digest"])
def test_a_damaged_cell_or_score_file_is_computed_again(small, tmp_path, damage, caplog):
    root, write, _ = small
    toml = write()
    out = tmp_path / "out"
    clean = negvocab.run_grid(toml, out)
    cell = sorted((out / "cells").glob("*.json"))[1]
    score = sorted((out / "scores").glob("*.npz"))[2]
    for path in (cell, score):
        data = bytearray(path.read_bytes())
        if damage == "garbage":
            data = bytearray(b"\x00\xffnot a file")
        elif damage == "bitflip":
            i = len(data) // 2 if path.suffix == ".npz" else data.index(b'"fpr": ') + 9
            data[i] ^= 0x04
        elif damage == "list":
            data = bytearray(b"[1, 2, 3]")
        else:
            doc = json.loads(data) if path.suffix == ".json" else None
            data = bytearray(json.dumps({**doc, "digest": "0" * 64}).encode()) if doc else bytearray(b"PK\x03\x04")
        path.write_bytes(bytes(data))
    st = negvocab.grid_status(negvocab.load_grid(toml), out)
    assert st["total"]["pending"] == 1 and st["total"]["done"] == 5
    again = negvocab.run_grid(toml, out)
    assert again.rows == clean.rows and again.stats["cells_to_run"] == 1
    assert any("damaged cell file" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("source", [b"\x00\xff\xfe garbage", b"[1, 2]", b'{"config": 3}', None])
def test_status_on_a_bad_source_record_is_one_line(tmp_path, source):
    out = tmp_path / "out"
    out.mkdir()
    path = out / "grid_source.json"
    if source is None:
        path.mkdir()  # unreadable as a file
    else:
        path.write_bytes(source)
    res = CliRunner().invoke(app, ["grid", "status", str(out)])
    assert res.exit_code == 2 and "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1, (
        res.output
    )
    assert "grid_source.json" in res.output


def test_status_of_a_random_weights_grid_from_its_file(small, tmp_path):
    root, write, _ = small
    toml = write()
    text = toml.read_text().replace("random_weights = true\n", 'pretrained = "no-such-tag"\n')
    toml.write_text(text)
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out), "--random-weights"])
    assert res.exit_code == 0, res.output
    st = CliRunner().invoke(app, ["grid", "status", str(toml), "-o", str(out), "--random-weights"])
    assert st.exit_code == 0 and st.output.split("total")[1].split() == ["6", "0", "0"], st.output
    from_folder = CliRunner().invoke(app, ["grid", "status", str(out)])
    assert from_folder.output == st.output


def test_the_folder_follows_the_output_rules(small, tmp_path):
    root, write, _ = small
    toml = write()
    out = tmp_path / "out"
    assert CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out)]).exit_code == 0
    tables = (out / "table.csv").read_bytes()
    assert CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out)]).exit_code == 0  # the same grid resumes
    other = root / "other.toml"
    other.write_text(toml.read_text().replace("sizes = [4, 8]", "sizes = [4]"))
    refused = CliRunner().invoke(app, ["grid", "run", str(other), "-o", str(out)])
    assert refused.exit_code == 2 and "--overwrite" in refused.output and len(refused.output.strip().splitlines()) == 1
    assert (out / "table.csv").read_bytes() == tables and not list(out.glob(".negvocab-*"))
    replaced = CliRunner().invoke(app, ["grid", "run", str(other), "-o", str(out), "--overwrite"])
    assert replaced.exit_code == 0 and "A@8" not in (out / "table.csv").read_text()
    assert not (out / "sweep_A.pdf").exists() or "A@4" in (out / "table.csv").read_text()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for target in (a_file, Path("/dev/null")):
        res = CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(target)])
        assert res.exit_code == 2 and "not a folder" in res.output and "Traceback" not in res.output, res.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_line(small, tmp_path):
    root, write, _ = small
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        res = CliRunner().invoke(app, ["grid", "run", str(write()), "-o", str(ro)])
    finally:
        ro.chmod(0o755)
    assert res.exit_code == 2 and "cannot write into" in res.output and "Traceback" not in res.output


def test_a_bad_vocabulary_or_ood_set_fails_only_its_cells(small, tmp_path):
    root, write, _ = small
    (root / "broken.json").write_bytes(b"\x89PNG\r\n\x1a\n binary")
    toml = write(
        ood='oodA = "oodA"\nmissing = "no-such-folder"\noodB = "oodB"',
        vocab='O = "oracle.json"\nX = "broken.json"\nY = "no-such.txt"',
    )
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out)])
    assert res.exit_code == 1 and "Traceback" not in res.output
    done = [
        json.loads(p.read_text())["row"] for p in (out / "cells").glob("*.json") if not p.name.endswith(".failed.json")
    ]
    assert {(r["vocabulary"], r["ood_set"]) for r in done} == {
        (v, o) for v in ("A@4", "A@8", "O") for o in ("oodA", "oodB")
    }
    lines = [ln for ln in res.output.splitlines() if ln.startswith("failed: ")]
    # one line per distinct reason with its cell count: the missing set (3 good vocabularies), each bad file (3 sets)
    assert len(lines) == 3 and sorted(int(ln.split()[1]) for ln in lines) == [3, 3, 3], res.output
    assert (
        any("ood.missing" in ln for ln in lines)
        and any("vocabularies.X" in ln for ln in lines)
        and any("vocabularies.Y" in ln for ln in lines)
    )
    assert (out / "grid.json").exists() and "A@4" in (out / "table.csv").read_text()


def test_one_ood_set_and_a_sized_vocabulary_finish(small, tmp_path):
    root, write, _ = small
    toml = write(ood='oodA = "oodA"', vocab="")
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "grid.json").read_text())["status"]["total"]["done"] == 2
    assert (out / "sweep_A.pdf").read_bytes()[:5] == b"%PDF-" and (out / "sweep_A.svg").exists()


def test_help_names_the_ray_extra():
    res = CliRunner().invoke(app, ["grid", "run", "--help"], terminal_width=200)
    assert "negvocab[ray]" in res.output


def test_a_full_disk_mid_grid_is_one_line_and_the_rerun_equals_a_clean_run(small, tmp_path, monkeypatch):
    """The disk fills after three cells (ENOSPC from the write, as the kernel reports it): one line,
    exit 2, no cell marked failed; freed, the rerun resumes and equals a clean run."""
    import errno

    root, write, _ = small
    toml = write()
    clean, out = tmp_path / "clean", tmp_path / "out"
    assert CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(clean)]).exit_code == 0
    real, written = Path.write_bytes, []

    def filling(self, data):
        if "cells" in self.parent.name or "cells" in str(self.parent):
            written.append(self)
            if len(written) > 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", filling)
    res = CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out)])
    monkeypatch.setattr(Path, "write_bytes", real)
    assert res.exit_code == 2 and "disk is full" in res.output and "Traceback" not in res.output, res.output
    assert not list((out / "cells").glob("*.failed.json")) and not (out / "grid.json").exists()
    assert len(list((out / "cells").glob("*.json"))) == 3
    assert CliRunner().invoke(app, ["grid", "run", str(toml), "-o", str(out)]).exit_code == 0
    assert _files(out) == _files(clean)


def test_cells_bound_to_the_device_are_redone_when_scored_on_another_kind(small, tmp_path, caplog):
    """NegLabel's own grouping draws its permutation on the scoring device (CPU and CUDA differ):
    a folder whose such score files say CUDA, resumed here on the CPU, has them computed again and
    equals a clean CPU run; the default grouping's files are kept as they are."""
    root, write, _ = small
    toml = write()
    text = toml.read_text().replace(
        "params = { groups = 2 }",
        'params = { groups = 2, grouping = "neglabel" }\n[[methods]]\nname = '
        '"neglabel"\nlabel = "NegLabel (stratified)"\nparams = { groups = 2 }',
    )
    toml.write_text(text)
    out = tmp_path / "out"
    clean = negvocab.run_grid(toml, out)
    files = _files(out)
    cfg = negvocab.load_grid(toml)
    cells = negvocab.grid.work.plan_cells(cfg, negvocab.grid.work.open_sets(cfg))
    bound = {c.id_scores for c in cells if c.method == "neglabel"}
    kept = {c.id_scores for c in cells if c.method == "NegLabel (stratified)"}
    for path in (out / "scores").glob("*.npz"):  # as if scored on a GPU
        with np.load(path, allow_pickle=False) as z:
            scores, meta = z["scores"], json.loads(str(z["meta"]))
        meta["made_by"]["score_device"] = "cuda:0"
        np.savez(path, scores=scores, meta=np.array(json.dumps(meta)))
    caplog.set_level("WARNING")
    again = negvocab.run_grid(toml, out)
    said = [r.getMessage() for r in caplog.records if "depend on the device" in r.getMessage()]
    assert len(said) == 1 and " 6 cells " in said[0], said  # 3 vocabularies x 2 OOD sets, grouping = neglabel only
    assert again.stats["cells_to_run"] == 6 and again.rows == clean.rows
    redone = {name for name, data in _files(out).items() if data == files.get(name)}
    assert all(f"scores/{d}.npz" in redone for d in bound)  # recomputed here: the clean run's bytes again
    assert kept and not any(f"scores/{d}.npz" in redone for d in kept)  # the stratified files still say cuda:0


def test_a_finished_cells_older_score_files_are_kept(small, tmp_path):
    """The device check reads what score files record and removes none: files of an older format
    (scores only, which tables still read) of finished device-bound cells stay, and nothing reruns."""
    root, write, _ = small
    toml = write()
    toml.write_text(
        toml.read_text().replace("params = { groups = 2 }", 'params = { groups = 2, grouping = "neglabel" }')
    )
    out = tmp_path / "out"
    negvocab.run_grid(toml, out)
    paths = sorted((out / "scores").glob("*.npz"))
    for path in paths:
        with np.load(path, allow_pickle=False) as z:
            scores = z["scores"]
        np.savez(path, scores=scores)
    again = negvocab.run_grid(toml, out)
    assert again.stats["cells_to_run"] == 0 and all(p.exists() for p in paths)
