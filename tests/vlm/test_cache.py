"""Embedding cache: hits do no model work, never cross models, corrupt files are recomputed."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest

import negvocab.vlm.text as text_mod
from negvocab.vlm.cache import EmbeddingStore
from negvocab.vlm.templates import PAPER8
from tests.vlm.conftest import LABELS, make_tiny_vlm


class Counter:
    """Wraps encode_prompts and counts the prompts the model actually saw."""

    def __init__(self, monkeypatch):
        self.prompts: list[str] = []
        real = text_mod.encode_prompts

        def counting(vlm, prompts, **kw):
            self.prompts.extend(prompts)
            return real(vlm, prompts, **kw)

        monkeypatch.setattr(text_mod, "encode_prompts", counting)


def shard_files(vlm, kind="text"):
    return sorted(p for p in (vlm.cache_root / kind).rglob("*.npy"))


def test_second_encode_does_no_model_work(tiny, monkeypatch):
    counter = Counter(monkeypatch)
    first = tiny.encode_text(LABELS, "single")
    assert len(counter.prompts) == len(LABELS)
    again = tiny.encode_text(LABELS, "single")
    assert len(counter.prompts) == len(LABELS)  # nothing new
    assert np.array_equal(first, again)
    # a fresh wrapper of the same weights reads the same files
    fresh = make_tiny_vlm(tiny.cache_root.parent)
    assert fresh.cache_root == tiny.cache_root
    assert np.array_equal(fresh.encode_text(LABELS[::-1], "single"), first[::-1])
    assert len(counter.prompts) == len(LABELS)


def test_superset_computes_only_the_new_labels(tiny, monkeypatch):
    counter = Counter(monkeypatch)
    tiny.encode_text(LABELS[:5], "paper8")
    out = tiny.encode_text(LABELS[:8], "paper8")
    assert len(counter.prompts) == 8 * 8  # 5 then 3 labels, 8 templates each
    assert set(counter.prompts[40:]) == {t.format(lab) for lab in LABELS[5:8] for t in PAPER8}
    uncached = make_tiny_vlm(cache=False).encode_text(LABELS[:8], "paper8")
    np.testing.assert_allclose(out, uncached, atol=1e-6)


def test_templates_are_part_of_the_key(tiny, monkeypatch):
    counter = Counter(monkeypatch)
    a = tiny.encode_text(LABELS[:3], "single")
    b = tiny.encode_text(LABELS[:3], ["{}"])
    assert len(counter.prompts) == 6
    assert not np.allclose(a, b)


def test_cache_is_never_served_to_another_model(tmp_path, monkeypatch):
    one = make_tiny_vlm(tmp_path, seed=0)
    two = make_tiny_vlm(tmp_path, seed=1)  # same architecture and name, other weights
    assert one.identity["weights"] != two.identity["weights"]
    a = one.encode_text(LABELS[:4], "single")
    counter = Counter(monkeypatch)
    b = two.encode_text(LABELS[:4], "single")
    assert len(counter.prompts) == 4  # computed, not read from model one's cache
    assert not np.allclose(a, b)
    np.testing.assert_allclose(b, make_tiny_vlm(seed=1, cache=False).encode_text(LABELS[:4], "single"), atol=1e-6)


def test_corrupted_shard_is_detected_and_recomputed(tiny, monkeypatch, caplog):
    good = tiny.encode_text(LABELS[:6], "single")
    (npy,) = shard_files(tiny)
    data = bytearray(npy.read_bytes())
    data[-5] ^= 0xFF  # flip bits inside the array payload
    npy.write_bytes(bytes(data))
    fresh = make_tiny_vlm(tiny.cache_root.parent)
    counter = Counter(monkeypatch)
    with caplog.at_level(logging.WARNING):
        again = fresh.encode_text(LABELS[:6], "single")
    assert "corrupt cache shard" in caplog.text
    assert len(counter.prompts) == 6
    np.testing.assert_allclose(again, good, atol=1e-6)


@pytest.mark.parametrize(
    "damage", ["truncate-npy", "garbage-manifest", "missing-manifest", "wrong-shape", "list-keys", "folder-named-json"]
)
def test_partial_or_broken_files_are_never_trusted(tiny, monkeypatch, damage):
    good = tiny.encode_text(LABELS[:4], "single")
    (npy,) = shard_files(tiny)
    manifest = npy.with_suffix(".json")
    if damage == "truncate-npy":
        npy.write_bytes(npy.read_bytes()[:100])
    elif damage == "garbage-manifest":
        manifest.write_text("{not json")
    elif damage == "missing-manifest":  # an interrupted write: the array landed, the manifest did not
        manifest.unlink()
    elif damage == "list-keys":
        info = json.loads(manifest.read_text())
        info["keys"] = [[k] for k in info["keys"]]
        manifest.write_text(json.dumps(info))
    elif damage == "folder-named-json":  # not a file: ignored, and the shard of the real manifest stays
        (npy.parent / "x.json").mkdir()
        npy.write_bytes(npy.read_bytes()[:100])
    else:
        info = json.loads(manifest.read_text())
        info["shape"] = [info["shape"][0], info["shape"][1] + 1]
        manifest.write_text(json.dumps(info))
    counter = Counter(monkeypatch)
    again = make_tiny_vlm(tiny.cache_root.parent).encode_text(LABELS[:4], "single")
    assert len(counter.prompts) == 4
    np.testing.assert_allclose(again, good, atol=1e-6)


def test_a_damaged_shard_that_cannot_be_removed_is_recomputed_not_fatal(tiny, monkeypatch):
    # a read-only cache: the broken shard stays on disk, the rows are recomputed, nothing crashes
    good = tiny.encode_text(LABELS[:4], "single")
    (npy,) = shard_files(tiny)
    npy.write_bytes(npy.read_bytes()[:100])
    real_unlink = Path.unlink

    def refuse(self, missing_ok=False):
        if self.parent == npy.parent:
            raise PermissionError(13, "Read-only file system", str(self))
        return real_unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse)
    again = make_tiny_vlm(tiny.cache_root.parent).encode_text(LABELS[:4], "single")
    np.testing.assert_allclose(again, good, atol=1e-6)
    assert npy.exists()


def test_store_listing_skips_files_removed_meanwhile(tmp_path):
    from negvocab.vlm.cache import _by_age

    a = tmp_path / "a.json"
    a.write_text("{}")
    (tmp_path / "dir.json").mkdir()
    assert _by_age([tmp_path / "gone.json", a, tmp_path / "dir.json"]) == [a]


def test_a_replaced_checkpoint_gets_a_new_fingerprint(tmp_path):
    # same path, size and mtime (cp -p): the memo must not return the old hash
    import os

    from negvocab.vlm.loading import checkpoint_sha256 as file_sha256

    ckpt, memo = tmp_path / "w.bin", tmp_path / "fingerprints.json"
    ckpt.write_bytes(b"a" * 64)
    first = file_sha256(ckpt, memo)
    st = ckpt.stat()
    other = tmp_path / "other.bin"
    other.write_bytes(b"b" * 64)
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    other.replace(ckpt)
    assert ckpt.stat().st_size == st.st_size and ckpt.stat().st_mtime_ns == st.st_mtime_ns
    assert file_sha256(ckpt, memo) != first


def test_foreign_key_file_is_not_trusted(tmp_path):
    store = EmbeddingStore(tmp_path / "s", {"model": "a"})
    store.put(["x", "y"], np.ones((2, 3), np.float32))
    assert store.get(["x"])[0].tolist() == [True]
    other = EmbeddingStore(tmp_path / "s", {"model": "b"})  # same folder, another key
    found, rows = other.get(["x", "y"])
    assert not found.any() and rows is None


def test_store_roundtrip_many_shards_and_compaction(tmp_path):
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    rng = np.random.default_rng(0)
    rows = {}
    for i in range(12):  # more than MAX_SHARDS puts: merged into one shard
        keys = [f"label {i} {j}" for j in range(3)]
        arr = rng.standard_normal((3, 4)).astype(np.float32)
        store.put(keys, arr)
        rows.update(zip(keys, arr, strict=True))
    assert len(list((tmp_path / "s").glob("*.npy"))) <= 8
    keys = list(rows)[::-1] + ["never stored"]
    found, got = EmbeddingStore(tmp_path / "s", {"k": 1}).get(keys)
    assert found.tolist() == [True] * len(rows) + [False]
    np.testing.assert_array_equal(got[:-1], np.stack([rows[k] for k in keys[:-1]]))


def test_no_pickle_in_cache_files(tiny):
    tiny.encode_text(LABELS[:2], "single")
    (npy,) = shard_files(tiny)
    arr = np.load(npy, allow_pickle=False)
    assert arr.dtype == np.float32 and arr.shape == (2, 32)


def test_interrupted_run_keeps_finished_chunks(tiny, monkeypatch):
    import negvocab.vlm.model as model_mod

    monkeypatch.setattr(text_mod, "CHUNK_PROMPTS", 4)  # one template: 4 labels a chunk
    monkeypatch.setattr(model_mod, "STORE_EVERY_PROMPTS", 4)  # one template: 4 labels a piece
    real = text_mod.encode_prompts
    calls = []

    def dies_on_third_chunk(vlm, prompts, **kw):
        calls.append(len(prompts))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(vlm, prompts, **kw)

    monkeypatch.setattr(text_mod, "encode_prompts", dies_on_third_chunk)
    # a slow machine (1000 s a call of the clock): chunks sized by the clock would shrink to one label,
    # the cache would hold a prefix a clean run never makes, and the resume would batch otherwise
    now = [0.0]

    def slow_clock():
        now[0] += 1000.0
        return now[0]

    monkeypatch.setattr(text_mod, "monotonic", slow_clock, raising=False)
    with pytest.raises(KeyboardInterrupt):
        tiny.encode_text(LABELS[:12], "single")
    monkeypatch.setattr(text_mod, "encode_prompts", real)
    counter = Counter(monkeypatch)
    resumed = tiny.encode_text(LABELS[:12], "single")
    assert counter.prompts == [f"a photo of a {lab}." for lab in LABELS[8:12]]  # chunks 1-2 were cached
    # bit for bit: the resumed run encodes the labels it lacks in the chunks a clean run has
    assert resumed.tobytes() == make_tiny_vlm(cache=False).encode_text(LABELS[:12], "single").tobytes()


def test_image_preprocessing_is_part_of_the_image_key_only(tmp_path, image_dir):
    """Same weights, other normalisation: image rows are recomputed, text rows are shared."""
    from open_clip.model import set_model_preprocess_cfg
    from open_clip.transform import PreprocessCfg

    from negvocab.vlm.model import VLM
    from tests.vlm.conftest import tiny_clip

    def wrap(mean):
        model = tiny_clip(seed=0)
        set_model_preprocess_cfg(model, {**PreprocessCfg(size=32).__dict__, "mean": mean})
        return VLM.from_model(
            model, open_clip_tokenizer(), name="tiny", random_weights=True, device="cpu", cache_dir=tmp_path / "emb"
        )

    a, b = wrap((0.5, 0.5, 0.5)), wrap((0.0, 0.0, 0.0))
    assert a.identity["weights"] == b.identity["weights"]
    assert a.store("text").folder == b.store("text").folder
    assert a.store("image").folder != b.store("image").folder
    ea = a.encode_images(image_dir, num_workers=0)
    eb = b.encode_images(image_dir, num_workers=0)
    assert not np.allclose(ea.embeddings, eb.embeddings)  # computed with b's preprocessing, not read from a's
    fresh = VLM.from_model(b.model, b.tokenizer, name="tiny", random_weights=True, device="cpu", cache=False)
    np.testing.assert_allclose(eb.embeddings, fresh.encode_images(image_dir, num_workers=0).embeddings, atol=1e-6)
    # negvocab cache tells the two image stores apart (same model and weights, other preprocessing)
    from typer.testing import CliRunner

    from negvocab.cli import app

    listed = CliRunner().invoke(app, ["cache", "--cache-dir", str(tmp_path / "emb")]).output
    image_lines = [ln for ln in listed.splitlines() if " image " in ln]
    assert len(image_lines) == 2 and all(" GELU " in ln for ln in image_lines)
    assert len({ln.split(" pp ")[1].split()[0] for ln in image_lines}) == 2


def open_clip_tokenizer():
    import open_clip

    return open_clip.get_tokenizer("ViT-B-32")


def test_default_cache_is_under_negvocab_cache_dir(cache_dir):
    vlm = make_tiny_vlm(None)  # no cache_dir given: $NEGVOCAB_CACHE_DIR/embeddings
    assert vlm.cache_root == cache_dir / "embeddings"
    vlm.encode_text(LABELS[:2], "single")
    (npy,) = shard_files(vlm)
    assert npy.is_relative_to(cache_dir / "embeddings" / "text")
    key = json.loads((npy.parent / "key.json").read_text(encoding="utf-8"))
    assert key["model"]["weights"] == vlm.identity["weights"] and key["templates"] == ["a photo of a {}."]


def test_foreign_store_that_cannot_be_reset_serves_nothing(tmp_path, monkeypatch):
    import negvocab.vlm.cache as cache_mod

    EmbeddingStore(tmp_path / "s", {"model": "a"}).put(["x"], np.ones((1, 3), np.float32))

    def read_only(*_a, **_k):
        raise PermissionError(13, "Read-only file system")

    monkeypatch.setattr(cache_mod, "write_json", read_only)
    monkeypatch.setattr(cache_mod.Path, "unlink", read_only)
    other = EmbeddingStore(tmp_path / "s", {"model": "b"})
    found, rows = other.get(["x"])  # no traceback, and model a's row is not served to model b
    assert not found.any() and rows is None
    other.put(["y"], np.zeros((1, 3), np.float32))  # a failed write is a warning, not an error


def test_list_and_clear_stores_from_the_cli(tmp_path, monkeypatch):
    """``negvocab cache`` lists each model's stores with their row counts and clears only the asked ones."""
    from typer.testing import CliRunner

    from negvocab.cli import app
    from negvocab.vlm.cache import list_stores
    from tests.vlm.conftest import make_tiny_vlm

    a, b = make_tiny_vlm(tmp_path, seed=0), make_tiny_vlm(tmp_path, causal=False, seed=1)
    a.encode_text(["violin", "kettle", "moss"], "single")
    a.encode_text(["violin"], "paper8")
    b.encode_text(["glacier", "tower"], "single")
    stores = list_stores(tmp_path / "emb")
    assert sorted((s.model, s.rows) for s in stores) == [
        ("tiny-bidirectional", 2),
        ("tiny-causal", 1),
        ("tiny-causal", 3),
    ]

    runner = CliRunner()
    listed = runner.invoke(app, ["cache", "--cache-dir", str(tmp_path / "emb")])
    assert listed.exit_code == 0 and "3 stores" in listed.output and "8 templates" in listed.output
    no_tty = runner.invoke(app, ["cache", "--cache-dir", str(tmp_path / "emb"), "--clear"])
    assert no_tty.exit_code == 2 and "add --yes" in no_tty.output and len(list_stores(tmp_path / "emb")) == 3
    import negvocab.cli.cache as cache_cli

    monkeypatch.setattr(cache_cli, "_can_ask", lambda: True)  # as if run from a terminal
    kept = runner.invoke(
        app, ["cache", "--cache-dir", str(tmp_path / "emb"), "--model", "tiny-causal", "--clear"], input="n\n"
    )
    assert kept.exit_code == 0 and "nothing deleted" in kept.output and len(list_stores(tmp_path / "emb")) == 3
    cleared = runner.invoke(
        app, ["cache", "--cache-dir", str(tmp_path / "emb"), "--model", "tiny-causal", "--clear"], input="y\n"
    )
    assert cleared.exit_code == 0 and "cleared 2 stores" in cleared.output
    assert [s.model for s in list_stores(tmp_path / "emb")] == ["tiny-bidirectional"]
    assert (tmp_path / "emb").is_dir()  # the root and other models' stores stay
    (tmp_path / "root").mkdir()
    (tmp_path / "emb").rename(tmp_path / "root" / "embeddings")
    above = runner.invoke(app, ["cache", "--cache-dir", str(tmp_path / "root")])  # the root, as $NEGVOCAB_CACHE_DIR is
    last = above.output.rstrip().splitlines()[-1]
    assert (
        above.exit_code == 0
        and last.startswith("1 stores")
        and last.endswith(f"MiB in {tmp_path / 'root' / 'embeddings'}")
    )
    (tmp_path / "root" / "embeddings").rename(tmp_path / "emb")
    empty = runner.invoke(app, ["cache", "--cache-dir", str(tmp_path / "nothing")])
    assert empty.exit_code == 0 and "no embedding stores" in empty.output
    (tmp_path / "emb" / "text" / "junk").mkdir(parents=True)
    (tmp_path / "emb" / "text" / "junk" / "key.json").write_text("[1, 2]")  # not a key we wrote: not listed
    (tmp_path / "a_file").write_text("x")
    wrong = runner.invoke(app, ["cache", "--cache-dir", str(tmp_path / "a_file"), "--clear", "--yes"])
    assert wrong.exit_code == 2 and "is a file" in wrong.output
    gone = runner.invoke(app, ["cache", "--cache-dir", str(tmp_path / "emb"), "--clear", "--yes"])
    assert gone.exit_code == 0 and "cleared 1 stores" in gone.output and not list_stores(tmp_path / "emb")


