"""Property tests of the writers (hypothesis, bounded): a Ctrl-C at a random line of negvocab's own
code while a vocabulary file or an embedding-cache shard is written. Afterwards a reader finds the
earlier output whole or the new one whole, never a mix, a torn file or rows under the wrong keys."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import negvocab
from negvocab.vlm.cache import Checkpoints, EmbeddingStore
from negvocab.vocab import Vocabulary

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PACKAGE = str(Path(negvocab.__file__).parent)


def interrupted_at(n: int, work: Callable[[], object]) -> bool:
    """Run ``work`` with a KeyboardInterrupt raised at the ``n``-th line executed in negvocab's
    code (a Ctrl-C landing there); True when it was interrupted, False when it finished first."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        if event == "line":
            count += 1
            if count == n:
                raise KeyboardInterrupt
        return tracer

    sys.settrace(tracer)
    try:
        work()
    except KeyboardInterrupt:
        return True
    finally:
        sys.settrace(None)
    return False


@FAST
@given(n=st.integers(1, 70), earlier=st.booleans())  # a save runs about 60 lines of negvocab
def test_a_vocabulary_file_is_the_earlier_or_the_new_one_whole(tmp_path_factory, n, earlier):
    path = tmp_path_factory.mktemp("voc") / "v.json"
    old = Vocabulary.from_labels(["sofa", "lamp"], source="file")
    new = Vocabulary.from_labels(["aurora", "canyon", "glacier"], source="mined", settings={"deployable": False})
    if earlier:
        old.save(path)
    before = path.read_bytes() if earlier else None
    stopped = interrupted_at(n, lambda: new.save(path))
    if not path.exists():
        assert stopped and not earlier  # nothing was there, nothing half-written is
    elif path.read_bytes() != before:
        assert Vocabulary.load(path).labels == new.labels  # the new file, whole
    assert not [p for p in path.parent.iterdir() if p.name != "v.json"]  # no temporary file left


@FAST
@given(n=st.integers(1, 500), flush_every=st.integers(1, 4))
def test_a_cache_interrupted_while_checkpointing_never_serves_wrong_rows(tmp_path_factory, n, flush_every):
    folder = tmp_path_factory.mktemp("cache") / "s"
    key = {"model": {"name": "t"}}
    rng = np.random.default_rng(0)
    old_keys, old_rows = [f"old{i}" for i in range(3)], rng.standard_normal((3, 4)).astype(np.float32)
    EmbeddingStore(folder, key).put(old_keys, old_rows)
    keys = [f"k{i}" for i in range(6)]
    rows = rng.standard_normal((6, 4)).astype(np.float32)

    def checkpointed() -> None:
        saved = Checkpoints(EmbeddingStore(folder, key), every_s=float("inf"), max_rows=flush_every)
        try:
            for i in range(0, 6, 2):
                saved.add(keys[i : i + 2], rows[i : i + 2])
        finally:
            saved.flush()

    interrupted_at(n, checkpointed)
    found, got = EmbeddingStore(folder, key).get(old_keys + keys)  # a fresh reader, as the next run
    assert found[:3].all() and np.array_equal(got[:3], old_rows)  # the earlier rows survive
    for i in np.flatnonzero(found[3:]):
        assert np.array_equal(got[3 + i], rows[i])  # whatever was kept is right
