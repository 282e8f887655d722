"""Marginal gains: how much FPR@95 and AUROC would change if one label were added to a vocabulary.

Adding a label ``c`` after the last of ``M`` negatives changes each image's score through a few
per-image quantities only (docs/methods.md, "Scores"):

- NegLabel: the label lands in the group that the grouping of ``M + 1`` negatives gives rank ``M``
  (stratified: ``M mod G``); that group's negative mass gains ``exp(cos(v, c) / tau)``, every other
  group is unchanged. With per-image group log-masses ``B_g`` and ID log-mass ``a``,
  ``S_c = (sum_{g != j} sigmoid(a - B_g) + sigmoid(a - logaddexp(B_j, s_c))) / G``.
- EOE (and the penalty of NegLabel+EOE): the softmax denominator gains ``exp(s_c)`` and the largest
  negative logit becomes ``max(max_neg, s_c)``.

So one pass over the negatives gives the per-image quantities, one product with the candidates gives
every ``s_c``, and each candidate's scores follow exactly, without rescoring. :func:`marginal_gains`
returns the metrics with each candidate added; :func:`repair_curve` adds the best label greedily,
one at a time.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from negvocab.atomic import atomic_path
from negvocab.errors import InputError
from negvocab.scoring import inputs
from negvocab.scoring import metrics as M
from negvocab.scoring import scores as S
from negvocab.scoring.methods import NEEDS_NEGATIVES, check_params, get_method

logger = logging.getLogger(__name__)

__all__ = ["MarginalGains", "RepairCurve", "marginal_gains", "repair_curve", "rows_frame"]

#: bytes of the [images, candidates] float64 block scored at once
_BLOCK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class MarginalGains:
    """The metrics with each candidate appended alone after the last negative, everything else fixed.

    ``fpr``/``auroc``: one value per candidate; ``base_fpr``/``base_auroc``: without any candidate.
    ``fpr_gain = base_fpr - fpr`` (positive: the label helps), ``auroc_gain = auroc - base_auroc``.
    """

    fpr: np.ndarray
    auroc: np.ndarray
    base_fpr: float
    base_auroc: float
    method: str
    convention: str
    tpr: float

    @property
    def fpr_gain(self) -> np.ndarray:
        return self.base_fpr - self.fpr

    @property
    def auroc_gain(self) -> np.ndarray:
        return self.auroc - self.base_auroc

    def best(self) -> int:
        """Index of the candidate with the lowest FPR (ties: the highest AUROC, then the first)."""
        return int(np.lexsort((np.arange(len(self.fpr)), -self.auroc, self.fpr))[0])


@dataclass
class RepairCurve:
    """Labels added greedily, best first, with the metrics after each addition.

    ``rows``: ``{"step", "label", "fpr", "auroc", "fpr_gain"}``, step 0 being the vocabulary as given
    (label ``""``). ``oracle``: the labels came from the evaluated OOD set (an analysis, not a
    deployable vocabulary).
    """

    rows: list[dict[str, Any]]
    method: str
    convention: str
    tpr: float
    oracle: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [r["label"] for r in self.rows[1:]]

    @property
    def fpr(self) -> np.ndarray:
        return np.array([r["fpr"] for r in self.rows])

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (pandas must be installed; ``.rows`` needs nothing)."""
        return rows_frame(self.rows)

    def plot(self, path: Any, *, random_weights: bool = False) -> Any:
        """FPR@tpr after each addition (a step plot), written atomically as PNG."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib.figure import Figure

        fig = Figure(figsize=(7, 3.6), layout="constrained")
        ax = fig.subplots()
        steps = [r["step"] for r in self.rows]
        ax.plot(steps, [100 * r["fpr"] for r in self.rows], marker="o", drawstyle="steps-post")
        for r in self.rows[1:]:
            ax.annotate(
                r["label"][:18],
                (r["step"], 100 * r["fpr"]),
                fontsize=7,
                rotation=30,
                xytext=(2, 4),
                textcoords="offset points",
            )
        ax.set_xlabel("labels added (greedy, best first)")
        ax.set_ylabel(f"FPR@{int(round(100 * self.tpr))} (%), {self.convention}")
        ax.grid(True, alpha=0.3)
        title = f"Repair curve, {self.method}" + (
            " [ORACLE analysis: OOD labels]" if self.oracle else " [candidate pool]"
        )
        if random_weights:
            title += " [RANDOM WEIGHTS]"
        ax.set_title(title, fontsize=9)
        with atomic_path(path, suffix=".png") as tmp:
            fig.savefig(tmp, format="png", dpi=110)
        return path


def _group_lse(
    s: torch.Tensor, nonempty: torch.Tensor, exact: Callable[[torch.Tensor], torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per image and group, the float64 log-sum-exp of logits ``s`` [n, L, G] over L (-inf padding),
    and each image's largest logit. Exponentials are taken in place in the input precision after a
    shift by the image's largest logit; images where a non-empty group's mass falls below 1e-30
    (extreme logit ranges) are redone from ``exact(rows)``, their float64 logits. (Consumes ``s``.)"""
    top = s.amax((1, 2))
    acc = s.sub_(top[:, None, None]).exp_().sum(1)
    b = torch.log(acc.double()) + top.double()[:, None]
    low = ((acc < 1e-30) & nonempty[None, :]).any(1)
    if bool(low.any()):
        b[low] = torch.logsumexp(exact(low), 1)
    return b, top.double()