@pytest.mark.parametrize(("local", "every"), [(False, 2), (True, 2), (False, 100)])
def test_interrupted_image_encoding_resumes(tiny, image_dir, monkeypatch, local, every):
    # every=2: written while encoding; every=100: nothing written before the interrupt but the
    # finished rows, written as the interrupt unwinds
    import negvocab.vlm.images as images_mod

    monkeypatch.setattr(images_mod, "IMAGE_STORE_EVERY", every)
    batches: list[int] = []  # images per batch the model saw
    real = images_mod.encode_batch

    def interrupt_on_third_batch(vlm, tensors, local):
        if len(batches) == 2 and not interrupt_on_third_batch.fired:
            interrupt_on_third_batch.fired = True
            raise KeyboardInterrupt
        batches.append(len(tensors))
        return real(vlm, tensors, local)

    interrupt_on_third_batch.fired = False
    monkeypatch.setattr(images_mod, "encode_batch", interrupt_on_third_batch)
    with pytest.raises(KeyboardInterrupt):
        tiny.encode_images(image_dir, local_features=local, batch_size=2, num_workers=0)
    assert batches == [1, 2]  # (broken.jpg, img0), (img1, img2) finished; written in pieces of >= 2
    batches.clear()
    out = tiny.encode_images(image_dir, local_features=local, batch_size=2, num_workers=0)
    assert sum(batches) == 2  # only img3 and sub/gray.png are encoded again (broken.jpg is retried)
    from negvocab.vlm.model import VLM

    fresh = VLM.from_model(tiny.model, tiny.tokenizer, name="tiny", random_weights=True, device="cpu", cache=False)
    ref = fresh.encode_images(image_dir, local_features=local, num_workers=0)
    assert out.paths == ref.paths and len(out.failed) == 1
    np.testing.assert_allclose(out.embeddings, ref.embeddings, atol=1e-6)
    if local:
        np.testing.assert_allclose(out.local, ref.local, atol=1e-6)


