"""The CSP builder against CSP's own selection, re-implemented here in float64.

CSP's code: ``MengyuanChen21/NeurIPS2024-CSP`` at commit 3a7bdabeb89301053ba8bfc56b227b6d81b273e9,
``mmcls/models/classifiers/multi_modal.py`` (``CLIPScalableClassifier.__init__``: the candidate loop,
the conjugation, the template means, ``pos_neg_sim == 'neg_centroid'``) and
``mmcls/models/classifiers/class_names.py`` (``csp_templates``, ``preset_noun_prompt_templates``,
``preset_adj_prompt_templates``). The repository has NO licence file, so not a line of it is copied:
``csp_reference`` below is an independent float64 re-implementation that follows their code line by
line (the names in its comments are theirs), run on the same random embeddings as negvocab.

The embeddings: every prompt string gets a random vector (seeded by the string) whose norm varies by
+-20%, as CLIP's raw text features do: CSP averages the RAW prompt embeddings of a label and
normalises the mean, which differs from the mean of the normalised ones, so a builder that averages
normalised embeddings fails these tests.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

import negvocab
from negvocab.builders.csp import CSP_SUPERCLASSES, build_csp_vocabulary, conjugate, csp_candidates, csp_distances
from negvocab.core.errors import InputError
from negvocab.labels.candidates import sample_pool
from negvocab.labels.imagenet import IdClasses
from negvocab.vlm.templates import CSP, resolve_templates
from negvocab.vlm.text import ensemble
from tests.scoring.test_neglabel_exact import released_grouping

DIM = 24
ID_NAMES = [
    "tench", "goldfish", "rooster", "ostrich", "banjo", "barn", "canoe", "cello", "dam", "igloo",
    "kimono", "lighter", "mailbox", "obelisk", "pier", "quilt", "rifle", "sandal", "teapot", "valley",
]  # fmt: skip


def _vec(prompt: str) -> np.ndarray:
    """A random raw text feature for one prompt string: a random direction, a norm in [0.8, 1.2]
    (float64, the same in both implementations)."""
    seed = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(DIM)
    return v / np.linalg.norm(v) * rng.uniform(0.8, 1.2)


class PromptVLM:
    """A stand-in VLM whose model gives :func:`_vec` for a prompt: a label's prompts are reduced as
    negvocab's encoder does (rows normalised for ``unit_mean``, raw for ``raw_mean``; then
    :func:`negvocab.vlm.text.ensemble`)."""

    identity = {"name": "prompt-vectors"}
    random_weights = True
    dim = DIM

    def encode_text(self, labels, templates="paper8", *, pos=None, batch_size=None, progress=None, reduce=None):
        tset = resolve_templates(templates).with_reduce(reduce)
        pos = [pos] * len(labels) if pos is None or isinstance(pos, str) else pos
        rows = []
        for x, p in zip(labels, pos, strict=True):
            prompts = torch.tensor(np.stack([_vec(t.format(x)) for t in tset.for_pos(p)]))
            if tset.reduce == "unit_mean":
                prompts = torch.nn.functional.normalize(prompts, dim=-1)
            rows.append(ensemble(prompts, 1, len(prompts))[0])
        return np.stack(rows)


def csp_reference(
    noun_lines,
    adj_lines,
    class_name,
    *,
    seed=0,
    neg_topk=0.15,
    pencentile=0.95,
    encode=_vec,
    csp_templates=None,
    features=None,
):
    """CSP's CLIPScalableClassifier.__init__ selection, float64: (selected labels, nouns ranked, adjs ranked).

    ``noun_lines``/``adj_lines`` are the lines of the noun and adjective files in the order CSP reads
    them (nouns first); ``encode(prompt)`` stands for ``clip_model.encode_text`` of one prompt. A dict
    ``features`` receives ``pos`` (self.text_features_pos) and ``neg`` (the selected self.text_features_neg)."""
    noun_prompt_templates = list(CSP["n"])  # preset_noun_prompt_templates
    preset_adj_prompt_templates = list(CSP["a"])
    prompt_templete = dict(adj=list(csp_templates or CSP_SUPERCLASSES), noun=noun_prompt_templates)
    # self.id_prompts: itertools.product(noun_prompt_templates, class_name), template-major
    id_prompts = [t.format(c) for t in noun_prompt_templates for c in class_name]
    text_features_pos = torch.tensor(np.stack([encode(p) for p in id_prompts]))
    text_features_pos = text_features_pos.view(-1, len(class_name), DIM).mean(dim=0)
    text_features_pos /= text_features_pos.norm(dim=-1, keepdim=True)

    words_noun, words_adj, names_noun, names_adj = [], [], [], []
    dedup = {}
    random.seed(seed)
    noun_length = adj_length = 0
    for filetype, lines in (("noun", noun_lines), ("adj", adj_lines)):
        for line in lines:
            line = line.replace("_", " ")
            if line.strip() in dedup:
                continue
            dedup[line.strip()] = None
            if filetype == "noun":
                noun_length += 1
                names_noun.append(line.strip())
                for template in prompt_templete[filetype]:
                    words_noun.append(template.format(line.strip()))
            else:
                adj_length += 1
                candidate = random.choice(prompt_templete[filetype]).format(line.strip())
                names_adj.append(candidate)
                for template in preset_adj_prompt_templates:
                    words_adj.append(template.format(candidate))
    feats = torch.tensor(np.stack([encode(w) for w in words_noun + words_adj]))
    noun_feats = feats[: len(words_noun)].view(-1, len(noun_prompt_templates), DIM).mean(dim=1)
    adj_feats = feats[len(words_noun) :].view(-1, len(preset_adj_prompt_templates), DIM).mean(dim=1)
    text_features_neg = torch.cat([noun_feats, adj_feats], dim=0)
    text_features_neg /= text_features_neg.norm(dim=-1, keepdim=True)

    tmp = text_features_neg @ text_features_pos.T  # one emb_batchsize block: the same values
    neg_sim = torch.quantile(tmp, q=pencentile, dim=-1)
    maximum = torch.max(tmp, dim=1)[0]
    neg_sim[maximum > 0.95] = 1.0
    # CSP's torch.argsort is not stable: ties (only the d = 1 copies here) keep the pool order in both
    ind_noun = torch.argsort(neg_sim[:noun_length], stable=True)
    ind_adj = torch.argsort(neg_sim[noun_length:], stable=True)
    nouns_ranked = [names_noun[i] for i in ind_noun]
    adjs_ranked = [names_adj[i] for i in ind_adj]
    selected = nouns_ranked[: int(len(ind_noun) * neg_topk)] + adjs_ranked[: int(len(ind_adj) * neg_topk)]
    if features is not None:
        noun_sel = text_features_neg[:noun_length][ind_noun[0 : int(len(ind_noun) * neg_topk)]]
        adj_sel = text_features_neg[noun_length:][ind_adj[0 : int(len(ind_adj) * neg_topk)]]
        features.update(pos=text_features_pos.numpy(), neg=torch.cat([noun_sel, adj_sel], dim=0).numpy())
    return selected, nouns_ranked, adjs_ranked, neg_sim.numpy()


@pytest.fixture(scope="module")
def pool():
    """About 300 WordNet candidates of CSP's pool, nouns and adjectives, plus two ID names as nouns
    (their nearest ID class is at cosine 1 > 0.95: CSP sends them last)."""
    nouns, adjectives = csp_candidates()
    picked = nouns[::400] + adjectives[::60]
    return [*picked[:5], "goldfish", *picked[5:], "banjo"]


@pytest.fixture(scope="module")
def ids():
    return IdClasses.from_names(ID_NAMES)


def _split(pool):
    adj = {c.text for c in pool if not isinstance(c, str) and c.pos in ("a", "s")}
    texts = [c if isinstance(c, str) else c.text for c in pool]
    return [t for t in texts if t not in adj], [t for t in texts if t in adj]


@pytest.mark.parametrize("seed", [0, 7])
def test_ratio_is_csps_selection_label_for_label(pool, ids, seed):
    nouns, adjs = _split(pool)
    want, _, _, _ = csp_reference(nouns, adjs, ID_NAMES, seed=seed)
    got = build_csp_vocabulary(
        PromptVLM(), candidates=pool, id_classes=ids, ratio=0.15, seed=seed, synonym_filter=False
    )
    assert got.labels == want  # the same labels in the same order: selected nouns, then conjugated adjectives
    assert len(want) == int(len(nouns) * 0.15) + int(len(adjs) * 0.15) > 40
    assert got.settings["order"].startswith("csp")


def test_embeddings_and_scores_are_csps_under_raw_norms(pool, ids):
    """CSP's vocabulary, its label embeddings and its scores (NegLabel's grouped score, CSP's grouping)
    against CSP's code: embeddings within 1e-6, scores within 1e-5."""
    from negvocab.evaluation.encode import encode_labels
    from negvocab.scoring.neglabel import neglabel

    nouns, adjs = _split(pool)
    ref = {}
    want, _, _, _ = csp_reference(nouns, adjs, ID_NAMES, features=ref)
    vlm = PromptVLM()
    got = build_csp_vocabulary(vlm, candidates=pool, id_classes=ids, ratio=0.15, synonym_filter=False)
    assert got.labels == want
    neg = encode_labels(vlm, got, "csp")  # as a scorer embeds a vocabulary: its labels, their parts of speech
    id_emb = vlm.encode_text(ID_NAMES, "csp", pos="n")
    np.testing.assert_allclose(neg, ref["neg"], atol=1e-6)
    np.testing.assert_allclose(id_emb, ref["pos"], atol=1e-6)
    img = np.random.default_rng(3).standard_normal((40, DIM))
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    img[:20] = 0.3 * img[:20] + ref["pos"][np.arange(20) % len(ID_NAMES)]  # half the images near an ID class
    img /= np.linalg.norm(img, axis=1, keepdims=True)
    image = torch.tensor(img)
    # CSP's ScalableClassifier.grouping (mmcls/models/ood/clip_ood.py) is NegLabel's, line for line
    theirs = released_grouping(
        100.0 * image @ torch.tensor(ref["pos"]).T, 100.0 * image @ torch.tensor(ref["neg"]).T, 10
    )
    ours = neglabel(img.astype(np.float32), id_emb, neg, groups=10, grouping="neglabel", seed=0, device="cpu")
    np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-5)
    assert np.ptp(ours) > 1e-2  # the scores spread: a wrong vocabulary would move them