def _groups(m: int, groups: int, grouping: str, seed: int, device: torch.device) -> list[np.ndarray]:
    """:func:`negvocab.scoring.scores.neglabel_groups` as the scorer draws them (on the scoring
    device where the grouping's permutation depends on it)."""
    if "device" in inspect.signature(S.neglabel_groups).parameters:
        return S.neglabel_groups(m, groups, grouping, seed, device=device)  # type: ignore[call-arg]
    return S.neglabel_groups(m, groups, grouping, seed)  # type: ignore[arg-type]


def rows_frame(rows: Sequence[Mapping[str, Any]]) -> Any:
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - pandas is optional
        raise InputError("to_frame needs pandas (pip install pandas); .rows holds the same as plain dicts") from e
    return pd.DataFrame(list(rows))


# ----------------------------------------------------------------------------------------------
# per-image state
# ----------------------------------------------------------------------------------------------
@dataclass
class _State:
    """Per-image quantities of the current negatives, for appending one more label at rank ``m``.

    ``b``: [n, G'] group log-masses at ``tau`` under the grouping of ``m + 1`` negatives, rank ``m``
    (the slot) excluded; ``slot``: the group rank ``m`` falls in (-1 when the grouping drops it);
    ``a``: ID log-mass at ``tau``;
    ``lse_id``, ``max_id``, ``lse_neg``, ``max_neg``: log-sum-exp and maximum of the ID and negative
    logits at the EOE temperature (``temp``).
    """

    m: int
    a: torch.Tensor | None = None
    b: torch.Tensor | None = None
    slot: int = 0
    lse_id: torch.Tensor | None = None
    max_id: torch.Tensor | None = None
    lse_neg: torch.Tensor | None = None
    max_neg: torch.Tensor | None = None


