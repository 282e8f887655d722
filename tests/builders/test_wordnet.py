"""WordNet farthest-first selection against a direct float64 implementation of
docs/methods.md#wordnet-farthest-first."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.builders.wordnet import build_wordnet_vocabulary, farthest_first, quantile_top_k
from negvocab.core.errors import InputError
from negvocab.labels.candidates import Candidate
from negvocab.vocab import Vocabulary
from tests.vlm.conftest import make_tiny_vlm


def direct_distances(cand, ids, q):
    """d(c) = numpy quantile (linear) over all ID similarities, in float64."""
    sims = cand.astype(np.float64) @ ids.astype(np.float64).T
    return np.quantile(sims, q, axis=1)


def unit(rng, n, d):
    x = rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("n_id,q", [(1000, 0.95), (1000, 0.5), (37, 0.95), (10, 1.0), (5, 0.01), (1, 0.95)])
def test_farthest_first_matches_direct_quantile(n_id, q):
    rng = np.random.default_rng(n_id)
    cand, ids = unit(rng, 400, 24), unit(rng, n_id, 24)
    order, d = farthest_first(cand, ids, q)
    ref = direct_distances(cand, ids, q)
    np.testing.assert_allclose(d, ref, atol=1e-6)
    assert sorted(order.tolist()) == list(range(400)) and order.dtype == np.int64
    assert (np.diff(ref[order]) >= -1e-6).all()  # ascending under the exact distances too
    assert (np.diff(d[order]) >= 0).all()


def test_top_k_needed_for_the_paper_setting():
    assert quantile_top_k(1000, 0.95) == 51  # ceil(0.05 * 1000) + 1


def test_ties_keep_index_order():
    rng = np.random.default_rng(3)
    ids = unit(rng, 50, 8)
    base = unit(rng, 3, 8)
    cand = np.concatenate([base[[1, 0, 1, 2, 0]]])  # rows 0 and 2 are equal, rows 1 and 4 too
    order, d = farthest_first(cand, ids)
    pos = {int(i): k for k, i in enumerate(order)}
    assert pos[0] < pos[2] and pos[1] < pos[4]


def test_percent_instead_of_fraction_is_caught():
    x = np.eye(2, dtype=np.float32)
    with pytest.raises(InputError, match="0.95"):
        farthest_first(x, x, 95)


CANDIDATES = [
    Candidate("meadow", "n", "noun.object", "meadow.n.01"),
    Candidate("goldfish", "n", "noun.animal", "goldfish.n.01"),  # an ImageNet-1k class name
    Candidate("cloud", "n", "noun.phenomenon", "cloud.n.01"),
    Candidate("carassius auratus", "n", "noun.animal", "goldfish.n.01"),  # a WordNet synonym of one
    Candidate("red", "a", "adj.all", "red.s.01"),
    Candidate("wooden", "a", "adj.all", "wooden.a.01"),
    Candidate("happiness", "n", "noun.feeling", "happiness.n.01"),
    Candidate("quick", "s", "adj.all", "quick.s.01"),
    Candidate("galaxy", "n", "noun.object", "galaxy.n.01"),
    Candidate("pebble", "n", "noun.object", "pebble.n.01"),
    Candidate("tall", "a", "adj.all", "tall.a.01"),
    Candidate("oblivion", "n", "noun.state", "oblivion.n.01"),
]


@pytest.fixture(scope="module")
def wn_vlm(tmp_path_factory):
    return make_tiny_vlm(tmp_path_factory.mktemp("wn"))


def test_builder_equals_direct_selection(wn_vlm):
    from negvocab.labels.imagenet import imagenet1k
    from negvocab.labels.synonyms import SynonymFilter

    vocab = build_wordnet_vocabulary(wn_vlm, None, candidates=CANDIDATES, templates="single")
    texts = [c.text for c in CANDIDATES]
    cand = wn_vlm.encode_text(texts, "single")
    ids = wn_vlm.encode_text(list(imagenet1k().names), "single")
    ref = direct_distances(cand, ids, 0.95)
    filt = SynonymFilter()
    expected = [texts[i] for i in np.argsort(ref, kind="stable") if not filt.is_id(texts[i])]
    assert vocab.labels == expected
    assert "goldfish" not in vocab and "carassius auratus" not in vocab
    assert vocab.settings["synonym_filter"]["removed_count"] == 2
    assert [vocab.meta[lab]["rank"] for lab in vocab.labels] == list(range(1, len(vocab) + 1))
    for lab in vocab.labels:
        assert vocab.meta[lab]["distance"] == pytest.approx(ref[texts.index(lab)], abs=1e-6)
    assert vocab.meta["red"]["pos"] == "a" and vocab.meta["red"]["synset"] == "red.s.01"
    assert vocab.settings["random_weights"] is True and vocab.settings["percentile"] == 0.95
    assert vocab.settings["model"]["weights"] == wn_vlm.identity["weights"]
    # any vocabulary size M is a prefix of the full ranking, built from the same embeddings
    five = build_wordnet_vocabulary(wn_vlm, 5, candidates=CANDIDATES, templates="single")
    assert five.labels == vocab.head(5).labels == expected[:5]
    with pytest.raises(InputError, match="only 10"):
        build_wordnet_vocabulary(wn_vlm, 11, candidates=CANDIDATES, templates="single")


def test_ratio_mode_takes_nouns_and_adjectives_separately(wn_vlm):
    full = build_wordnet_vocabulary(wn_vlm, None, candidates=CANDIDATES, templates="single")
    vocab = build_wordnet_vocabulary(wn_vlm, ratio=0.5, candidates=CANDIDATES, templates="single")
    # pool: 8 nouns -> int(0.5 * 8) = 4; 4 adjectives (a and s) -> 2
    assert vocab.settings["ratio_counts"] == {"n": 4, "a": 2}
    nouns = [lab for lab in full.labels if full.meta[lab]["pos"] == "n"][:4]
    adjs = [lab for lab in full.labels if full.meta[lab]["pos"] in ("a", "s")][:2]
    assert set(vocab.labels) == set(nouns + adjs)
    assert vocab.labels == [lab for lab in full.labels if lab in set(nouns + adjs)]


def test_neglabel_templates_use_part_of_speech(wn_vlm):
    vocab = build_wordnet_vocabulary(wn_vlm, None, candidates=CANDIDATES, templates="neglabel")
    texts = [c.text for c in CANDIDATES]
    red = wn_vlm.encode_text(["red"], ["This is a {} photo"])
    from negvocab.labels.imagenet import imagenet1k

    ids = wn_vlm.encode_text(list(imagenet1k().names), ["the nice {}"])
    assert vocab.meta["red"]["distance"] == pytest.approx(direct_distances(red, ids, 0.95)[0], abs=1e-6)
    assert set(vocab.labels) <= set(texts)


def test_cli_writes_several_sizes(wn_vlm, tmp_path, monkeypatch):
    import negvocab.builders.wordnet as wn_builder
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app

    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: wn_vlm)
    monkeypatch.setattr(wn_builder, "wordnet_candidates", lambda preset="neglabel", **k: list(CANDIDATES))
    out = tmp_path / "wn.json"
    result = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--sizes", "3,6", "-t", "single", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    three, six = Vocabulary.load(tmp_path / "wn-M3.json"), Vocabulary.load(tmp_path / "wn-M6.json")
    assert three.labels == six.labels[:3] and len(six) == 6
    assert "RANDOM weights" in result.output
    bad = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--size", "99", "-t", "single", "-o", str(out)]
    )
    assert bad.exit_code == 2 and "exceeds" in bad.output


def test_cli_ranks_against_custom_id_classes_as_the_api_does(wn_vlm, tmp_path, monkeypatch):
    import negvocab.builders.wordnet as wn_builder
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app
    from negvocab.labels.imagenet import IdClasses

    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: wn_vlm)
    monkeypatch.setattr(wn_builder, "wordnet_candidates", lambda preset="neglabel", **k: list(CANDIDATES))
    names = tmp_path / "classes.txt"
    names.write_text("red\nmeadow\n", encoding="utf-8")
    out = tmp_path / "wn.json"
    result = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--id-classes", str(names), "-t", "single", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    expected = build_wordnet_vocabulary(
        wn_vlm, None, id_classes=IdClasses.from_names(["red", "meadow"]), templates="single"
    )
    got = Vocabulary.load(out)
    assert got.labels == expected.labels and "red" not in got.labels  # ranked against, and filtered by, these classes
    assert got.labels != build_wordnet_vocabulary(wn_vlm, None, templates="single").labels


def test_cli_needs_weights_or_random_flag(tmp_path):
    from negvocab.cli import app

    result = CliRunner().invoke(app, ["build", "wordnet", "-m", "ViT-B-32", "-o", str(tmp_path / "x.json")])
    assert result.exit_code == 2
    assert "--pretrained /path/to/open_clip_pytorch_model.bin" in result.output


def _no_model(*_a, **_k):
    raise AssertionError("the model must not be loaded")


def test_cli_ranks_a_candidates_file_as_the_api_does(wn_vlm, tmp_path, monkeypatch):
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app

    pool = tmp_path / "pool.tsv"
    rows = [f"{c.text}\t{c.pos}\t{c.lexname}\t{c.synset}\t{c.offset}\n" for c in CANDIDATES]
    pool.write_text("text\tpos\tlexname\tsynset\toffset\n" + "".join(rows), encoding="utf-8")
    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: wn_vlm)
    out = tmp_path / "wn.json"
    result = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--pool", str(pool), "-t", "neglabel", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    got = Vocabulary.load(out)
    expected = build_wordnet_vocabulary(wn_vlm, None, candidates=CANDIDATES, templates="neglabel")
    assert got.labels == expected.labels and got.meta == expected.meta  # parts of speech kept: adjective templates
    assert got.settings["candidates_file"] == str(pool) and got.settings["preset"] == "custom candidates"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--quantile", "95"], "a fraction: 0.95, not a percent"),
        (["--ratio", "1.5"], "builder 'wordnet': --ratio = 1.5: must be a fraction in (0, 1]"),
        (["--size", "0"], "--size = 0: must be a positive integer"),
        (["--sizes", "0,5"], "vocabulary sizes must be >= 1, got 0"),
        (["--size", "5", "--sizes", "2,3"], "give --size (one vocabulary) or --sizes (several), not both"),
        (["--sizes", ""], "no vocabulary sizes given"),
        (["--sizes", "10.5"], "vocabulary size '10.5' is not an integer"),
        (["-t", "paper9"], "unknown template preset 'paper9'"),
        (["--preset", "negmine"], "--preset = 'negmine': must be a candidate preset, one of neglabel, all"),
        (["--pool", "missing.tsv"], "missing.tsv: no such candidates file"),
        (["--pool", "{pool}", "--sizes", "2,50"], "--size 50 exceeds the 3 candidates"),
    ],
)
def test_cli_checks_options_before_loading_the_model(tmp_path, monkeypatch, args, message):
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app

    pool = tmp_path / "pool.txt"
    pool.write_text("meadow\ncloud\npebble\n", encoding="utf-8")
    monkeypatch.setattr(cmd, "load_vlm", _no_model)
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{pool}", str(pool)) for a in args]
    result = CliRunner().invoke(app, ["build", "wordnet", "--random-weights", *args, "-o", str(tmp_path / "x.json")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
    assert not (tmp_path / "x.json").exists()


def test_quantile_is_checked_before_any_embedding(monkeypatch):
    class NoModel:
        def encode_text(self, *a, **k):
            raise AssertionError("encoded before the quantile was checked")

    with pytest.raises(InputError, match="not a percent"):
        build_wordnet_vocabulary(NoModel(), 5, quantile=95, candidates=CANDIDATES)


@pytest.mark.parametrize(
    ("kw", "param"),
    [({"size": 0}, "size"), ({"size": 2.5}, "size"), ({"size": True}, "size"), ({"candidates": []}, "candidates")],
)
def test_size_and_an_empty_pool_are_checked_before_any_embedding(kw, param):
    class NoModel:
        def encode_text(self, *a, **k):
            raise AssertionError("encoded before the arguments were checked")

    with pytest.raises(InputError) as e:
        build_wordnet_vocabulary(NoModel(), **{"candidates": CANDIDATES, **kw})
    assert e.value.param == (param,) and param in str(e.value)


def test_several_pool_sizes_cost_one_embedding_pass(tmp_path, monkeypatch):
    import negvocab.builders.wordnet as wn_builder
    import negvocab.cli.build_wordnet as cmd
    import negvocab.vlm.model as model_mod
    import negvocab.vlm.text as text_mod
    from negvocab.cli import app
    from negvocab.labels.imagenet import imagenet1k

    vlm = make_tiny_vlm(tmp_path)  # an empty cache
    seen: list[str] = []
    real = text_mod.encode_prompts
    spy = lambda v, prompts, **kw: seen.extend(prompts) or real(v, prompts, **kw)  # noqa: E731
    monkeypatch.setattr(text_mod, "encode_prompts", spy)  # where encode_labels looks it up
    monkeypatch.setattr(model_mod, "encode_prompts", spy)  # and VLM.encode_text
    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: vlm)
    monkeypatch.setattr(wn_builder, "wordnet_candidates", lambda preset="neglabel", **k: list(CANDIDATES))
    out = tmp_path / "wn-{size}.json"
    result = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--sizes", "2,4,8", "-t", "single", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    # every candidate and every distinct ID name once ("goldfish" is both), nothing more
    expected = {f"a photo of a {t}." for t in [c.text for c in CANDIDATES] + list(imagenet1k().names)}
    assert len(seen) == len(expected) and set(seen) == expected
    heads = [Vocabulary.load(tmp_path / f"wn-{m}.json").labels for m in (2, 4, 8)]
    assert heads[0] == heads[1][:2] and heads[1] == heads[2][:4]


@pytest.mark.gpu
@pytest.mark.parametrize("backend", ["auto", "torch"])
def test_farthest_first_on_cuda_matches_direct_quantile(backend):
    rng = np.random.default_rng(7)
    cand, ids = unit(rng, 5000, 64), unit(rng, 1000, 64)
    order, d = farthest_first(cand, ids, 0.95, device="cuda", backend=backend)
    np.testing.assert_allclose(d, direct_distances(cand, ids, 0.95), atol=1e-5)
    cpu_order, _ = farthest_first(cand, ids, 0.95, device="cpu", backend="torch")
    assert (order == cpu_order).mean() > 0.99  # only near-ties may swap


def test_cli_unwritable_output_fails_before_the_model_loads(tmp_path, monkeypatch):
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app

    monkeypatch.setattr(cmd, "load_vlm", _no_model)
    a_file = tmp_path / "a_file"
    a_file.write_text("x", encoding="utf-8")
    cases = [
        (["--size", "2", "-o", str(tmp_path)], f"{tmp_path}: it is a folder; give a file name"),
        (["--sizes", "2,3", "-o", str(a_file / "wn.json")], f"{a_file / 'wn-M2.json'}: {a_file} is not a folder"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(app, ["build", "wordnet", "--random-weights", *args])
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        assert result.stderr.strip() == f"error: cannot write {message}"


def test_cli_write_error_after_the_run_is_one_line(wn_vlm, tmp_path, monkeypatch):
    import negvocab.builders.wordnet as wn_builder
    import negvocab.cli.build_wordnet as cmd
    from negvocab.cli import app
    from negvocab.vocab import Vocabulary as V

    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: wn_vlm)
    monkeypatch.setattr(wn_builder, "wordnet_candidates", lambda preset="neglabel", **k: list(CANDIDATES))

    def disk_full(self, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(V, "save", disk_full)
    out = tmp_path / "wn.json"
    result = CliRunner().invoke(app, ["build", "wordnet", "--random-weights", "-t", "single", "-o", str(out)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().startswith(f"error: cannot write {out}: the disk is full (")  # free space named