def test_the_ranking_is_csps_per_part_of_speech_and_its_prefixes_are_the_sweep(pool, ids):
    nouns, adjs = _split(pool)
    _, nouns_ranked, adjs_ranked, neg_sim = csp_reference(nouns, adjs, ID_NAMES)
    full = build_csp_vocabulary(PromptVLM(), candidates=pool, id_classes=ids, synonym_filter=False)
    pos = {label: full.meta[label]["pos"] for label in full.labels}
    assert [x for x in full.labels if pos[x] == "n"] == nouns_ranked
    assert [x for x in full.labels if pos[x] == "a"] == adjs_ranked
    assert nouns_ranked[-1] in ("goldfish", "banjo") and full.labels[-2:] == ["goldfish", "banjo"]  # d = 1: last
    d = np.array([full.meta[x]["distance"] for x in full.labels])
    assert np.all(np.diff(d) >= 0)  # one ranking over both parts of speech, farthest first
    ref_d = dict(zip(nouns + [a for a in conjugate(adjs)], neg_sim, strict=True))
    np.testing.assert_allclose(d, [ref_d[x] for x in full.labels], atol=1e-6)
    head = build_csp_vocabulary(PromptVLM(), 25, candidates=pool, id_classes=ids, synonym_filter=False)
    assert head.labels == full.labels[:25]  # size M is the first M
    ratio = build_csp_vocabulary(PromptVLM(), candidates=pool, id_classes=ids, ratio=0.15, synonym_filter=False)
    n_n, n_a = int(len(nouns) * 0.15), int(len(adjs) * 0.15)
    assert ratio.labels == nouns_ranked[:n_n] + adjs_ranked[:n_a]


