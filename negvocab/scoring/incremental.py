"""Incremental forms for marginal gains: each image's score with one label appended, without rescoring.

Adding a label ``c`` after the last of ``M`` negatives changes each image's score through a few
per-image quantities only (docs/methods.md, "Scores"):

- NegLabel: the label lands in the group that the grouping of ``M + 1`` negatives gives rank ``M``
  (stratified: ``M mod G``); that group's negative mass gains ``exp(cos(v, c) / tau)``, every other
  group is unchanged. With per-image group log-masses ``B_g`` and ID log-mass ``a``,
  ``S_c = (sum_{g != j} sigmoid(a - B_g) + sigmoid(a - logaddexp(B_j, s_c))) / G``.
- EOE (and the penalty of NegLabel+EOE): the softmax denominator gains ``exp(s_c)`` and the largest
  negative logit becomes ``max(max_neg, s_c)``.

One pass over the negatives gives the per-image quantities, one product with the candidates every
``s_c``. These are the registry's ``gains`` forms (:class:`negvocab.scoring.methods.Method`); a method
without one is served by :class:`RescoreGains`, exact and slow (one scoring per candidate).
:mod:`negvocab.diagnostics.gains` drives any of them.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch

from negvocab.scoring import inputs
from negvocab.scoring.grouping import Grouping, neglabel_groups

__all__ = ["RescoreGains", "SoftmaxGains", "eoe_gains", "neglabel_eoe_gains", "neglabel_gains"]


def _groups(m: int, groups: int, grouping: str, seed: int, device: torch.device) -> list[np.ndarray]:
    """:func:`negvocab.scoring.grouping.neglabel_groups` as the scorer draws them (on the scoring
    device where the grouping's permutation depends on it); ``grouping`` was checked with the parameters."""
    how = cast(Grouping, grouping)
    if "device" in inspect.signature(neglabel_groups).parameters:
        return neglabel_groups(m, groups, how, seed, device=device)
    return neglabel_groups(m, groups, how, seed)


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


class SoftmaxGains:
    """Scores of every image with one candidate appended, from per-image quantities: the grouped
    NegLabel term (``grouped``), the EOE joint softmax (``joint``), or both (NegLabel + EOE's penalty).

    Built by :func:`neglabel_gains`, :func:`eoe_gains` and :func:`neglabel_eoe_gains` (the registry's
    ``gains`` forms), which take every parameter explicitly: the defaults are the registry's."""

    def __init__(
        self,
        v: torch.Tensor,
        t: torch.Tensor,
        n: torch.Tensor,
        *,
        grouped: bool,
        joint: bool,
        tau: float = math.nan,
        groups: int = 1,
        grouping: str = "stratified",
        seed: int = 0,
        beta: float = 0.0,
        temp: float = math.nan,
        chunk_size: int | None = None,
    ) -> None:
        self.grouped, self.joint = grouped, joint
        self.v, self.t = v, t
        self.neg = n
        self.tau = tau
        self.groups = groups
        self.grouping = grouping
        self.seed = seed
        self.beta = beta
        self.temp = temp
        self.chunk_size = chunk_size
        self.state = self._pass(n)

    # -- one pass over the negatives ------------------------------------------------------------
    def _pass(self, neg: torch.Tensor, with_slot: bool = True) -> _State:
        """Per-image quantities of ``neg``; the groups are those of ``m + 1`` labels with rank ``m``
        left out (``with_slot``), or those of the ``m`` labels themselves."""
        m = neg.shape[0]
        st = _State(m=m)
        uses_groups, uses_joint = self.grouped, self.joint
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
        return cos / self.tau, cos / self.temp  # an unused one is NaN (its temperature is not set)

    def scores(self, s_tau: torch.Tensor, s_temp: torch.Tensor) -> torch.Tensor:
        """[n, C] scores with each candidate column appended alone."""
        st = self.state
        out = None
        if self.grouped:
            assert st.a is not None and st.b is not None
            a, b = st.a, st.b
            if st.slot < 0:  # a grouping that drops the last ranks (NegLabel's own) drops the candidate
                out = torch.sigmoid(a[:, None] - b).mean(1)[:, None].expand(-1, s_tau.shape[1])
            else:
                other = torch.sigmoid(a[:, None] - b).sum(1) - torch.sigmoid(a - b[:, st.slot])
                new = torch.sigmoid(a[:, None] - torch.logaddexp(b[:, st.slot, None], s_tau))
                out = (other[:, None] + new) / b.shape[1]
        if self.joint:
            assert st.lse_id is not None and st.lse_neg is not None and st.max_neg is not None and st.max_id is not None
            lz = torch.logaddexp(torch.logaddexp(st.lse_id, st.lse_neg)[:, None], s_temp)
            pen = torch.exp(torch.maximum(st.max_neg[:, None], s_temp) - lz)
            if not self.grouped:
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
        if self.grouped:
            if self.grouping != "stratified":
                st0 = self._pass(self.neg, with_slot=False)
                assert st0.a is not None and st0.b is not None
                out = torch.sigmoid(st0.a[:, None] - st0.b).mean(1)
            else:
                assert st.a is not None and st.b is not None
                keep = torch.isfinite(st.b).any(0)
                out = torch.sigmoid(st.a[:, None] - st.b[:, keep]).mean(1)
        if self.joint:
            assert st.lse_id is not None and st.lse_neg is not None and st.max_neg is not None and st.max_id is not None
            lz = torch.logaddexp(st.lse_id, st.lse_neg)
            pen = torch.exp(st.max_neg - lz)
            if not self.grouped:
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
        if self.grouped and self.grouping != "stratified":
            self.state = self._pass(self.neg)  # a random grouping of m + 2 labels is a new permutation
            return
        if self.grouped:
            assert st.b is not None
            b = st.b.clone()
            b[:, st.slot] = torch.logaddexp(b[:, st.slot], s_tau)
            m = st.m + 1
            g_next = min(int(self.groups), m + 1)
            if g_next > b.shape[1]:  # fewer negatives than groups: every label its own group
                b = torch.cat([b, torch.full((b.shape[0], 1), -math.inf, dtype=b.dtype, device=b.device)], 1)
            st.b, st.slot = b, m % g_next
        if self.joint:
            assert st.lse_neg is not None and st.max_neg is not None
            st.lse_neg = torch.logaddexp(st.lse_neg, s_temp)
            st.max_neg = torch.maximum(st.max_neg, s_temp)
        st.m += 1


def neglabel_gains(
    v: torch.Tensor,
    t: torch.Tensor,
    n: torch.Tensor,
    *,
    tau: float,
    groups: int,
    grouping: str,
    seed: int,
    chunk_size: int | None = None,
    **_: Any,
) -> SoftmaxGains:
    """NegLabel's incremental form: the grouped negative masses, one group gaining the candidate."""
    tau = inputs.positive(tau, "tau")
    return SoftmaxGains(
        v, t, n, grouped=True, joint=False, tau=tau, groups=groups, grouping=grouping, seed=seed, chunk_size=chunk_size
    )


def eoe_gains(
    v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, *, beta: float, T: float, chunk_size: int | None = None, **_: Any
) -> SoftmaxGains:
    """EOE's incremental form: the joint softmax denominator and the largest negative logit."""
    beta, temp = inputs.finite(beta, "beta"), inputs.positive(T, "T")
    return SoftmaxGains(v, t, n, grouped=False, joint=True, beta=beta, temp=temp, chunk_size=chunk_size)


def neglabel_eoe_gains(
    v: torch.Tensor,
    t: torch.Tensor,
    n: torch.Tensor,
    *,
    tau: float,
    groups: int,
    grouping: str,
    seed: int,
    beta: float,
    penalty_T: float | None = None,
    chunk_size: int | None = None,
    **_: Any,
) -> SoftmaxGains:
    """NegLabel + EOE's incremental form: both of the above (the penalty at ``penalty_T``, default tau)."""
    tau = inputs.positive(tau, "tau")
    beta = inputs.finite(beta, "beta")
    temp = tau if penalty_T is None else inputs.positive(penalty_T, "penalty_T")
    return SoftmaxGains(
        v,
        t,
        n,
        grouped=True,
        joint=True,
        tau=tau,
        groups=groups,
        grouping=grouping,
        seed=seed,
        beta=beta,
        temp=temp,
        chunk_size=chunk_size,
    )


class RescoreGains:
    """Any method's gains by rescoring ``neg + [c]`` for each candidate: exact, one scoring per
    candidate (what serves a registered method that has no incremental form)."""

    def __init__(
        self, scorer: Callable[..., Any], v: torch.Tensor, t: torch.Tensor, n: torch.Tensor, params: Mapping[str, Any]
    ) -> None:
        self.scorer, self.v, self.t, self.neg, self.params = scorer, v, t, n, dict(params)
        self.cand: torch.Tensor | None = None

    def _score(self, neg: torch.Tensor) -> torch.Tensor:
        s = self.scorer(self.v, self.t, neg, **self.params)
        return torch.as_tensor(np.asarray(s, dtype=np.float64))

    def logits(self, cand: torch.Tensor) -> tuple[torch.Tensor]:
        """Each candidate's index, as a [1, C] column per candidate (rescoring needs no logits)."""
        self.cand = cand
        return (torch.arange(len(cand))[None, :],)

    def scores(self, index: torch.Tensor) -> torch.Tensor:
        """[n, C] scores with each candidate appended alone (a scoring each)."""
        assert self.cand is not None
        cols = [self._score(torch.cat([self.neg, self.cand[int(j) : int(j) + 1]])) for j in index[0]]
        return torch.stack(cols, 1) if cols else torch.empty((len(self.v), 0), dtype=torch.float64)

    def base_scores(self) -> np.ndarray:
        return self._score(self.neg).numpy()

    def append(self, cand: torch.Tensor, *_: torch.Tensor) -> None:
        """Make ``cand`` ([1, d]) the last negative."""
        self.neg = torch.cat([self.neg, cand])