@pytest.mark.parametrize("local", [False, True])
def test_long_image_encodings_save_at_least_every_30_s_of_work(tiny, image_dir, monkeypatch, local):
    """Images too are kept by time, not only in pieces of IMAGE_STORE_EVERY (2,048) images: at 12 s
    of work an image, a kill at any moment finds all but at most 30 s of the work done on disk."""
    import negvocab.vlm.cache as cache_mod
    import negvocab.vlm.images as images_mod
    from negvocab.core.progress import forget_kept, kept_work

    now, samples = [0.0], []
    real = images_mod.encode_batch
    kinds = ["image", "image-local"] if local else ["image"]

    def on_disk() -> int:  # images whose every kind of row is stored
        counts = [
            sum(
                len(json.loads(p.read_text())["keys"])
                for p in (tiny.cache_root / k).rglob("*.json")
                if p.name != "key.json"
            )
            for k in kinds
        ]
        return min(counts) if all((tiny.cache_root / k).exists() for k in kinds) else 0

    def timed(vlm, tensors, loc):
        out = real(vlm, tensors, loc)
        now[0] += 12.0 * len(tensors)
        samples.append((now[0], on_disk()))
        return out

    monkeypatch.setattr(cache_mod, "monotonic", lambda: now[0])
    monkeypatch.setattr(images_mod, "encode_batch", timed)
    forget_kept()
    got = tiny.encode_images(image_dir, local_features=local, batch_size=1, num_workers=0)
    last_save, before = 0.0, 0
    for t, rows in samples:
        if rows > before:
            last_save, before = t, rows
        assert t - last_save <= 30.0 + 1e-9, (t, last_save, samples)
    assert on_disk() == len(got.paths) and kept_work()["image embeddings in the cache"] == len(got.paths)
    fresh = make_tiny_vlm(cache=False).encode_images(image_dir, local_features=local, num_workers=0)
    np.testing.assert_allclose(got.embeddings, fresh.embeddings, atol=1e-6)


