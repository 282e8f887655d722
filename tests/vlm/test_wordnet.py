"""WordNet farthest-first selection against a direct float64 implementation of METHODS.md 4."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from negvocab.build.wordnet import build_wordnet_vocabulary, farthest_first, quantile_top_k
from negvocab.errors import InputError
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
    # any pool size is a prefix of the full ranking, built from the same embeddings
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
    import negvocab.cli.build_wordnet as cmd
    import negvocab.labels.candidates as cands
    from negvocab.cli import app

    monkeypatch.setattr(cmd, "load_vlm", lambda *a, **k: wn_vlm)
    monkeypatch.setattr(cands, "wordnet_candidates", lambda preset="neglabel", **k: list(CANDIDATES))
    out = tmp_path / "wn.json"
    result = CliRunner().invoke(
        app, ["build", "wordnet", "--random-weights", "--sizes", "3,6", "-t", "single", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    three, six = Vocabulary.load(tmp_path / "wn-M3.json"), Vocabulary.load(tmp_path / "wn-M6.json")
    assert three.labels == six.labels[:3] and len(six) == 6
    assert "RANDOM weights" in result.output
    bad = CliRunner().invoke(app, ["build", "wordnet", "--random-weights", "--size", "99", "-t", "single", "-o", str(out)])
    assert bad.exit_code == 2 and "exceeds" in bad.output


def test_cli_needs_weights_or_random_flag(tmp_path):
    from negvocab.cli import app

    result = CliRunner().invoke(app, ["build", "wordnet", "-m", "ViT-B-32", "-o", str(tmp_path / "x.json")])
    assert result.exit_code == 2
    assert "--pretrained /path/to/open_clip_pytorch_model.bin" in result.output