class _Scorer:
    """Scores of every image with one candidate appended, from per-image quantities."""

    def __init__(
        self, method: str, v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, params: Mapping[str, Any]
    ) -> None:
        self.method = method
        self.v, self.t = v, t
        self.neg = n
        self.tau = inputs.positive(params.get("tau", 0.01), "tau")
        self.groups = params.get("groups", 100)
        self.grouping = params.get("grouping", "stratified")
        self.seed = params.get("seed", 0)
        self.beta = inputs.finite(params.get("beta", 0.25), "beta")
        if method == "eoe":
            self.temp = inputs.positive(params.get("T", 1.0), "T")
        else:
            pt = params.get("penalty_T")
            self.temp = self.tau if pt is None else inputs.positive(pt, "penalty_T")
        self.chunk_size = params.get("chunk_size")
        self.state = self._pass(n)

    # -- one pass over the negatives ------------------------------------------------------------
    def _pass(self, neg: torch.Tensor, with_slot: bool = True) -> _State:
        """Per-image quantities of ``neg``; the groups are those of ``m + 1`` labels with rank ``m``
        left out (``with_slot``), or those of the ``m`` labels themselves."""
        m = neg.shape[0]
        st = _State(m=m)
        uses_groups = self.method in ("neglabel", "neglabel_eoe")
        uses_joint = self.method in ("eoe", "neglabel_eoe")
        lay = pad = None
        complete = True  # every label is in a group (NegLabel's own grouping drops the last ranks)
        if uses_groups:
            # the grouping of m + 1 labels, rank m (the candidate's slot) left out: a padded
            # rank-major layout [L, G] so that each group's mass is a sum over one axis
            grp = _groups(m + 1 if with_slot else m, self.groups, self.grouping, self.seed, self.v.device)
            st.slot = next((j for j, members in enumerate(grp) if m in members), -1)
            members = [x[x < m] for x in grp]
            complete = sum(len(x) for x in members) == m
            index = np.full((max(len(x) for x in members), len(grp)), -1, dtype=np.int64)
            for j, x in enumerate(members):
                index[: len(x), j] = x
            flat = torch.as_tensor(index.reshape(-1), device=neg.device)
            lay = neg[flat.clamp(min=0)]
            pad = (flat < 0).view(index.shape)
        v, t = self.v, self.t
        width = lay.shape[0] if lay is not None else m
        step = inputs.chunk_rows(len(v), t.shape[0] + width, v.element_size(), self.chunk_size)
        parts: dict[str, list[torch.Tensor]] = {k: [] for k in ("a", "b", "lse_id", "max_id", "lse_neg", "max_neg")}
        for i in range(0, len(v), step):
            vc = v[i : i + step]
            sid = vc @ t.T
            if lay is not None and pad is not None:
                shape = (len(vc), *pad.shape)
                s = (vc @ lay.T).mul_(1.0 / self.tau).view(shape).masked_fill_(pad, -math.inf)

                def exact(rows: torch.Tensor, vc: torch.Tensor = vc) -> torch.Tensor:
                    return ((vc[rows] @ lay.T).double() / self.tau).view(-1, *pad.shape).masked_fill_(pad, -math.inf)

                b, top = _group_lse(s, ~pad.all(0), exact)
                parts["a"].append(torch.logsumexp((sid / self.tau).double(), -1))
                parts["b"].append(b)
            if uses_joint:
                sid_t = (sid / self.temp).double()
                parts["lse_id"].append(torch.logsumexp(sid_t, -1))
                parts["max_id"].append(sid_t.amax(-1))
                if lay is not None and self.temp == self.tau and complete:  # the penalty sees every label
                    parts["lse_neg"].append(torch.logsumexp(b, -1))
                    parts["max_neg"].append(top)
                else:
                    # exponentials in the input precision after a shift by the largest logit
                    # (that term is 1, so the sum is exact to rounding); log and shift in float64
                    s_t = (vc @ neg.T).mul_(1.0 / self.temp)
                    top_t = s_t.amax(-1, keepdim=True)
                    mass = s_t.sub_(top_t).exp_().sum(-1)
                    parts["lse_neg"].append(torch.log(mass.double()) + top_t[:, 0].double())
                    parts["max_neg"].append(top_t[:, 0].double())
        for k, xs in parts.items():
            if xs:
                setattr(st, k, torch.cat(xs))
        return st

    # -- candidates ---------------------------------------------------------------------------
    def logits(self, cand: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Candidate cosines over tau and over the EOE temperature, float64 [n, C]."""
        cos = (self.v @ cand.T).double()
        return cos / self.tau, cos / self.temp

    def scores(self, s_tau: torch.Tensor, s_temp: torch.Tensor) -> torch.Tensor:
        """[n, C] scores with each candidate column appended alone."""
        st = self.state
        out = None
        if self.method in ("neglabel", "neglabel_eoe"):
            assert st.a is not None and st.b is not None
            a, b = st.a, st.b
            if st.slot < 0:  # a grouping that drops the last ranks (NegLabel's own) drops the candidate
                out = torch.sigmoid(a[:, None] - b).mean(1)[:, None].expand(-1, s_tau.shape[1])
            else:
                other = torch.sigmoid(a[:, None] - b).sum(1) - torch.sigmoid(a - b[:, st.slot])
                new = torch.sigmoid(a[:, None] - torch.logaddexp(b[:, st.slot, None], s_tau))
                out = (other[:, None] + new) / b.shape[1]
        if self.method in ("eoe", "neglabel_eoe"):
            assert st.lse_id is not None and st.lse_neg is not None and st.max_neg is not None and st.max_id is not None
            lz = torch.logaddexp(torch.logaddexp(st.lse_id, st.lse_neg)[:, None], s_temp)
            pen = torch.exp(torch.maximum(st.max_neg[:, None], s_temp) - lz)
            if self.method == "eoe":
                return torch.exp(st.max_id[:, None] - lz) - self.beta * pen
            assert out is not None
            out = out - self.beta * pen
        assert out is not None
        return out

    def base_scores(self) -> np.ndarray:
        """Scores with the current negatives only (no candidate), from per-image quantities. With
        stratified groups those of ``m`` labels are those of ``m + 1`` without rank ``m`` (the slot's
        group is empty when there are fewer labels than groups, and left out); a permuted grouping
        of ``m`` labels is another permutation, so its masses take a pass of their own."""
        st = self.state
        out = None
        if self.method in ("neglabel", "neglabel_eoe"):
            if self.grouping != "stratified":
                st0 = self._pass(self.neg, with_slot=False)
                assert st0.a is not None and st0.b is not None
                out = torch.sigmoid(st0.a[:, None] - st0.b).mean(1)
            else:
                assert st.a is not None and st.b is not None
                keep = torch.isfinite(st.b).any(0)
                out = torch.sigmoid(st.a[:, None] - st.b[:, keep]).mean(1)
        if self.method in ("eoe", "neglabel_eoe"):
            assert st.lse_id is not None and st.lse_neg is not None and st.max_neg is not None and st.max_id is not None
            lz = torch.logaddexp(st.lse_id, st.lse_neg)
            pen = torch.exp(st.max_neg - lz)
            if self.method == "eoe":
                return (torch.exp(st.max_id - lz) - self.beta * pen).cpu().numpy()
            assert out is not None
            out = out - self.beta * pen
        assert out is not None
        return out.cpu().numpy()

    # -- appending (repair) ---------------------------------------------------------------------
    def append(self, cand: torch.Tensor, s_tau: torch.Tensor, s_temp: torch.Tensor) -> None:
        """Make ``cand`` ([1, d]) the last negative; ``s_tau``/``s_temp``: its logits [n]."""
        st = self.state
        self.neg = torch.cat([self.neg, cand])
        if self.method in ("neglabel", "neglabel_eoe") and self.grouping != "stratified":
            self.state = self._pass(self.neg)  # a random grouping of m + 2 labels is a new permutation
            return
        if self.method in ("neglabel", "neglabel_eoe"):
            assert st.b is not None
            b = st.b.clone()
            b[:, st.slot] = torch.logaddexp(b[:, st.slot], s_tau)
            m = st.m + 1
            g_next = min(int(self.groups), m + 1)
            if g_next > b.shape[1]:  # fewer negatives than groups: every label its own group
                b = torch.cat([b, torch.full((b.shape[0], 1), -math.inf, dtype=b.dtype, device=b.device)], 1)
            st.b, st.slot = b, m % g_next
        if self.method in ("eoe", "neglabel_eoe"):
            assert st.lse_neg is not None and st.max_neg is not None
            st.lse_neg = torch.logaddexp(st.lse_neg, s_temp)
            st.max_neg = torch.maximum(st.max_neg, s_temp)
        st.m += 1


# ----------------------------------------------------------------------------------------------
# public functions
# ----------------------------------------------------------------------------------------------
def _setup(
    id_img_emb: Any, ood_img_emb: Any, id_emb: Any, neg_emb: Any, cand_emb: Any, method: str, params: Mapping[str, Any]
) -> tuple[_Scorer, torch.Tensor, int]:
    spec = get_method(method)
    method = spec.name
    if not spec.needs_negatives:
        raise InputError(
            f"marginal gains need a method that uses negatives ({', '.join(sorted(NEEDS_NEGATIVES))}), not {method}"
        )
    if "topk" in params:
        raise InputError(f"{method}: unexpected parameter(s) topk (marginal gains score every negative)")
    check_params(method, params)
    id_img, ood_img = S.embeddings_of(id_img_emb), S.embeddings_of(ood_img_emb)
    n_id = len(id_img)
    if isinstance(id_img, torch.Tensor) or isinstance(ood_img, torch.Tensor):
        images: Any = torch.cat([torch.as_tensor(id_img), torch.as_tensor(ood_img).to(torch.as_tensor(id_img).device)])
    else:
        images = np.concatenate([np.asarray(id_img), np.asarray(ood_img)])
    if n_id == 0 or len(images) == n_id:
        raise InputError("marginal gains need both ID and OOD image embeddings")
    v, t, n = inputs.prepare(images, id_emb, neg_emb, params.get("device"), need_neg=True, method=method)
    assert n is not None
    c = inputs.as_tensor(cand_emb, "cand_emb", 2, v.device, v.dtype)
    inputs.check_dims(image_emb=v, cand_emb=c)
    inputs.check_unit_rows(c, "cand_emb")
    return _Scorer(method, v, t, n, params), c, n_id


def _metrics(scores: np.ndarray, n_id: int, tpr: float, convention: str) -> tuple[np.ndarray, np.ndarray]:
    """FPR and AUROC of each column of ``scores`` [n_id + n_ood, C]."""
    fpr = np.empty(scores.shape[1])
    auc = np.empty(scores.shape[1])
    for j in range(scores.shape[1]):
        fpr[j] = M.fpr_at_tpr(scores[:n_id, j], scores[n_id:, j], tpr, convention=convention)  # type: ignore[arg-type]
        auc[j] = M.auroc(scores[:n_id, j], scores[n_id:, j])
    return fpr, auc


def _all_gains(
    sc: _Scorer, s_tau: torch.Tensor, s_temp: torch.Tensor, n_id: int, tpr: float, convention: str
) -> tuple[np.ndarray, np.ndarray]:
    n, c = s_tau.shape
    block = max(1, _BLOCK_BYTES // max(1, 8 * n))
    fprs, aucs = [], []
    for j in range(0, c, block):
        s = sc.scores(s_tau[:, j : j + block], s_temp[:, j : j + block]).cpu().numpy()
        f, a = _metrics(s, n_id, tpr, convention)
        fprs.append(f)
        aucs.append(a)
    return np.concatenate(fprs) if fprs else np.empty(0), np.concatenate(aucs) if aucs else np.empty(0)


def marginal_gains(
    id_img_emb: Any,
    ood_img_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    cand_emb: Any,
    method: str = "neglabel",
    convention: str = "paper",
    *,
    tpr: float = 0.95,
    **params: Any,
) -> MarginalGains:
    """FPR@tpr and AUROC with each candidate label appended alone after the last negative.

    Exact (the scores a full rescore of ``neg_emb + [c]`` gives, to rounding) and cheap: one pass
    over the negatives plus one product with the candidates (docs/methods.md, "Scores").

    Parameters
    ----------
    id_img_emb, ood_img_emb : (n_id, d), (n_ood, d)
        L2-normalised image embeddings (arrays, tensors or ``ImageEmbeddings``).
    id_emb, neg_emb, cand_emb : (K, d), (M, d), (C, d)
        L2-normalised ID class, negative and candidate label embeddings.
    method : {"neglabel", "eoe", "neglabel_eoe"}
    convention : {"paper", "hendrycks", "openood"}
        The FPR convention (see :mod:`negvocab.metrics`).
    **params
        The scorer's parameters: ``tau``, ``groups``, ``grouping``, ``seed`` (NegLabel); ``beta``,
        ``T`` (EOE); ``beta``, ``penalty_T`` (NegLabel+EOE); ``device``, ``chunk_size``.
        A candidate lands in the group the grouping of ``M + 1`` negatives gives rank ``M``.

    Returns
    -------
    MarginalGains
        ``.fpr``, ``.auroc`` (one per candidate), ``.base_fpr``, ``.base_auroc``, ``.fpr_gain``.
    """
    convention = M.check_convention(convention)
    tpr = M._check_tpr(tpr)
    sc, cand, n_id = _setup(id_img_emb, ood_img_emb, id_emb, neg_emb, cand_emb, method, params)
    s_tau, s_temp = sc.logits(cand)
    fpr, auc = _all_gains(sc, s_tau, s_temp, n_id, tpr, convention)
    base = sc.base_scores()
    return MarginalGains(
        fpr=fpr,
        auroc=auc,
        base_fpr=M.fpr_at_tpr(base[:n_id], base[n_id:], tpr, convention=convention),  # type: ignore[arg-type]
        base_auroc=M.auroc(base[:n_id], base[n_id:]),
        method=sc.method,
        convention=convention,
        tpr=tpr,
    )


def repair_curve(
    id_img_emb: Any,
    ood_img_emb: Any,
    id_emb: Any,
    neg_emb: Any,
    cand_emb: Any,
    k: int,
    *,
    labels: Sequence[str] | None = None,
    method: str = "neglabel",
    convention: str = "paper",
    tpr: float = 0.95,
    oracle: bool = False,
    stop_when_no_gain: bool = True,
    **params: Any,
) -> RepairCurve:
    """Greedy repair: add, ``k`` times, the candidate whose addition gives the lowest FPR@tpr (ties:
    the higher AUROC), appending it after the last negative; the metrics after each addition.

    With ``stop_when_no_gain`` the curve stops when no remaining candidate lowers the FPR or, at
    equal FPR, raises the AUROC, so the FPR column never rises. Stratified grouping updates one
    group per step; random grouping regroups (a pass over the negatives per step).
    ``oracle=True`` marks candidates taken from the evaluated OOD set's labels.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be an integer >= 1, got {k!r}")
    convention = M.check_convention(convention)
    tpr = M._check_tpr(tpr)
    sc, cand, n_id = _setup(id_img_emb, ood_img_emb, id_emb, neg_emb, cand_emb, method, params)
    names = [str(x) for x in labels] if labels is not None else [f"candidate {i}" for i in range(len(cand))]
    if len(names) != len(cand):
        raise InputError(f"{len(names)} labels for {len(cand)} candidate embeddings")
    s_tau, s_temp = sc.logits(cand)
    base = sc.base_scores()
    fpr0 = M.fpr_at_tpr(base[:n_id], base[n_id:], tpr, convention=convention)  # type: ignore[arg-type]
    auc0 = M.auroc(base[:n_id], base[n_id:])
    rows: list[dict[str, Any]] = [{"step": 0, "label": "", "fpr": fpr0, "auroc": auc0, "fpr_gain": 0.0}]
    left = list(range(len(cand)))
    while left and len(rows) <= k:
        fpr, auc = _all_gains(sc, s_tau[:, left], s_temp[:, left], n_id, tpr, convention)
        j = int(np.lexsort((np.arange(len(left)), -auc, fpr))[0])
        prev = rows[-1]
        if stop_when_no_gain and (fpr[j], -auc[j]) >= (prev["fpr"], -prev["auroc"]):
            break
        c = left.pop(j)
        sc.append(cand[c : c + 1], s_tau[:, c], s_temp[:, c])
        rows.append(
            {
                "step": len(rows),
                "label": names[c],
                "fpr": float(fpr[j]),
                "auroc": float(auc[j]),
                "fpr_gain": float(prev["fpr"] - fpr[j]),
            }
        )
    return RepairCurve(rows, sc.method, convention, tpr, oracle=oracle, meta={"candidates": len(cand), "k": int(k)})