def test_big_shards_are_not_merged(tmp_path, monkeypatch):
    import negvocab.vlm.cache as cache_mod

    monkeypatch.setattr(cache_mod, "MERGE_MAX_BYTES", 100)  # 3x4 float32 = 48 bytes: small; 3x40: big
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    rng = np.random.default_rng(0)
    rows = {}
    for i in range(12):
        width = 40 if i % 3 == 0 else 4
        keys = [f"{i} {j}" for j in range(3)]
        arr = rng.standard_normal((3, width)).astype(np.float32)
        store.put(keys, arr)
        rows.update(zip(keys, arr, strict=True))
    shapes = sorted(np.load(p).shape for p in (tmp_path / "s").glob("*.npy"))
    # the 9th shard triggered a merge of the six small ones so far; every big shard is as written
    assert shapes == sorted([(3, 40)] * 4 + [(18, 4), (3, 4), (3, 4)])
    fresh = EmbeddingStore(tmp_path / "s", {"k": 1})
    for k, want in rows.items():
        found, got = fresh.get([k])
        assert found.all()
        np.testing.assert_array_equal(got[0], want)


def test_a_shard_changed_after_it_was_read_is_checked_again(tmp_path):
    # verified shards are memory-mapped and remembered; a file changed on disk since is verified
    # again (and here found corrupt), never served from the old mapping
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    store.put(["a", "b"], np.ones((2, 3), np.float32))
    assert store.get(["a"])[0].all()
    (npy,) = (tmp_path / "s").glob("*.npy")
    data = bytearray(npy.read_bytes())
    data[-4:] = np.float32(7.0).tobytes()
    with open(npy, "r+b") as fh:  # in place: same inode
        fh.write(bytes(data))
    import os

    st = npy.stat()
    os.utime(npy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    found, rows = store.get(["a", "b"])
    assert not found.any() and rows is None
    assert not list((tmp_path / "s").glob("*.npy"))  # the corrupt shard was deleted


@pytest.mark.parametrize("damage", ["swap two keys", "edit a key"])
def test_a_damaged_manifest_never_serves_rows_under_wrong_keys(tmp_path, caplog, damage):
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    store.put(["a", "b", "c", "d"], rows)
    (manifest,) = [p for p in (tmp_path / "s").glob("*.json") if p.name != "key.json"]
    info = json.loads(manifest.read_text())
    if damage == "swap two keys":
        info["keys"][0], info["keys"][1] = info["keys"][1], info["keys"][0]
    else:
        info["keys"][2] = "e"
    manifest.write_text(json.dumps(info))
    with caplog.at_level(logging.WARNING):
        found, got = EmbeddingStore(tmp_path / "s", {"k": 1}).get(["a", "b", "c", "d", "e"])
    assert not found.any() and got is None
    assert "corrupt cache manifest" in caplog.text


def test_stale_temporary_files_of_killed_writes_are_removed(tmp_path):
    import os

    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    store.put(["a"], np.ones((1, 3), np.float32))
    old = tmp_path / "s" / ".abc.npy.x1.tmp"
    young = tmp_path / "s" / ".def.npy.x2.tmp"
    old.write_bytes(b"x" * 100)
    young.write_bytes(b"y")
    os.utime(old, (0, 0))
    assert EmbeddingStore(tmp_path / "s", {"k": 1}).get(["a"])[0].all()
    assert not old.exists() and young.exists()  # a live writer's file is left alone


def test_a_shard_of_an_older_version_is_kept_and_its_keys_hashed(tmp_path, caplog):
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    store.put(["a"], np.ones((1, 3), np.float32))
    (manifest,) = [p for p in (tmp_path / "s").glob("*.json") if p.name != "key.json"]
    info = json.loads(manifest.read_text())
    digest = info.pop("keys_sha256")  # as negvocab wrote it before manifests held the key hash
    manifest.write_text(json.dumps(info))
    with caplog.at_level(logging.INFO):
        found, rows = EmbeddingStore(tmp_path / "s", {"k": 1}).get(["a"])
    assert found.all() and rows.tolist() == [[1.0, 1.0, 1.0]]  # an upgrade does not throw the cache away
    assert json.loads(manifest.read_text())["keys_sha256"] == digest
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_no_file_handle_or_deleted_shard_outlives_a_read(tmp_path):
    import os

    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    for i in range(5):
        store.put([f"k{i}"], np.full((1, 3), i, np.float32))
    before = len(os.listdir("/proc/self/fd"))
    assert store.get([f"k{i}" for i in range(5)])[0].all()
    assert len(os.listdir("/proc/self/fd")) == before
    maps = open("/proc/self/maps").read()
    assert str(tmp_path / "s") not in maps  # no shard stays mapped (a cleared one would keep its space)


# -- checkpoints by time (issue 23: an interrupted `score` at 42% of 1,213 labels kept nothing) ----
class WorkClock:
    """Seconds of model work: every prompt encoded costs ``per_prompt`` (a CPU's pace, scaled), and
    the store's size is sampled at each step, as a SIGKILL at that moment would find it."""

    def __init__(self, monkeypatch, vlm, per_prompt: float, die_at: float | None = None):
        import negvocab.vlm.cache as cache_mod

        self.now, self.per_prompt, self.die_at = 0.0, per_prompt, die_at
        self.samples: list[tuple[float, int]] = []  # (work done, rows on disk)
        self.vlm = vlm
        real = text_mod.encode_prompts
        monkeypatch.setattr(cache_mod, "monotonic", lambda: self.now)  # the store saves by time (the text
        # chunks no longer follow the clock: issue 34)

        def timed(v, prompts, **kw):
            out = real(v, prompts, **kw)
            for _ in prompts:  # one prompt at a time, so a kill can land anywhere
                self.now += self.per_prompt
                self.samples.append((self.now, self.on_disk()))
                if self.die_at is not None and self.now >= self.die_at:
                    raise KeyboardInterrupt
            return out

        monkeypatch.setattr(text_mod, "encode_prompts", timed)

    def on_disk(self) -> int:
        root = self.vlm.cache_root / "text"
        return sum(len(json.loads(p.read_text())["keys"]) for p in root.rglob("*.json") if p.name != "key.json")


def test_long_encodings_save_at_least_every_30_s_of_work(tiny, monkeypatch):
    """Chunks are a fixed count of prompts (never the clock: a resume equals a clean run), each handed to
    the store as it comes, which writes at least every 30 s of work: a kill at any moment finds on disk all
    but at most 30 s of the work done (issue 23 kept nothing at 42%)."""
    monkeypatch.setattr(text_mod, "CHUNK_PROMPTS", 8)
    labels = [f"thing {i}" for i in range(120)]
    clock = WorkClock(monkeypatch, tiny, per_prompt=1.0)  # 1 s a prompt: 120 s of work, one template
    got = tiny.encode_text(labels, "single", batch_size=4)
    last_save, before = 0.0, 0
    for t, rows in clock.samples:
        if rows > before:
            last_save, before = t, rows
        assert t - last_save <= 30.0 + 1e-9, (t, last_save)
    assert clock.on_disk() == len(labels)
    np.testing.assert_allclose(got, make_tiny_vlm(cache=False).encode_text(labels, "single"), atol=1e-6)


def test_ctrl_c_keeps_all_but_the_chunk_in_hand_and_resumes(tiny, monkeypatch):
    monkeypatch.setattr(text_mod, "CHUNK_PROMPTS", 8)
    labels = [f"thing {i}" for i in range(100)]
    clock = WorkClock(monkeypatch, tiny, per_prompt=1.0, die_at=42.5)  # Ctrl-C at 42% of the work
    with pytest.raises(KeyboardInterrupt):
        tiny.encode_text(labels, "single", batch_size=4)
    kept = clock.on_disk()
    assert kept == 40  # the five whole chunks of 8 before the Ctrl-C (issue 23: 0 with chunks of 4,096)
    monkeypatch.undo()
    counter = Counter(monkeypatch)
    resumed = tiny.encode_text(labels, "single", batch_size=4)
    assert len(counter.prompts) == len(labels) - kept  # only the rest is encoded
    np.testing.assert_allclose(resumed, make_tiny_vlm(cache=False).encode_text(labels, "single"), atol=1e-6)


def test_checkpoints_store_by_time_by_size_and_on_flush(tmp_path):
    from negvocab.vlm.cache import Checkpoints

    now = [0.0]
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    saved = Checkpoints(store, every_s=20.0, max_rows=5, clock=lambda: now[0])
    rows = np.eye(9, dtype=np.float32)
    saved.add(["a", "b"], rows[:2])
    now[0] = 19.9
    saved.add(["c"], rows[2:3])
    assert saved.kept == 0 and len(EmbeddingStore(tmp_path / "s", {"k": 1})) == 0  # not yet
    now[0] = 20.0
    saved.add(["d"], rows[3:4])  # 20 s of work: stored
    assert saved.kept == 4
    saved.add(list("efgh"), rows[4:8])
    assert saved.kept == 4
    saved.add(["i"], rows[8:])  # 5 rows pending: stored before 20 s
    assert saved.kept == 9 and saved.saves == 2
    saved.add(["j"], rows[:1] * 2)
    saved.flush()  # what is pending, on any exit
    found, got = EmbeddingStore(tmp_path / "s", {"k": 1}).get(list("abcdefghij"))
    assert found.all() and np.array_equal(got, np.concatenate([rows, rows[:1] * 2])) and saved.saves == 3


def _stored_keys(folder):
    """Every key the committed manifests of a store folder hold (duplicates kept)."""
    return [k for p in folder.glob("*.json") if p.name != "key.json" for k in json.loads(p.read_text())["keys"]]


def _writer(folder, first, n, per_put):
    """One process's puts into a shared store: keys first .. first + n, per_put at a time."""
    store = EmbeddingStore(folder, {"k": 1})
    for a in range(first, first + n, per_put):
        keys = [f"k{i}" for i in range(a, min(a + per_put, first + n))]
        store.put(keys, np.arange(a, a + len(keys), dtype=np.float32)[:, None].repeat(3, axis=1))
    # then read everything back, as a scoring unit does: what the other process wrote counts too
    store.get([f"k{i}" for i in range(2 * n)])


def test_a_store_read_earlier_sees_what_another_process_stored_since(tmp_path):
    # a model worker keeps its store open across units; the rows another worker committed (or
    # merged) since it first read the index are served, not computed and stored a second time
    ours = EmbeddingStore(tmp_path / "s", {"k": 1})
    ours.put(["a"], np.zeros((1, 3), np.float32))
    theirs = EmbeddingStore(tmp_path / "s", {"k": 1})
    for i in range(10):  # enough shards for a merge: our shard of "a" is merged away under us
        theirs.put([f"b{i}"], np.full((1, 3), i, np.float32))
    found, rows = ours.get(["a"] + [f"b{i}" for i in range(10)])
    assert found.all() and rows[1:, 0].tolist() == list(range(10)) and rows[0].tolist() == [0, 0, 0]
    keys = _stored_keys(tmp_path / "s")
    assert sorted(keys) == sorted(["a"] + [f"b{i}" for i in range(10)])


def test_a_merge_killed_after_its_commit_leaves_no_key_stored_twice(tmp_path, monkeypatch):
    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    for i in range(4):
        store.put([f"k{i}"], np.full((1, 3), i, np.float32))
    monkeypatch.setattr(EmbeddingStore, "_drop", lambda self, sid: None)  # killed before deleting the merged shards
    store.compact()
    monkeypatch.undo()
    assert len(_stored_keys(tmp_path / "s")) == 8  # the merged shard and its four sources, on disk
    found, rows = EmbeddingStore(tmp_path / "s", {"k": 1}).get([f"k{i}" for i in range(4)])
    assert found.all() and rows[:, 0].tolist() == [0, 1, 2, 3]
    assert sorted(_stored_keys(tmp_path / "s")) == [f"k{i}" for i in range(4)]  # the sources are gone


def test_a_merge_in_another_process_makes_ours_wait_for_the_next_put(tmp_path):
    import fcntl

    from negvocab.vlm.cache import MERGE_LOCK

    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    for i in range(4):
        store.put([f"k{i}"], np.full((1, 3), i, np.float32))
    with open(tmp_path / "s" / MERGE_LOCK, "a") as fh:  # another process merging (flock is per open file)
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        store.compact()
        assert len(list((tmp_path / "s").glob("*.npy"))) == 4  # nothing merged, nothing duplicated
    store.compact()
    assert len(list((tmp_path / "s").glob("*.npy"))) == 1


def test_two_processes_writing_and_merging_one_store_store_each_key_once(tmp_path):
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(tmp_path / "s", first, 60, 3)) for first in (0, 60)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    keys = _stored_keys(tmp_path / "s")
    assert sorted(keys) == sorted(f"k{i}" for i in range(120)), "a key stored twice or lost"
    found, rows = EmbeddingStore(tmp_path / "s", {"k": 1}).get([f"k{i}" for i in range(120)])
    assert found.all() and rows[:, 0].tolist() == list(range(120))


