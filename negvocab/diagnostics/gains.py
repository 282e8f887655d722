"""Marginal gains: how much FPR@95 and AUROC would change if one label were added to a vocabulary.

Each method's incremental form is its registry entry's ``gains`` form
(:mod:`negvocab.scoring.incremental`: one pass over the negatives, one product with the candidates,
each candidate's scores exact without rescoring); a method that takes negatives but has no such form
is rescored once per candidate (exact, slow). :func:`marginal_gains` returns the metrics with each
candidate added; :func:`repair_curve` adds the best label greedily, one at a time. Nothing here
knows a method by name: parameters left out take the registry's defaults.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from negvocab.core.atomic import atomic_path
from negvocab.core.errors import InputError
from negvocab.core.types import Embeddings, ParamValue, PathLike
from negvocab.scoring import inputs
from negvocab.scoring import metrics as M
from negvocab.scoring import scores as S
from negvocab.scoring.incremental import RescoreGains
from negvocab.scoring.methods import PARAMS, batch_method, check_params, get_method, list_methods

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

__all__ = ["MarginalGains", "RepairCurve", "check_gains_method", "marginal_gains", "repair_curve", "rows_frame"]

#: bytes of the [images, candidates] float64 block scored at once
_BLOCK_BYTES = 64 * 2**20


@dataclass(frozen=True)
class MarginalGains:
    """The metrics with each candidate appended alone after the last negative, everything else fixed.

    ``fpr``/``auroc``: one value per candidate; ``base_fpr``/``base_auroc``: without any candidate.
    ``fpr_gain = base_fpr - fpr`` (positive: the label helps), ``auroc_gain = auroc - base_auroc``.

    Parameters
    ----------
    fpr : ndarray
        FPR with each candidate appended, one per candidate.
    auroc : ndarray
        AUROC with each candidate appended, one per candidate.
    base_fpr : float
        FPR without any candidate.
    base_auroc : float
        AUROC without any candidate.
    method : str
        The method that scored the images.
    convention : str
        The metrics' convention.
    tpr : float
        The true-positive rate at which FPR is read.
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

    Parameters
    ----------
    rows : list of dict
        ``{"step", "label", "fpr", "auroc", "fpr_gain"}`` per step, step 0 the vocabulary as given.
    method, convention, tpr
        As for :class:`MarginalGains`: the method, the metrics' convention, the TPR of FPR.
    oracle : bool, default False
        The labels came from the evaluated OOD set.
    meta : dict, default {}
        The run's record (candidates, k).
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

    def to_frame(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame (pandas must be installed; ``.rows`` needs nothing)."""
        return rows_frame(self.rows)

    def plot(self, path: PathLike, *, random_weights: bool = False) -> PathLike:
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


def rows_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    try:
        import pandas as pd
    except ImportError as e:  # pragma: no cover - pandas is optional
        raise InputError("to_frame needs pandas (pip install pandas); .rows holds the same as plain dicts") from e
    return pd.DataFrame(list(rows))


# ----------------------------------------------------------------------------------------------
# public functions
# ----------------------------------------------------------------------------------------------
def check_gains_method(method: str, params: Mapping[str, Any], *, what: str = "marginal gains need") -> str:
    """The registered name of ``method`` if marginal gains can serve it with ``params``, else one
    :class:`InputError` (before any model or image work): it must take negatives, and a parameter
    that only its top-k form serves is refused (gains score every negative)."""
    spec = batch_method(method, "marginal gains")
    if not spec.needs_negatives:
        able = ", ".join(list_methods(needs_negatives=True))
        raise InputError(f"{what} a method that uses negatives ({able}), not {spec.name}")
    if spec.inputs:
        raise InputError(f"{spec.name} takes {', '.join(spec.inputs)}, which marginal gains do not give")
    if "topk" in params:
        raise InputError(f"{spec.name}: unexpected parameter(s) topk (marginal gains score every negative)")
    check_params(spec.name, params)
    return spec.name


def _form(method: str, v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, params: Mapping[str, Any]) -> Any:
    """The method's incremental form over ``v``, ``t``, ``n``: its registry ``gains`` form with every
    parameter (the registry's defaults for those not given), else rescoring per candidate."""
    spec = get_method(method)
    full = {p: PARAMS[p].default for p in spec.params if PARAMS[p].default is not None}
    full.update({k: v for k, v in params.items() if k != "device"})
    if spec.gains is not None:
        return spec.gains(v, t, n, **full)
    logger.info("%s has no incremental gains form: each candidate is scored on its own (exact, slower)", spec.name)
    return RescoreGains(spec.scorer, v, t, n, {**full, "device": v.device})


def _setup(
    id_img_emb: Embeddings,
    ood_img_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings,
    cand_emb: Embeddings,
    method: str,
    params: Mapping[str, Any],
) -> tuple[Any, torch.Tensor, int]:
    method = check_gains_method(method, params)
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
    return _form(method, v, t, n, params), c, n_id


def _metrics(scores: np.ndarray, n_id: int, tpr: float, convention: str) -> tuple[np.ndarray, np.ndarray]:
    """FPR and AUROC of each column of ``scores`` [n_id + n_ood, C]."""
    fpr = np.empty(scores.shape[1])
    auc = np.empty(scores.shape[1])
    for j in range(scores.shape[1]):
        fpr[j] = M.fpr_at_tpr(scores[:n_id, j], scores[n_id:, j], tpr, convention=convention)  # type: ignore[arg-type]
        auc[j] = M.auroc(scores[:n_id, j], scores[n_id:, j])
    return fpr, auc


def _all_gains(
    sc: Any, cols: tuple[torch.Tensor, ...], n: int, n_id: int, tpr: float, convention: str
) -> tuple[np.ndarray, np.ndarray]:
    """FPR and AUROC with each candidate appended alone; ``cols``: the form's per-candidate columns, ``n`` images."""
    c = cols[0].shape[1]
    block = max(1, _BLOCK_BYTES // max(1, 8 * n))
    fprs, aucs = [], []
    for j in range(0, c, block):
        s = sc.scores(*(x[:, j : j + block] for x in cols)).cpu().numpy()
        f, a = _metrics(s, n_id, tpr, convention)
        fprs.append(f)
        aucs.append(a)
    return np.concatenate(fprs) if fprs else np.empty(0), np.concatenate(aucs) if aucs else np.empty(0)


def marginal_gains(
    id_img_emb: Embeddings,
    ood_img_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings,
    cand_emb: Embeddings,
    method: str = "neglabel",
    convention: str = "paper",
    *,
    tpr: float = 0.95,
    **params: ParamValue,
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
    method : str
        A registered method that takes negatives (``negvocab.list_methods(needs_negatives=True)``).
    convention : {"paper", "hendrycks", "openood"}
        The FPR convention (see :mod:`negvocab.metrics`).
    **params
        The method's parameters (its registry entry; the defaults where left out), ``device``,
        ``chunk_size``. NegLabel: a candidate lands in the group the grouping of ``M + 1`` negatives
        gives rank ``M``.

    Returns
    -------
    MarginalGains
        ``.fpr``, ``.auroc`` (one per candidate), ``.base_fpr``, ``.base_auroc``, ``.fpr_gain``.
    """
    convention = M.check_convention(convention)
    tpr = M._check_tpr(tpr)
    sc, cand, n_id = _setup(id_img_emb, ood_img_emb, id_emb, neg_emb, cand_emb, method, params)
    cols = sc.logits(cand)
    base = sc.base_scores()
    fpr, auc = _all_gains(sc, cols, len(base), n_id, tpr, convention)
    return MarginalGains(
        fpr=fpr,
        auroc=auc,
        base_fpr=M.fpr_at_tpr(base[:n_id], base[n_id:], tpr, convention=convention),  # type: ignore[arg-type]
        base_auroc=M.auroc(base[:n_id], base[n_id:]),
        method=get_method(method).name,
        convention=convention,
        tpr=tpr,
    )


def repair_curve(
    id_img_emb: Embeddings,
    ood_img_emb: Embeddings,
    id_emb: Embeddings,
    neg_emb: Embeddings,
    cand_emb: Embeddings,
    k: int,
    *,
    labels: Sequence[str] | None = None,
    method: str = "neglabel",
    convention: str = "paper",
    tpr: float = 0.95,
    oracle: bool = False,
    stop_when_no_gain: bool = True,
    **params: ParamValue,
) -> RepairCurve:
    """Greedy repair: add, ``k`` times, the candidate whose addition gives the lowest FPR@tpr (ties:
    the higher AUROC), appending it after the last negative; the metrics after each addition.

    With ``stop_when_no_gain`` the curve stops when no remaining candidate lowers the FPR or, at
    equal FPR, raises the AUROC, so the FPR column never rises. Stratified grouping updates one
    group per step; random grouping regroups (a pass over the negatives per step).
    ``oracle=True`` marks candidates taken from the evaluated OOD set's labels.

    Parameters
    ----------
    id_img_emb : array or tensor, shape (n_id, d)
        The ID images.
    ood_img_emb : array or tensor, shape (n_ood, d)
        The OOD images.
    id_emb : array or tensor, shape (K, d)
        The ID class prompt embeddings.
    neg_emb : array or tensor, shape (M, d)
        The negatives the repair starts from.
    cand_emb : array or tensor, shape (C, d)
        The candidates it adds from.
    k : int
        Additions at most (>= 1).
    labels : sequence of str, optional
        The candidates' labels, one per row of ``cand_emb`` (default ``candidate i``).
    method : str, default "neglabel"
        The method that scores the images.
    convention : str, default "paper"
        The metrics' convention (see :mod:`negvocab.scoring.metrics`).
    tpr : float, default 0.95
        The true-positive rate at which FPR is read.
    oracle : bool, default False
        The candidates are the evaluated OOD set's labels (recorded on the curve).
    stop_when_no_gain : bool, default True
        Stop when no remaining candidate improves the metrics.
    **params
        Go to the method's scorer.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be an integer >= 1, got {k!r}")
    convention = M.check_convention(convention)
    tpr = M._check_tpr(tpr)
    sc, cand, n_id = _setup(id_img_emb, ood_img_emb, id_emb, neg_emb, cand_emb, method, params)
    names = [str(x) for x in labels] if labels is not None else [f"candidate {i}" for i in range(len(cand))]
    if len(names) != len(cand):
        raise InputError(f"{len(names)} labels for {len(cand)} candidate embeddings")
    cols = sc.logits(cand)
    base = sc.base_scores()
    fpr0 = M.fpr_at_tpr(base[:n_id], base[n_id:], tpr, convention=convention)  # type: ignore[arg-type]
    auc0 = M.auroc(base[:n_id], base[n_id:])
    rows: list[dict[str, Any]] = [{"step": 0, "label": "", "fpr": fpr0, "auroc": auc0, "fpr_gain": 0.0}]
    left = list(range(len(cand)))
    while left and len(rows) <= k:
        fpr, auc = _all_gains(sc, tuple(x[:, left] for x in cols), len(base), n_id, tpr, convention)
        j = int(np.lexsort((np.arange(len(left)), -auc, fpr))[0])
        prev = rows[-1]
        if stop_when_no_gain and (fpr[j], -auc[j]) >= (prev["fpr"], -prev["auroc"]):
            break
        c = left.pop(j)
        sc.append(cand[c : c + 1], *(x[:, c] for x in cols))
        rows.append(
            {
                "step": len(rows),
                "label": names[c],
                "fpr": float(fpr[j]),
                "auroc": float(auc[j]),
                "fpr_gain": float(prev["fpr"] - fpr[j]),
            }
        )
    return RepairCurve(
        rows, get_method(method).name, convention, tpr, oracle=oracle, meta={"candidates": len(cand), "k": int(k)}
    )
