"""kill -9 in the middle of a command, then the same command again: the output equals a clean run's,
byte for byte, and the re-run encoded only what the killed run had not stored (issue 34: a resumed
``build wordnet`` swapped near-tied pairs and a resumed ``coverage`` moved its threshold by ~1e-9,
because text chunks followed the clock). The commands run as processes of their own on a tiny random
CLIP; its clock is made slow (every chunk counts as 40 s of work, so each is stored at once, as on a
slow machine) and each chunk sleeps a little, so the kill lands between two stored chunks, with a
chunk of the labels stored and another still to do."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.scoring.conftest import ID_NAMES
from tests.vlm.conftest import make_tiny_vlm

REPO = Path(__file__).resolve().parents[2]

# the CLI on make_tiny_vlm (random weights, cache under $TINY_DIR), counting the prompts it encodes
WRAPPER = """
import atexit, itertools, os, sys, time
from pathlib import Path
import negvocab.cli.build_wordnet as build_wordnet
import negvocab.cli.coverage as coverage
import negvocab.vlm.cache as cache
import negvocab.vlm.text as text
from tests.vlm.conftest import make_tiny_vlm

vlm = make_tiny_vlm(Path(os.environ["TINY_DIR"]))
build_wordnet.load_vlm = coverage.load_vlm = lambda *a, **k: vlm
real, count = text.encode_prompts, [0]

def counted(v, prompts, **kw):
    count[0] += len(prompts)
    time.sleep(float(os.environ.get("SLOW", "0")))
    return real(v, prompts, **kw)

text.encode_prompts = counted
if os.environ.get("SLOW"):
    ticks = itertools.count(0.0, 40.0)
    cache.monotonic = lambda: next(ticks)  # 40 s of work a call: every chunk is stored
atexit.register(lambda: print(f"ENCODED {count[0]}", file=sys.stderr))
from negvocab.cli import main
main()
"""
N_LABELS = 2600  # three text chunks of 1,024 prompts with one template


def _run(args: list[str], cwd: Path, tiny_dir: Path, slow: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TINY_DIR": str(tiny_dir)}
    env.pop("SLOW", None)
    if slow:
        env["SLOW"] = slow
    return subprocess.Popen(
        [sys.executable, "-c", WRAPPER, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stored(tiny_dir: Path) -> int:
    return len(list((tiny_dir / "emb" / "text").rglob("*.npy"))) if (tiny_dir / "emb" / "text").is_dir() else 0


def _encoded(stderr: str) -> int:
    return int(stderr.rsplit("ENCODED ", 1)[1].split()[0])


def _kill_resume_and_clean(args: list[str], cwd: Path, outputs: list[str]) -> dict[str, bytes]:
    """Run ``args`` slowly, kill -9 it once two text chunks are stored, run it again, then run it
    clean (own folder, own cache); assert the outputs are equal byte for byte; return them."""
    killed = _run(args, cwd, cwd / "tiny", slow="1.5")
    deadline = time.time() + 240
    while _stored(cwd / "tiny") < 2:  # the ID names and a first chunk of labels, or two chunks
        assert killed.poll() is None, killed.communicate()[1][-3000:]
        assert time.time() < deadline, "no chunk was stored"
        time.sleep(0.05)
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    for name in outputs:
        assert not (cwd / name).exists(), f"{name} written by a killed run"

    resumed = _run(args, cwd, cwd / "tiny")
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-3000:]
    clean_dir = cwd.parent / (cwd.name + "_clean")
    clean_dir.mkdir()
    for p in cwd.iterdir():
        if p.is_symlink():
            (clean_dir / p.name).symlink_to(p.resolve(), target_is_directory=p.is_dir())
        elif p.is_file():
            (clean_dir / p.name).write_bytes(p.read_bytes())  # the inputs, at the same relative paths
    for name in outputs:
        (clean_dir / name).unlink(missing_ok=True)
    clean = _run(args, clean_dir, clean_dir / "tiny")
    _, clean_err = clean.communicate(timeout=600)
    assert clean.returncode == 0, clean_err[-3000:]

    assert 0 < _encoded(err) < _encoded(clean_err), (err[-500:], clean_err[-500:])  # stored chunks were kept
    # the embeddings each run stored, bit for bit (coverage's float32 scores can absorb a 1e-7 change)
    labels = [f"widget {i}" for i in range(N_LABELS)]
    assert _cached(cwd / "tiny", labels).tobytes() == _cached(clean_dir / "tiny", labels).tobytes()
    got = {}
    for name in outputs:
        a, b = (_timeless((cwd / name).read_bytes()), _timeless((clean_dir / name).read_bytes()))
        assert a == b, f"{name}: the resumed run differs from a clean run"
        got[name] = a
    return got


def _cached(tiny_dir: Path, labels: list[str]) -> np.ndarray:
    """The text embeddings of ``labels`` that the runs stored in ``tiny_dir`` (served from the cache only)."""
    import negvocab.vlm.text as text

    real = text.encode_prompts
    text.encode_prompts = lambda *a, **k: pytest.fail("a label was missing from the cache")
    try:
        return make_tiny_vlm(tiny_dir).encode_text(labels, "single")
    finally:
        text.encode_prompts = real


def _timeless(data: bytes) -> bytes:
    """``data`` without its provenance's time stamps (when a step ran, the one field that may differ)."""
    return re.sub(rb'"created": "[0-9T:Z-]+"', b'"created": ""', data)


@pytest.fixture
def labels_dir(tmp_path: Path) -> Path:
    """A candidates file of ``N_LABELS`` made-up nouns and the same labels as a vocabulary (TXT)."""
    work = tmp_path / "work"
    work.mkdir()
    rows = [f"widget {i}\tn\tnoun.artifact\twidget{i}.n.01\t{1000 + i}\n" for i in range(N_LABELS)]
    (work / "pool.tsv").write_text("text\tpos\tlexname\tsynset\toffset\n" + "".join(rows), encoding="utf-8")
    (work / "vocab.txt").write_text("".join(f"widget {i}\n" for i in range(N_LABELS)), encoding="utf-8")
    (work / "classes.txt").write_text("\n".join(ID_NAMES) + "\n", encoding="utf-8")
    return work


def test_build_wordnet_killed_then_resumed_equals_a_clean_run(labels_dir):
    args = ["build", "wordnet", "--random-weights", "--candidates", "pool.tsv", "-t", "single"]
    args += ["--id-classes", "classes.txt", "--sizes", "100,1000", "-o", "v.json"]
    got = _kill_resume_and_clean(args, labels_dir, ["v-M100.json", "v-M1000.json"])
    assert got["v-M1000.json"].count(b'"widget ') >= 1000 and b'"sha256"' in got["v-M1000.json"]


def test_coverage_killed_then_resumed_equals_a_clean_run(labels_dir, tiny):
    for kind in ("id", "ood"):
        (labels_dir / kind).symlink_to(tiny / kind, target_is_directory=True)
    args = ["coverage", "-V", "vocab.txt", "--id", "id", "--ood", "ood", "--id-classes", "classes.txt"]
    args += ["-t", "single", "-o", "cov"]
    outputs = ["cov/confusions.csv", "cov/coverage.json", "cov/coverage_images.json"]
    _kill_resume_and_clean(args, labels_dir, outputs)
