"""Each scorer against a direct float64 implementation (tests/scoring/reference.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import negvocab
from negvocab.core.errors import InputError
from negvocab.scoring import eoe as eoe_mod
from negvocab.scoring import scores as S
from tests.scoring import reference as ref

ATOL = 1e-5


@pytest.fixture(scope="module")
def emb():
    rng = np.random.default_rng(0)
    d = 32
    return {
        "img": ref.unit(rng, 40, d),
        "id": ref.unit(rng, 25, d),
        "neg": ref.unit(rng, 237, d),
        "local": ref.unit(rng, 40 * 7, d).reshape(40, 7, d),
    }


@pytest.mark.parametrize("T", [1.0, 0.05])
def test_mcm_matches_float64(emb, T):
    got = negvocab.score("mcm", emb["img"], emb["id"], T=T)
    assert got.dtype == np.float64 and got.shape == (40,)
    np.testing.assert_allclose(got, ref.mcm(emb["img"], emb["id"], T), atol=ATOL, rtol=0)


@pytest.mark.parametrize("lam", [1.0, 0.5])
def test_glmcm_matches_float64(emb, lam):
    got = negvocab.score("glmcm", emb["img"], emb["id"], local=emb["local"], lam=lam, T=0.1)
    np.testing.assert_allclose(got, ref.glmcm(emb["img"], emb["id"], emb["local"], lam, 0.1), atol=ATOL, rtol=0)


def test_glmcm_takes_float16_patch_features_as_they_are(emb):
    # half the memory at ImageNet scale; converted a chunk at a time, equal up to float16 rounding
    half = emb["local"].astype(np.float16)
    got = negvocab.score("glmcm", emb["img"], emb["id"], local=half, chunk_size=7)
    np.testing.assert_allclose(got, ref.glmcm(emb["img"], emb["id"], half.astype(np.float64)), atol=1e-6, rtol=0)
    np.testing.assert_allclose(got, ref.glmcm(emb["img"], emb["id"], emb["local"]), atol=1e-3, rtol=0)


def test_glmcm_reads_local_features_from_image_embeddings(emb):
    class Emb:  # duck-typed ImageEmbeddings
        embeddings = emb["img"]
        local = emb["local"]

    got = negvocab.score("gl-mcm", Emb(), emb["id"])
    np.testing.assert_allclose(got, ref.glmcm(emb["img"], emb["id"], emb["local"]), atol=ATOL, rtol=0)


def test_glmcm_without_local_features_is_an_input_error(emb):
    with pytest.raises(InputError, match="local"):
        negvocab.score("glmcm", emb["img"], emb["id"])


@pytest.mark.parametrize(("beta", "T"), [(0.25, 1.0), (1.0, 0.01)])
def test_eoe_matches_float64(emb, beta, T):
    got = negvocab.score("eoe", emb["img"], emb["id"], emb["neg"][:30], beta=beta, T=T)
    np.testing.assert_allclose(got, ref.eoe(emb["img"], emb["id"], emb["neg"][:30], beta, T), atol=ATOL, rtol=0)


@pytest.mark.parametrize("grouping", ["stratified", "random"])
@pytest.mark.parametrize("groups", [1, 2, 7, 100, 236, 237])
def test_neglabel_matches_float64(emb, grouping, groups):
    got = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=groups, grouping=grouping, seed=3)
    want = ref.neglabel(emb["img"], emb["id"], emb["neg"], groups=groups, grouping=grouping, seed=3)
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)
    assert np.all((got > 0) & (got < 1))


def test_neglabel_single_group_is_the_plain_formula(emb):
    img, idt, neg = ref.f64(emb["img"], emb["id"], emb["neg"])
    pos = np.exp(img @ idt.T / 0.01).sum(1)
    plain = pos / (pos + np.exp(img @ neg.T / 0.01).sum(1))
    got = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=1)
    np.testing.assert_allclose(got, plain, atol=ATOL, rtol=0)


def test_neglabel_more_groups_than_negatives_clamps_to_one_per_group(emb):
    neg = emb["neg"][:9]
    a = negvocab.score("neglabel", emb["img"], emb["id"], neg, groups=100)
    b = negvocab.score("neglabel", emb["img"], emb["id"], neg, groups=9, grouping="random", seed=5)
    np.testing.assert_allclose(a, b, atol=1e-6)  # same groups, another summation order
    np.testing.assert_allclose(a, ref.neglabel(emb["img"], emb["id"], neg, groups=9), atol=ATOL)


def test_groupings_cover_every_negative_once():
    for grouping in ("stratified", "random"):
        for m, g in [(10, 3), (10_499, 100), (5, 5)]:
            groups = S.neglabel_groups(m, g, grouping, seed=1)
            allr = np.sort(np.concatenate(groups))
            np.testing.assert_array_equal(allr, np.arange(m))
            sizes = [len(x) for x in groups]
            assert len(groups) == g and max(sizes) - min(sizes) <= 1
    strat = S.neglabel_groups(10, 3, "stratified")
    assert [list(x) for x in strat] == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]


def test_random_grouping_depends_on_seed(emb):
    a = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping="random", seed=0)
    b = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping="random", seed=1)
    assert not np.allclose(a, b, atol=1e-9)


def test_neglabel_eoe_matches_float64(emb):
    got = negvocab.score("neglabel+eoe", emb["img"], emb["id"], emb["neg"], groups=7, beta=0.5)
    want = ref.neglabel_eoe(emb["img"], emb["id"], emb["neg"], groups=7, beta=0.5)
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)
    got_t = negvocab.score("neglabel_eoe", emb["img"], emb["id"], emb["neg"], groups=7, penalty_T=1.0)
    want_t = ref.neglabel_eoe(emb["img"], emb["id"], emb["neg"], groups=7, penalty_T=1.0)
    np.testing.assert_allclose(got_t, want_t, atol=ATOL, rtol=0)


def test_large_logits_do_not_overflow():
    # identical image and label vectors: cos = 1, logits 1/tau = 1000 overflow a naive exp
    rng = np.random.default_rng(1)
    v = ref.unit(rng, 4, 8)
    got = negvocab.score("neglabel", v, v, -v, tau=0.001, groups=1)
    assert np.all(np.isfinite(got)) and np.all(got > 0.99)
    # an image identical to a negative: the ID mass is negligible, the score is ~0, not NaN
    got = negvocab.score("neglabel", v, -v, v, tau=0.001, groups=2)
    assert np.all(np.isfinite(got)) and np.all(got < 0.51)


def test_chunking_does_not_change_scores(emb):
    whole = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, chunk_size=10_000)
    tiny = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7, chunk_size=3)
    np.testing.assert_allclose(whole, tiny, atol=1e-6)
    for method in ("mcm", "eoe"):
        a = negvocab.score(method, emb["img"], emb["id"], emb["neg"], chunk_size=1)
        b = negvocab.score(method, emb["img"], emb["id"], emb["neg"])
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_torch_and_float64_inputs(emb):
    t = negvocab.score("neglabel", *(torch.from_numpy(emb[k]) for k in ("img", "id", "neg")), groups=7)
    n = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], groups=7)
    np.testing.assert_allclose(t, n, atol=1e-7)
    d = negvocab.score("neglabel", *(emb[k].astype(np.float64) for k in ("img", "id", "neg")), groups=7)
    np.testing.assert_allclose(d, ref.neglabel(emb["img"], emb["id"], emb["neg"], groups=7), atol=1e-12)


@pytest.mark.gpu
def test_cuda_matches_cpu(emb):
    cuda = [torch.from_numpy(emb[k]).cuda() for k in ("img", "id", "neg")]
    cpu = [emb[k] for k in ("img", "id", "neg")]
    for method in ("neglabel", "eoe", "mcm", "neglabel_eoe"):
        got = negvocab.score(method, *cuda)
        np.testing.assert_allclose(got, negvocab.score(method, *cpu), atol=1e-5)
    # GL-MCM with patch features on the GPU, and as float16 on the CPU moved a chunk at a time
    for local in (torch.from_numpy(emb["local"]).cuda(), emb["local"].astype(np.float16)):
        got = negvocab.score("glmcm", cuda[0], cuda[1], local=local, chunk_size=7)
        want = negvocab.score(
            "glmcm", cpu[0], cpu[1], local=np.asarray(local.cpu() if hasattr(local, "cpu") else local, np.float32)
        )
        np.testing.assert_allclose(got, want, atol=1e-5)
    sizes = [10, 100, 237]
    on_gpu = S.neglabel_prefixes(*cuda, sizes, groups=7)
    on_cpu = S.neglabel_prefixes(*cpu, sizes, groups=7)
    for m in sizes:
        np.testing.assert_allclose(on_gpu[m], on_cpu[m], atol=1e-5)
    names = dict(id_labels=[f"c{i}" for i in range(25)], neg_labels=[f"n{j}" for j in range(237)], k=3)
    for a, b in zip(S.explain(*cuda, **names), S.explain(*cpu, **names), strict=True):
        assert [x["label"] for x in a["top_negatives"]] == [x["label"] for x in b["top_negatives"]]
        assert a["negative_share"] == pytest.approx(b["negative_share"], abs=1e-5)
    tk = negvocab.score("neglabel", *cuda, topk=20, return_bounds=True)
    exact = negvocab.score("neglabel", *cuda)
    assert np.all(tk.lower <= exact + 1e-6) and np.all(exact <= tk.upper + 1e-6)


# -- top-k --------------------------------------------------------------------------------------
@pytest.mark.parametrize("grouping", ["stratified", "random"])
@pytest.mark.parametrize("k", [1, 5, 40, 236, 237])
def test_topk_bounds_contain_the_exact_score(emb, grouping, k):
    exact = ref.neglabel(emb["img"], emb["id"], emb["neg"], groups=7, grouping=grouping)
    res = negvocab.score(
        "neglabel", emb["img"], emb["id"], emb["neg"], groups=7, grouping=grouping, topk=k, return_bounds=True
    )
    assert isinstance(res, S.TopkScores) and res.k == k
    assert np.all(res.lower <= exact + ATOL) and np.all(exact <= res.upper + ATOL)  # float32 rounding
    np.testing.assert_array_equal(res.scores, res.upper)
    # in float64 the certificate holds to rounding of 1e-12
    r64 = negvocab.score(
        "neglabel",
        *(emb[x].astype(np.float64) for x in ("img", "id", "neg")),
        groups=7,
        grouping=grouping,
        topk=k,
        return_bounds=True,
    )
    assert np.all(r64.lower <= exact + 1e-12) and np.all(exact <= r64.upper + 1e-12)
    if k == 237:  # nothing omitted: exact
        np.testing.assert_allclose(res.scores, exact, atol=ATOL)
        np.testing.assert_allclose(res.lower, exact, atol=ATOL)
        assert np.all(np.isneginf(res.log_omitted_bound))


def test_topk_bound_is_the_omitted_mass_formula(emb):
    k = 10
    res = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], topk=k, return_bounds=True)
    cos = ref.f64(emb["img"])[0] @ ref.f64(emb["neg"])[0].T
    kth = np.sort(cos, 1)[:, -k]
    np.testing.assert_allclose(res.log_omitted_bound, np.log(237 - k) + kth / 0.01, rtol=1e-5)
    # the omitted mass really is below the bound
    srt = np.sort(cos, 1)[:, ::-1]
    omitted = np.exp(srt[:, k:] / 0.01).sum(1)
    assert np.all(np.log(omitted) <= res.log_omitted_bound + 1e-6)


def test_topk_gap_shrinks_with_k(emb):
    gaps = [
        negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], topk=k, return_bounds=True).max_gap
        for k in (5, 50, 200)
    ]
    assert gaps[0] >= gaps[1] >= gaps[2]


def test_topk_without_bounds_returns_scores(emb):
    s = negvocab.score("neglabel", emb["img"], emb["id"], emb["neg"], topk=5)
    assert isinstance(s, np.ndarray) and s.shape == (40,)


# -- explanations -------------------------------------------------------------------------------
def test_explain_lists_the_largest_contributions(emb):
    id_labels = [f"id{i}" for i in range(25)]
    neg_labels = [f"neg{j}" for j in range(237)]
    out = S.explain(emb["img"][:5], emb["id"], emb["neg"], id_labels=id_labels, neg_labels=neg_labels, k=3)
    img, idt, neg = ref.f64(emb["img"][:5], emb["id"], emb["neg"])
    cos_n, cos_i = img @ neg.T, img @ idt.T
    total = np.exp(cos_n / 0.01).sum(1) + np.exp(cos_i / 0.01).sum(1)
    for r, item in enumerate(out):
        want = [f"neg{j}" for j in np.argsort(-cos_n[r])[:3]]
        assert [x["label"] for x in item["top_negatives"]] == want
        assert [x["label"] for x in item["top_id"]] == [f"id{i}" for i in np.argsort(-cos_i[r])[:3]]
        j = int(want[0][3:])
        assert item["top_negatives"][0]["share"] == pytest.approx(np.exp(cos_n[r, j] / 0.01) / total[r], rel=1e-4)
        assert item["negative_share"] == pytest.approx(np.exp(cos_n[r] / 0.01).sum() / total[r], rel=1e-4)


def test_explain_rejects_mismatched_labels(emb):
    with pytest.raises(InputError, match="label lists"):
        S.explain(emb["img"], emb["id"], emb["neg"], id_labels=["a"], neg_labels=["b"])


# -- validation ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda e: negvocab.score("odin", e["img"], e["id"]), "unknown method"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"]), "needs negative"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"][:, :5], e["neg"]), "dimensions differ"),
        (lambda e: negvocab.score("neglabel", e["img"][0], e["id"], e["neg"]), "2-D"),
        (lambda e: negvocab.score("neglabel", e["img"][:0], e["id"], e["neg"]), "empty"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"], e["neg"], tau=0), "tau"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"], e["neg"], groups=0), "groups"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"], e["neg"], grouping="zigzag"), "grouping"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"], e["neg"], topk=0), "topk"),
        (lambda e: negvocab.score("neglabel", e["img"], e["id"], e["neg"], topk=10_000), "topk"),
        (lambda e: negvocab.score("mcm", e["img"], e["id"], topk=3), "only available"),
        (lambda e: negvocab.score("mcm", e["img"], e["id"], bogus=3), "bogus"),
        (lambda e: negvocab.score("mcm", np.full((2, 32), np.nan), e["id"]), "NaN"),
        (lambda e: negvocab.score("mcm", e["img"], e["id"], device="tpu9"), "device"),
    ],
)
def test_bad_input_raises_input_error(emb, call, match):
    with pytest.raises(InputError, match=match):
        call(emb)


def test_group_far_below_the_row_maximum_uses_the_exact_path():
    # one group sits ~1000 logits below the image's largest negative logit: its mass underflows any
    # shared shift, so those images take the float64 log-sum-exp path; the result still matches
    rng = np.random.default_rng(7)
    img = ref.unit(rng, 3, 16, "float64")
    idt = ref.unit(rng, 5, 16, "float64")
    near = img[[0, 0, 0]] * 0.99 + 0.01 * ref.unit(rng, 3, 16, "float64")
    near /= np.linalg.norm(near, axis=1, keepdims=True)
    neg = np.empty((6, 16))
    neg[0::2] = -near  # group 0 (stratified, G=2): far from image 0
    neg[1::2] = near  # group 1: close to image 0
    got = negvocab.score("neglabel", img, idt, neg, tau=0.002, groups=2)
    np.testing.assert_allclose(got, ref.neglabel(img, idt, neg, tau=0.002, groups=2), atol=1e-9, rtol=0)
    got32 = negvocab.score(
        "neglabel", img.astype(np.float32), idt.astype(np.float32), neg.astype(np.float32), tau=0.002, groups=2
    )
    np.testing.assert_allclose(got32, ref.neglabel(img, idt, neg, tau=0.002, groups=2), atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", ["image_emb", "id_emb", "neg_emb", "local"])
def test_unnormalised_embeddings_are_refused(emb, name):
    # raw encode_image output (norm ~7) changes every score silently; fp16 round-off (~1e-3) is fine
    rng = np.random.default_rng(0)
    local = ref.unit(rng, len(emb["img"]) * 3, emb["img"].shape[1]).reshape(len(emb["img"]), 3, -1)
    args = {"image_emb": emb["img"], "id_emb": emb["id"], "neg_emb": emb["neg"], "local": local}
    ok = {k: v * np.float32(1 + 2e-3) for k, v in args.items()}
    negvocab.score("neglabel", ok["image_emb"], ok["id_emb"], ok["neg_emb"], groups=3)
    negvocab.score("glmcm", ok["image_emb"], ok["id_emb"], local=ok["local"])
    args[name] = args[name] * np.float32(7.3)
    method = "glmcm" if name == "local" else "neglabel"
    neg = None if method == "glmcm" else args["neg_emb"]
    extra = {"local": args["local"]} if method == "glmcm" else {"groups": 3}
    with pytest.raises(InputError, match=rf"{name} is not L2-normalised \(an embedding of norm 7\.3"):
        negvocab.score(method, args["image_emb"], args["id_emb"], neg, **extra)


@pytest.mark.parametrize("grouping", ["stratified", "random"])
@pytest.mark.parametrize("tau", [0.01, 0.002])
def test_neglabel_eoe_penalty_from_the_neglabel_pass_is_exact(emb, grouping, tau, monkeypatch):
    # with penalty_T = tau the penalty is read off NegLabel's own pass (no second product); in
    # float64 it is the float64 formula to rounding, also at a tau so small that images take the
    # exact float64 path
    img, idt, neg = ref.f64(emb["img"], emb["id"], emb["neg"])
    kw = {"groups": 7, "grouping": grouping, "seed": 3, "tau": tau, "beta": 0.5}
    second = eoe_mod._joint_max_probs
    monkeypatch.setattr(eoe_mod, "_joint_max_probs", lambda *a, **k: pytest.fail("a second pass for the penalty"))
    got = negvocab.score("neglabel_eoe", img, idt, neg, **kw)
    monkeypatch.setattr(eoe_mod, "_joint_max_probs", second)
    np.testing.assert_allclose(got, ref.neglabel_eoe(img, idt, neg, **kw), atol=1e-12, rtol=0)
    separate = negvocab.score("neglabel_eoe", img, idt, neg, **kw, penalty_T=tau * (1 + 1e-15))  # the second pass
    np.testing.assert_allclose(got, separate, atol=1e-12, rtol=0)


@pytest.mark.parametrize("grouping", ["stratified", "random", "neglabel"])
def test_neglabel_scores_do_not_depend_on_taking_the_penalties(emb, grouping):
    # plain NegLabel skips the penalties' maxima (EOE's); the scores are the same numbers either way,
    # and the penalties are each image's top negative probability over ID and the first M negatives
    from negvocab.scoring.neglabel import neglabel_pass

    v, t, n = (torch.from_numpy(x) for x in (emb["img"], emb["id"], emb["neg"]))
    kw = {"tau": 0.01, "groups": 7, "grouping": grouping, "seed": 3, "chunk_size": 16}
    sizes = [3, 50, 237] if grouping == "stratified" else [237]
    scores, penalties = neglabel_pass(v, t, n, sizes, **kw)
    alone, none = neglabel_pass(v, t, n, sizes, penalties=False, **kw)
    assert none == {} and sorted(penalties) == sizes
    for m in sizes:
        np.testing.assert_array_equal(alone[m], scores[m])
    img, idt, neg = ref.f64(emb["img"], emb["id"], emb["neg"][:50])
    logits = np.concatenate([img @ idt.T, img @ neg.T], 1) / 0.01
    if grouping == "stratified":  # float64 formula; the kernel ran in float32
        top = np.exp(logits[:, 25:].max(1) - np.log(np.exp(logits).sum(1)))
        np.testing.assert_allclose(penalties[50], top, rtol=3e-5, atol=0)
