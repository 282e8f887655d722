"""Mined negatives: a constructed case with known answers, a float64 brute force, the transductive guard."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.builders.mined import build_mined_vocabulary, image_overlap, mine_evidence, transductive_check
from negvocab.core.errors import InputError
from negvocab.labels.imagenet import IdClasses
from negvocab.vlm.images import ImageEmbeddings
from negvocab.vocab import Vocabulary
from negvocab.vocab.index import StreamingSearch, knn, merge_topk

D = 16
ID_NAMES = ["goldfish", "tench", "hen", "ostrich"]  # axes 0-3
# candidate -> direction: axes 4-9 are OOD concepts; "koi" sits next to goldfish; "tench" is an ID name
POOL = {
    "aurora": [(4, 1.0)],
    "canyon": [(5, 1.0)],
    "glacier": [(6, 1.0)],
    "violin": [(7, 1.0)],
    "kettle": [(8, 1.0)],
    "ladder": [(9, 1.0)],
    "koi": [(0, 0.9), (10, 0.44)],
    "tench": [(1, 1.0)],
    "mossy rock": [(4, 0.6), (5, 0.8)],
}
# images: (how many, direction); ID-like ones along the class axes, OOD ones along concepts
IMAGES = [
    (5, [(0, 1.0)]),
    (5, [(2, 1.0)]),
    (6, [(4, 1.0), (0, 0.1)]),
    (3, [(5, 1.0), (1, 0.3)]),
    (2, [(6, 1.0), (2, 0.5)]),
]


def vec(parts, rng=None, noise=0.0):
    v = np.zeros(D)
    for axis, value in parts:
        v[axis] = value
    if rng is not None:
        v = v + noise * rng.standard_normal(D)
    return (v / np.linalg.norm(v)).astype(np.float32)


def unit(rng, n, d):
    x = rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


class FakeVLM:
    """Text embeddings from a table (the constructed case); records what it was asked to encode."""

    identity = {"name": "table", "weights": "none"}
    random_weights = False

    def __init__(self):
        self.table = {name: vec([(i, 1.0)]) for i, name in enumerate(ID_NAMES)}
        self.table.update({k: vec(v) for k, v in POOL.items()})
        self.asked: list[list[str]] = []

    def encode_text(self, labels, templates, *, pos=None, batch_size=None, progress=None):
        self.asked.append(list(labels))
        return np.stack([self.table[lab] for lab in labels])


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    rows, paths = [], []
    for n, parts in IMAGES:
        for _ in range(n):
            rows.append(vec(parts, rng, 0.05))
            paths.append(f"/data/img{len(paths):03d}.png")
    return ImageEmbeddings(paths=paths, embeddings=np.stack(rows))


def brute_force(img, ids, cand, k, q):
    """Steps 1-3 written out directly in float64."""
    img, ids, cand = (np.asarray(a, np.float64) for a in (img, ids, cand))
    s = (img @ ids.T).max(axis=1)
    tau = np.quantile(s, q)
    w = np.maximum(tau - s, 0)
    ev = np.zeros(len(cand))
    votes = np.zeros(len(cand), int)
    for i in np.flatnonzero(w > 0):
        for c in np.argsort(-(cand @ img[i]), kind="stable")[:k]:
            ev[c] += w[i]
            votes[c] += 1
    return ev, votes, tau


@pytest.mark.parametrize("k,q,chunk", [(1, 0.5, 4), (3, 0.5, 1000), (2, 0.8, 7), (5, 1.0, 50)])
def test_evidence_matches_brute_force_on_random_embeddings(k, q, chunk):
    rng = np.random.default_rng(k * 10 + chunk)
    img, ids, cand = unit(rng, 120, 24), unit(rng, 9, 24), unit(rng, 200, 24)
    found = mine_evidence(img, ids, (cand[i : i + chunk] for i in range(0, len(cand), chunk)), top_k=k, quantile=q)
    ev, votes, tau = brute_force(img, ids, cand, k, q)
    assert found.threshold == pytest.approx(tau)
    np.testing.assert_allclose(found.evidence, ev, atol=1e-6)
    np.testing.assert_array_equal(found.votes, votes)
    expected = sorted(np.flatnonzero(ev > 0), key=lambda c: (-ev[c], -votes[c], c))
    assert found.ranking().tolist() == expected
    assert found.index["queries"] == int((found.weights > 0).sum())


def test_the_images_point_to_the_known_concepts(images):
    vlm = FakeVLM()
    ids = IdClasses.from_names(ID_NAMES)
    vocab = build_mined_vocabulary(
        vlm, images, list(POOL), 3, id_classes=ids, top_k=1, threshold=0.7, templates="single"
    )
    # 6 images near aurora (furthest from ID), 3 near canyon, 2 near glacier (half hen: least OOD)
    assert vocab.labels == ["aurora", "canyon", "glacier"] and vocab.source == "mined"
    assert [vocab.meta[x]["votes"] for x in vocab.labels] == [6, 3, 2]
    assert vocab.settings["ood_looking_images"] == 11 and vocab.settings["images"] == 21
    # the ID name never reaches the search; ID-like images vote for nothing
    assert vlm.asked[0] == ID_NAMES and all("tench" not in chunk for chunk in vlm.asked[1:])
    assert vocab.settings["synonym_filter"]["removed"]["tench"]["rule"].startswith("clean-name")
    s = (images.embeddings.astype(np.float64) @ np.stack([vlm.table[n] for n in ID_NAMES]).T.astype(np.float64)).max(
        axis=1
    )
    for label, (lo, hi) in zip(vocab.labels, [(10, 16), (16, 19), (19, 21)], strict=True):
        assert vocab.meta[label]["evidence"] == pytest.approx(np.sum(0.7 - s[lo:hi]), abs=1e-6)
    # the default: the less ID-like half of the images (the 11th most ID-like image, a glacier one, weighs 0)
    half = build_mined_vocabulary(vlm, images, list(POOL), 3, id_classes=ids, top_k=1, templates="single")
    assert (
        half.labels == vocab.labels and half.meta["glacier"]["votes"] == 1 and half.settings["ood_looking_images"] == 10
    )
    assert [vocab.meta[x]["rank"] for x in vocab.labels] == [1, 2, 3]
    two = build_mined_vocabulary(
        vlm, images, list(POOL), None, id_classes=ids, top_k=2, threshold=0.7, templates="single"
    )
    assert "mossy rock" in two.labels[:3]  # the second choice of both the aurora and the canyon images
    assert "koi" not in two  # near an ID class: only ID-like images are close to it, and they do not vote
    with pytest.raises(InputError, match="only 3 candidates got a vote"):
        build_mined_vocabulary(vlm, images, list(POOL), 5, id_classes=ids, top_k=1, threshold=0.7, templates="single")
    with pytest.raises(InputError, match="none of the 21 images looks OOD"):
        build_mined_vocabulary(vlm, images, list(POOL), 3, id_classes=ids, threshold=-1.0, templates="single")


def test_chunking_does_not_change_the_result(images):
    ids = IdClasses.from_names(ID_NAMES)
    a = build_mined_vocabulary(
        FakeVLM(), images, list(POOL), None, id_classes=ids, top_k=2, text_chunk_size=1, templates="single"
    )
    b = build_mined_vocabulary(
        FakeVLM(), images, list(POOL), None, id_classes=ids, top_k=2, text_chunk_size=1000, templates="single"
    )
    assert a.labels == b.labels and a.meta == b.meta


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_indexes_report_recall_against_exact(kind):
    rng = np.random.default_rng(7)
    keys, q = unit(rng, 3000, 32), unit(rng, 300, 32)
    search = StreamingSearch(q, 10, index=kind, train_size=1000, recall_sample=300, nprobe=4, expected_keys=3000)
    for i in range(0, 3000, 700):
        search.add(keys[i : i + 700])
    _, I = search.result()
    _, I0 = knn(q, keys, 10)
    true = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I, I0, strict=True)])
    assert search.recall == pytest.approx(true)  # every query is in the sample here
    assert 0.05 < search.recall <= 1.0
    assert search.describe()["recall_at_k"] == round(true, 4)


def test_approximate_mining_finds_the_known_concepts(images):
    ids = IdClasses.from_names(ID_NAMES)
    exact = build_mined_vocabulary(FakeVLM(), images, list(POOL), 3, id_classes=ids, top_k=1, templates="single")
    approx = build_mined_vocabulary(
        FakeVLM(), images, list(POOL), 3, id_classes=ids, top_k=1, templates="single", index="hnsw"
    )
    assert approx.labels == exact.labels
    assert approx.settings["index"]["kind"] == "hnsw" and approx.settings["index"]["recall_at_k"] == 1.0


def test_merge_topk_keeps_the_best_of_both():
    D, I = np.array([[0.9, 0.5]]), np.array([[3, 1]])
    d, i = np.array([[0.7, 0.5]]), np.array([[8, 9]])
    DD, II = merge_topk(D, I, d, i, 3)
    assert II.tolist() == [[3, 8, 1]] and DD.tolist() == [[0.9, 0.7, 0.5]]  # a tie keeps the earlier key


# -- the transductive guard ---------------------------------------------------------------------
@pytest.fixture
def folders(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(1)
    mine, ood = tmp_path / "stream", tmp_path / "ninco"
    mine.mkdir()
    ood.mkdir()
    for i in range(4):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(mine / f"s{i}.png")
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(ood / f"o{i}.png")
    return mine, ood


def test_overlap_by_path_and_by_content(folders, tmp_path):
    mine, ood = folders
    paths = sorted(str(p) for p in mine.iterdir())
    ood_paths = sorted(str(p) for p in ood.iterdir())
    assert image_overlap(paths, ood_paths) == []
    shutil.copyfile(ood / "o2.png", mine / "renamed.png")  # same bytes, another name
    assert image_overlap([*paths, str(mine / "renamed.png")], ood_paths) == [str(mine / "renamed.png")]
    assert image_overlap([str(ood / ".." / "ninco" / "o1.png")], ood_paths) == [str(ood / ".." / "ninco" / "o1.png")]
    record, caveats = transductive_check(paths, None)
    assert record["checked"] is False and caveats == {}
    record, caveats = transductive_check(
        [*paths, str(mine / "renamed.png")], {"NINCO": str(ood), "other": str(mine / "s0.png")}
    )
    assert record["overlap"] == {"NINCO": 1, "other": 1} and "NINCO" in caveats["transductive"]
    record, _ = transductive_check(paths, [str(ood), f"mine={mine}"])  # bare paths are named after their folder
    assert record["overlap"] == {"ninco": 0, "mine": 4}
    record, _ = transductive_check(paths, paths[:2])  # a list of image files is one set
    assert record["overlap"] == {"ood": 2}


def test_transductive_flag_is_kept_by_merge_and_derived_vocabularies(folders, images):
    mine, ood = folders
    shutil.copyfile(ood / "o0.png", mine / "copy.png")
    emb = ImageEmbeddings(
        paths=sorted(str(p) for p in mine.iterdir()) + images.paths[5:], embeddings=images.embeddings[:21]
    )
    ids = IdClasses.from_names(ID_NAMES)
    vocab = build_mined_vocabulary(
        FakeVLM(), emb, list(POOL), 3, id_classes=ids, top_k=1, templates="single", ood=str(ood)
    )
    note = vocab.settings["caveats"]["transductive"]
    assert vocab.settings["deployable"] is False and "ninco" in note and "1 of 21" in note
    clean = build_mined_vocabulary(
        FakeVLM(), images, list(POOL), 3, id_classes=ids, top_k=1, templates="single", ood=str(ood)
    )
    assert "caveats" not in clean.settings and clean.settings["transductive_check"]["overlap"] == {"ninco": 0}
    other = Vocabulary.from_labels(["sofa", "aurora"], source="file")
    for merged in (Vocabulary.union(other, vocab), Vocabulary.union(Vocabulary.union(vocab, other), other)):
        assert merged.settings["caveats"] == {"transductive": note} and merged.settings["deployable"] is False
    assert "caveats" not in Vocabulary.union(other, clean).settings
    assert vocab.head(2).settings["caveats"] == {"transductive": note}


def test_transductive_flag_reaches_the_results_table(images):
    from negvocab.evaluation.evaluate import evaluate_vocabularies
    from tests.vlm.conftest import make_tiny_vlm

    vlm = make_tiny_vlm(cache=False)
    rng = np.random.default_rng(3)
    id_e = ImageEmbeddings(paths=[f"id{i}" for i in range(6)], embeddings=unit(rng, 6, 32))
    ood_e = ImageEmbeddings(paths=[f"ood{i}" for i in range(6)], embeddings=unit(rng, 6, 32))
    mined = Vocabulary.from_labels(
        ["aurora", "canyon"],
        source="mined",
        settings={"caveats": {"transductive": "transductive: test"}, "deployable": False},
    )
    ev = evaluate_vocabularies(
        vlm, id_e, ood_e, {"mined": mined}, id_classes=IdClasses.from_names(ID_NAMES), templates="single", n_boot=0
    )
    row = ev.rows[0]
    assert "caveats" in row, sorted(row)  # a missing column fails, never skips (issue 34)
    assert row["deployable"] is False and "transductive" in row["caveats"]


def test_cli_mines_with_a_real_model_and_flags_overlap(folders, tmp_path, monkeypatch):
    import negvocab.cli.build_offline as cmd
    from negvocab.cli import app
    from tests.vlm.conftest import make_tiny_vlm

    mine, ood = folders
    shutil.copyfile(ood / "o3.png", mine / "copy.png")
    vlm = make_tiny_vlm(tmp_path)
    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: vlm)
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(POOL) + "\n", encoding="utf-8")
    classes = tmp_path / "classes.txt"
    classes.write_text("\n".join(ID_NAMES) + "\n", encoding="utf-8")
    out = tmp_path / "mined.json"
    args = ["build", "mined", "--random-weights", "--images", str(mine), "--pool", str(pool), "-M", "2", "-k", "2"]
    args += ["--id-classes", str(classes), "-t", "single", "--ood", f"NINCO={ood}", "-o", str(out)]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "NOT DEPLOYABLE" in r.output and "RANDOM weights" in r.output
    got = Vocabulary.load(out)
    assert len(got) == 2 and got.settings["deployable"] is False and got.settings["pool"] == str(pool)
    assert got.random_weights is True and got.settings["random_weights"] is True  # results tables mark it
    emb = vlm.encode_images(str(mine))
    expected = build_mined_vocabulary(
        vlm,
        emb,
        str(pool),
        2,
        id_classes=IdClasses.from_names(ID_NAMES, dataset=f"custom:{classes.name}"),
        top_k=2,
        templates="single",
    )
    assert got.labels == expected.labels
    listed = tmp_path / "stream.txt"
    listed.write_text("".join(f"{p}\n" for p in emb.paths), encoding="utf-8")  # an image list works as the folder does
    again = build_mined_vocabulary(
        vlm,
        str(listed),
        str(pool),
        2,
        id_classes=IdClasses.from_names(ID_NAMES, dataset=f"custom:{classes.name}"),
        top_k=2,
        templates="single",
    )
    assert again.labels == expected.labels
    bad = CliRunner().invoke(
        app, ["build", "mined", "--random-weights", "--images", str(mine), "--index", "lsh", "-o", str(out)]
    )
    assert bad.exit_code == 2 and "--index = 'lsh': must be one of exact, ivf, hnsw" in bad.stderr


# -- guards that cannot be bypassed (issue 23) ----------------------------------------------------
def test_two_ood_sets_of_one_name_are_refused_not_one_dropped(folders, images):
    """Before: the second set of a name replaced the first, so when the dropped one held the mined
    images the vocabulary came out deployable (overlap 0)."""
    mine, ood = folders
    paths = sorted(str(p) for p in mine.iterdir())
    for given in ([f"x={mine}", f"x={ood}"], [f"x={ood}", str(ood.parent / "x")], [f"a={mine}", "b="]):
        with pytest.raises(InputError, match="two OOD sets are named 'x'|an empty path") as e:
            transductive_check(paths, given)
        assert "\n" not in str(e.value)
    ids = IdClasses.from_names(ID_NAMES)
    with pytest.raises(InputError, match="two OOD sets are named 'ninco'"):
        build_mined_vocabulary(
            FakeVLM(), images, list(POOL), 3, id_classes=ids, templates="single", ood=[str(ood), f"ninco={mine}"]
        )


def test_the_check_sees_images_the_encoder_leaves_out(folders, tmp_path):
    """An OOD image among the mined ones that cannot be decoded is dropped from the embeddings; the
    guard runs on every listed file first, so the overlap is still found (by content)."""
    from tests.vlm.conftest import make_tiny_vlm

    mine, ood = folders
    broken = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64  # a cut-off PNG: listed as an image, not decodable
    (ood / "cut.png").write_bytes(broken)
    (mine / "copy-of-cut.png").write_bytes(broken)
    vlm = make_tiny_vlm(tmp_path)
    assert "copy-of-cut.png" not in " ".join(vlm.encode_images(str(mine)).paths)  # the encoder drops it
    vocab = build_mined_vocabulary(
        vlm,
        str(mine),
        list(POOL),
        1,
        id_classes=IdClasses.from_names(ID_NAMES),
        templates="single",
        ood={"NINCO": str(ood)},
    )
    assert vocab.settings["transductive_check"]["overlap"] == {"NINCO": 1} and vocab.settings["deployable"] is False


def test_a_nan_or_infinite_threshold_is_refused():
    rng = np.random.default_rng(0)
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(InputError, match="threshold must be a finite number"):
            mine_evidence(unit(rng, 4, D), unit(rng, 2, D), [unit(rng, 3, D)], threshold=bad)


def test_ctrl_c_ends_build_mined_with_nothing_written(tmp_path):
    """A real `build mined` process (random ViT-B-32 on the CPU) interrupted while it encodes the
    pool: exit 130, one line, no vocabulary file, and the line says how much the cache kept."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from PIL import Image

    rng = np.random.default_rng(0)
    (tmp_path / "s").mkdir()
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(tmp_path / "s" / f"{i}.png")
    (tmp_path / "pool.txt").write_text("".join(f"thing number {i}\n" for i in range(20_000)), encoding="utf-8")
    (tmp_path / "classes.txt").write_text("\n".join(ID_NAMES) + "\n", encoding="utf-8")
    out, cache = tmp_path / "m.json", tmp_path / "cache"
    cmd = [sys.executable, "-c", "from negvocab.cli import main; main()", "build", "mined", "--random-weights",
           "--device", "cpu", "--images", str(tmp_path / "s"), "--pool", str(tmp_path / "pool.txt"),
           "--id-classes", str(tmp_path / "classes.txt"),
           "-t", "single", "--cache-dir", str(cache), "-o", str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    shards = lambda: list((cache / "text").rglob("*.npy")) if (cache / "text").is_dir() else []  # noqa: E731
    while proc.poll() is None and time.monotonic() < deadline and len(shards()) < 2:  # ID names, then a pool chunk
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and not out.exists()
    line = err.strip().splitlines()[-1]
    assert (
        line.startswith("interrupted; re-run the same command to resume (kept: ")
        and "text embeddings in the cache" in line
    ), err


HOLD_FILE = (
    "import sys; from negvocab.core.outdir import claim_file; c = claim_file(sys.argv[1]); "
    "print('held', flush=True); sys.stdin.read(); c.release()"
)


def test_cli_a_file_another_mined_run_writes_is_refused_at_once(folders, tmp_path):
    """build mined claims its output through negvocab.core.outdir: a second run refuses before any model
    loads, and the file is free again (no lock file left) when the first run ends."""
    import os
    import subprocess
    import sys

    from negvocab.cli import app

    mine, _ = folders
    out = tmp_path / "mined.json"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_FILE, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        r = CliRunner().invoke(app, ["build", "mined", "--random-weights", "--images", str(mine), "-o", str(out)])
        assert (
            r.exit_code == 2
            and r.stderr.strip()
            == f"error: {out} is being written by another negvocab run; wait for it to finish or give another -o"
        ), r.output
    finally:
        holder.communicate("", timeout=30)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    from negvocab.core.outdir import claim_file

    claim_file(out).release()  # free again


class _NoWork(FakeVLM):
    """A VLM that fails the test if anything is encoded."""

    def encode_images(self, *a, **k):
        raise AssertionError("images were encoded before the arguments were checked")

    def encode_text(self, *a, **k):
        raise AssertionError("text was encoded before the arguments were checked")


@pytest.mark.parametrize(
    ("bad", "param"),
    [
        ({"top_k": 0}, "top_k"),
        ({"top_k": 2.5}, "top_k"),
        ({"quantile": 0.0}, "quantile"),
        ({"quantile": 50}, "quantile"),
        ({"threshold": float("nan")}, "threshold"),
        ({"index": "annoy"}, "index"),
        ({"text_chunk_size": 0}, "text_chunk_size"),
        ({"size": 0}, "size"),
    ],
)
def test_bad_mining_settings_fail_before_any_pool_or_image_work(bad, param, monkeypatch):
    import negvocab.builders.mined as mined

    def no_pool(*a, **k):
        raise AssertionError("the pool was read before the arguments were checked")

    monkeypatch.setattr(mined, "mining_pool", no_pool)
    kw = {"id_classes": IdClasses.from_names(ID_NAMES), "templates": "single", **bad}
    size = kw.pop("size", 3)
    with pytest.raises(InputError) as e:
        build_mined_vocabulary(_NoWork(), ["/data/a.png", "/data/b.png"], list(POOL), size, **kw)
    assert e.value.param == (param,) and param in str(e.value) and "\n" not in str(e.value)
    # the same settings, valid, reach the work (and so the patched pool)
    with pytest.raises(AssertionError, match="pool was read"):
        build_mined_vocabulary(_NoWork(), ["/data/a.png"], list(POOL), 3, id_classes=kw["id_classes"])