def test_conjugation_is_pythons_seeded_choice_and_meta_says_which_superclass():
    random.seed(3)
    want = [random.choice(CSP_SUPERCLASSES).format(a) for a in ["red", "wooden", "tiny"]]
    assert conjugate(["red", "wooden", "tiny"], seed=3) == want
    assert conjugate(["red"], seed=3, superclasses=["{} blob"]) == ["red blob"]
    with pytest.raises(InputError, match="superclass template 'blob' must contain"):
        conjugate(["red"], superclasses=["blob"])


def test_distances_read_the_quantile_and_the_copy_rule():
    rng = np.random.default_rng(0)
    ids = rng.standard_normal((9, 8))
    ids /= np.linalg.norm(ids, axis=1, keepdims=True)
    cands = np.vstack([rng.standard_normal((5, 8)), ids[2] + 0.01])
    cands /= np.linalg.norm(cands, axis=1, keepdims=True)
    d = csp_distances(cands, ids, 0.8)
    want = np.quantile(cands.astype(np.float64) @ ids.T, 0.8, axis=1)
    np.testing.assert_allclose(d[:5], want[:5], atol=1e-6)
    assert d[5] == 1.0  # its nearest ID class is above 0.95


@pytest.mark.parametrize("ratio", [0.15, 1.0])
def test_a_conjugated_adjective_equal_to_a_noun_is_a_candidate_of_its_own_as_in_csp(pool, ids, ratio):
    from negvocab.labels.candidates import Candidate

    noun = Candidate("natural object", "n", "noun.Tops", "natural_object.n.01")
    adj = Candidate("natural", "a", "adj.all", "natural.a.01")
    cands = [*pool, noun, adj]
    nouns, adjs = _split(cands)
    want, _, _, _ = csp_reference(nouns, adjs, ID_NAMES, neg_topk=ratio, csp_templates=["{} object"])
    v = build_csp_vocabulary(
        PromptVLM(), candidates=cands, id_classes=ids, superclasses=["{} object"], ratio=ratio, synonym_filter=False
    )
    # CSP counts the conjugated "natural object" among the adjectives and may select it beside the
    # noun; a vocabulary holds a label once (the noun's place, the first), and says so
    assert v.labels == list(dict.fromkeys(want))
    twice = [x for x in dict.fromkeys(want) if want.count(x) == 2]
    assert v.settings["selected_twice"] == twice and (twice == ["natural object"]) == (ratio == 1.0)
    assert v.settings["n_candidates"] == {"nouns": len(nouns), "adjectives": len(adjs), "conjugated_equal_to_a_noun": 1}
    held = ["1 labels CSP's code selects twice (as a noun and conjugated) held once"] if twice else []
    other = [] if ratio == 0.15 else [f"ratio {ratio} (CSP's code: 0.15)"]
    assert v.settings["departures_from_csp"] == held + other