def test_a_damaged_manifest_does_not_hide_the_shards_after_it(tmp_path, caplog):
    """The oldest of three shards has a damaged manifest: it is dropped, and the rows of the two
    shards indexed after it are still served (they were once indexed into a dict the drop replaced)."""
    import time

    store = EmbeddingStore(tmp_path / "s", {"k": 1})
    parts = {"bad": ["a", "b"], "good1": ["c", "d"], "good2": ["e", "f"]}
    rows = {}
    for i, keys in enumerate(parts.values()):
        arr = np.full((2, 3), i, dtype=np.float32)
        store.put(keys, arr)
        rows.update(zip(keys, arr, strict=True))
        time.sleep(0.02)  # distinct ages: the damaged manifest is read first
    manifests = sorted(
        (p for p in (tmp_path / "s").glob("*.json") if p.name != "key.json"), key=lambda p: p.stat().st_mtime_ns
    )
    assert len(manifests) == 3
    import os

    st = manifests[0].stat()
    info = json.loads(manifests[0].read_text())
    info["keys"][0] = "zzz"
    manifests[0].write_text(json.dumps(info))
    os.utime(manifests[0], ns=(st.st_atime_ns, st.st_mtime_ns))  # still the oldest
    with caplog.at_level(logging.WARNING):
        found, got = EmbeddingStore(tmp_path / "s", {"k": 1}).get(["c", "d", "e", "f"])
    assert "corrupt cache manifest" in caplog.text
    assert found.all(), found
    np.testing.assert_array_equal(got, np.stack([rows[k] for k in "cdef"]))


def test_a_store_that_reset_a_foreign_folder_still_sees_other_processes_rows(tmp_path):
    """A folder of another key is reset and claimed: the store is then an ordinary one and picks up
    rows another process stores later (it was marked foreign for good, so it never refreshed)."""
    EmbeddingStore(tmp_path / "s", {"model": "a"}).put(["x"], np.ones((1, 3), np.float32))
    ours = EmbeddingStore(tmp_path / "s", {"model": "b"})
    assert not ours.get(["y"])[0].any()  # resets the folder and claims it for model b
    EmbeddingStore(tmp_path / "s", {"model": "b"}).put(["y"], np.full((1, 3), 2, np.float32))
    found, got = ours.get(["y"])
    assert found.tolist() == [True] and got[0].tolist() == [2.0, 2.0, 2.0]