def test_the_record_names_each_departure_from_csps_construction(pool, ids):
    kw = {"candidates": pool, "id_classes": ids}
    authors = build_csp_vocabulary(PromptVLM(), ratio=0.15, synonym_filter=False, **kw)
    assert authors.settings["departures_from_csp"] == [] and authors.settings["templates"]["reduce"] == "raw_mean"
    unit = build_csp_vocabulary(PromptVLM(), ratio=0.15, synonym_filter=False, reduce="unit_mean", **kw)
    assert unit.settings["departures_from_csp"] == ["templates reduced by unit_mean (CSP's code: raw_mean)"]
    assert unit.labels != authors.labels  # norms vary: the two reductions rank differently
    default = build_csp_vocabulary(PromptVLM(), **kw)
    assert [d.split(" (")[0] for d in default.settings["departures_from_csp"]] == [
        "synonym filter on",
        "one ranking of both parts of speech",
    ]


def test_through_the_registry_and_the_cli(tiny, tmp_path):
    from negvocab.cli import app

    direct = build_csp_vocabulary(
        tiny, candidates=sample_pool(60, negvocab.builders.csp.csp_pool()), templates="single"
    )
    got = negvocab.build_vocabulary("csp", vlm=tiny, n_candidates=60, templates="single")
    assert got == direct and got.source == "csp" and len(got) > 50
    b = negvocab.get_builder("csp")
    assert (b.ranked, b.deployable, sorted(b.needs)) == (True, True, ["vlm"])
    with pytest.raises(InputError, match="^builder 'csp': quantile = 95: must be a quantile level in"):
        negvocab.build_vocabulary("csp", vlm=tiny, quantile=95)
    r = CliRunner().invoke(app, ["build", "csp", "--help"], env={"COLUMNS": "300"})
    assert r.exit_code == 0 and "--superclasses" in r.output and "--ratio" in r.output and "--authors" in r.output
    assert "counted before the synonym filter (CSP's code: 0.15 with no filter; --authors sets both)" in r.output


def test_the_generic_cli_command_builds_a_csp_vocabulary(tmp_path):
    from negvocab.cli import app

    (tmp_path / "classes.txt").write_text("goldfish\ntench\nbarn\n")
    out = tmp_path / "csp.json"
    argv = ["build", "csp", "--model", "ViT-B-32", "--random-weights", "--device", "cpu", "--templates", "single"]
    argv += ["--id-classes", str(tmp_path / "classes.txt"), "--cache-dir", str(tmp_path / "cache")]
    argv += ["--n-candidates", "40"]
    r = CliRunner().invoke(app, [*argv, "--ratio", "0.5", "--seed", "2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    v = negvocab.Vocabulary.load(out)
    assert v.source == "csp" and v.settings["seed"] == 2 and v.settings["ratio"] == 0.5
    n = v.settings["n_candidates"]
    assert len(v) == int(n["nouns"] * 0.5) + int(n["adjectives"] * 0.5)
    assert v.settings["departures_from_csp"][:2] == [
        "templates single (CSP's code: csp)",
        "synonym filter on (CSP's code has none: the pool and the ratio's cut change)",
    ]  # the default filters, and says so
    r = CliRunner().invoke(app, [*argv, "--authors", "-o", str(tmp_path / "authors.json")])
    assert r.exit_code == 0, r.output
    assert "negvocab score --method neglabel --grouping neglabel --groups 100 --seed 0 --templates csp" in r.output
    a = negvocab.Vocabulary.load(tmp_path / "authors.json")
    assert (a.settings["ratio"], a.settings["seed"], "synonym_filter" in a.settings) == (0.15, 0, False)
    assert a.settings["departures_from_csp"] == ["templates single (CSP's code: csp)"]  # given here: it stays
    r = CliRunner().invoke(app, [*argv, "--authors", "--ratio", "0.5", "-o", str(tmp_path / "mine.json")])
    assert r.exit_code == 0, r.output
    assert negvocab.Vocabulary.load(tmp_path / "mine.json").settings["departures_from_csp"] == [
        "templates single (CSP's code: csp)",
        "ratio 0.5 (CSP's code: 0.15)",
    ]  # what the command line gives wins over the preset
    r = CliRunner().invoke(app, [*argv, "--quantile", "95", "-o", str(tmp_path / "bad.json")])
    assert r.exit_code == 2 and "--quantile = 95.0: must be a quantile level in (0, 1]" in r.output


def test_a_grid_takes_csp_with_sizes_and_checks_its_options_in_one_line():
    from negvocab.grid.config import parse_config

    base = {
        "grid": {"device": "cpu"},
        "models": [{"name": "ViT-B-32", "random_weights": True}],
        "id": {"path": "id"},
        "ood": {"a": "a"},
    }
    table = {"builder": "csp", "n_candidates": 50, "sizes": [10, 20], "seed": 1}
    (spec,) = parse_config({**base, "vocabularies": {"C": table}}, source="g.toml").vocabularies
    assert (spec.builder, spec.sizes, dict(spec.options)) == ("csp", (10, 20), {"n_candidates": 50, "seed": 1})
    with pytest.raises(InputError, match=r"^g\.toml: vocabularies\.C\.seed = -1: must be an integer >= 0"):
        parse_config({**base, "vocabularies": {"C": {**table, "seed": -1}}}, source="g.toml")
