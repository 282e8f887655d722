"""Paired comparisons in words, within the scope a table shows: which entry beats which, on the same images.

:func:`comparisons` states, for each pair of entries, the paired bootstrap over the same ID and OOD
images (:mod:`negvocab.evaluation.compare`), one sentence per pair: pairs of vocabularies (and the
methods without a vocabulary, MCM, beside them) per method and convention across the models
(``across="vocabularies"``), or pairs of models per vocabulary, method and convention
(``across="models"``: what a table with models as rows claims). ``where`` keeps only the rows a
table shows (its model, method, convention). Without stored per-image scores a sentence says the
difference was not tested and names no winner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import MEAN
from negvocab.evaluation.compare import (
    PairedComparison,
    bootstrap_draws,
    comparison_sentence,
    metric_label,
    paired_bootstrap,
    paired_from_draws,
)
from negvocab.evaluation.kinds import caveat_notes, result_kind
from negvocab.evaluation.records import RANDOM_WEIGHTS_WARNING
from negvocab.report.significance import ScoreGetter

__all__ = ["ACROSS", "comparisons"]

#: what a comparison pairs: vocabularies (per model, stated over the models) or models
ACROSS = ("vocabularies", "models")
_Entry = tuple[str, str]  # (vocabulary, method); vocabulary "" for a method without one


def _kept(r: Mapping[str, Any], where: Mapping[str, str]) -> bool:
    """Whether ``where`` keeps a row; a baseline (a batch method without a vocabulary) fits any fixed
    vocabulary or method."""
    for k, v in where.items():
        if k in ("vocabulary", "method") and result_kind(r) == "baseline":
            continue
        if k != "ood_set" and str(r.get(k, "")) != str(v):
            return False
    return True


def comparisons(
    rows: Sequence[Mapping[str, Any]],
    scores: ScoreGetter | None,
    *,
    metric: str = "fpr",
    ood_set: str = MEAN,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    pairs: Sequence[tuple[str, str]] | None = None,
    where: Mapping[str, str] | None = None,
    across: str = "vocabularies",
) -> list[str]:
    """Sentences comparing each pair of entries (see the module docstring); ``pairs`` names the pairs
    instead (vocabulary names; a method without a vocabulary by its method name)."""
    if across not in ACROSS:
        raise InputError(f"across must be {' or '.join(ACROSS)}, got {across!r}")
    label = metric_label(metric, float(rows[0].get("tpr", 0.95)) if rows else 0.95)
    sets = list(dict.fromkeys(str(r.get("ood_set")) for r in rows))
    if ood_set == MEAN and MEAN not in sets and len(sets) == 1:
        ood_set = sets[0]  # one OOD set: its mean is itself
    sel = [r for r in rows if str(r.get("ood_set")) == ood_set and _kept(r, dict(where or {}))]
    bad = {r["vocabulary"] for r in sel if r.get("deployable") is False and r.get("vocabulary")}
    scope = _Scope(
        scores,
        metric,
        ood_set,
        n_boot,
        seed,
        level,
        bad,
        {(r["model"], r.get("vocabulary", ""), r["method"], r["convention"]): r for r in sel},
    )
    out: list[str] = []
    for conv in dict.fromkeys(r["convention"] for r in sel):
        mine = [r for r in sel if r["convention"] == conv]
        tpr = float(mine[0].get("tpr", 0.95))
        base: list[_Entry] = [("", m) for m in dict.fromkeys(r["method"] for r in mine if result_kind(r) == "baseline")]
        methods = list(dict.fromkeys(r["method"] for r in mine if result_kind(r) != "baseline"))  # by kind
        groups = {m: [*dict.fromkeys((r["vocabulary"], m) for r in mine if r["method"] == m), *base] for m in methods}
        if not methods and base:
            groups = {"": base}
        models = list(dict.fromkeys(r["model"] for r in mine))
        ctx = f"{label} on {ood_set}"
        if across == "models":
            out += scope.across_models(groups, models, conv, tpr, ctx)
        else:
            out += scope.across_entries(groups, models, conv, tpr, ctx, pairs)
    if out:
        out += [f"Caveat: {c}" for c in caveat_notes(sel)]
    if out and any(r.get("random_weights") for r in sel):
        out.append(RANDOM_WEIGHTS_WARNING)
    return out


class _Scope:
    """The rows a comparison sees (``value``: by model, vocabulary, method and convention), the test's
    settings and each entry's bootstrap draws, drawn once."""

    def __init__(
        self,
        scores: ScoreGetter | None,
        metric: str,
        ood_set: str,
        n_boot: int,
        seed: int,
        level: float,
        bad: set[str],
        value: dict[tuple[str, str, str, str], Mapping[str, Any]],
    ) -> None:
        self.scores, self.metric, self.ood_set = scores, metric, ood_set
        self.n_boot, self.seed, self.level, self.bad, self.value = n_boot, seed, level, bad, value
        self.memo: dict[tuple[str, ...], Any] = {}

    def shown(self, e: _Entry) -> str:
        return f"{e[1]} (no vocabulary)" if not e[0] else f"{e[0]} (NOT deployable)" if e[0] in self.bad else e[0]

    def has(self, model: str, e: _Entry, conv: str) -> bool:
        return (model, e[0], e[1], conv) in self.value

    def diff(self, a: str, ea: _Entry, b: str, eb: _Entry, conv: str) -> float:
        """The metric of entry ``ea`` of model ``a`` minus that of ``eb`` of ``b`` (untested)."""
        return float(self.value[(a, *ea, conv)][self.metric] - self.value[(b, *eb, conv)][self.metric])

    def draws(self, model: str, e: _Entry, conv: str, tpr: float) -> Any:
        """(point, draws, sizes, scores) of one entry, or None without its per-image scores."""
        key = (model, *e, conv)
        if key not in self.memo:
            got = self.scores(model, e[0], e[1]) if self.scores else None
            if got is None or (self.ood_set != MEAN and self.ood_set not in got[1]):
                self.memo[key] = None
            else:
                found = (got[0], got[1] if self.ood_set == MEAN else {self.ood_set: got[1][self.ood_set]})
                ((point, d),) = bootstrap_draws(
                    {"x": found}, metric=self.metric, tpr=tpr, convention=conv, n_boot=self.n_boot, seed=self.seed
                ).values()
                sizes = (
                    int(np.asarray(found[0]).size),
                    tuple((k, int(np.asarray(x).size)) for k, x in found[1].items()),
                )
                self.memo[key] = (point, d, sizes, found)
        return self.memo[key]

    def test(self, ma: str, ea: _Entry, mb: str, eb: _Entry, conv: str, tpr: float) -> PairedComparison | None:
        da, db = self.draws(ma, ea, conv, tpr), self.draws(mb, eb, conv, tpr)
        if da is None or db is None:
            return None
        if da[2] != db[2]:  # not the same images: the paired test says so in one line
            paired_bootstrap(
                *da[3], *db[3], metric=self.metric, tpr=tpr, convention=conv, n_boot=self.n_boot, seed=self.seed
            )
        return paired_from_draws(
            da[:2], db[:2], metric=self.metric, n_id=da[2][0], n_ood=dict(da[2][1]), level=self.level
        )

    def across_models(
        self, groups: Mapping[str, list[_Entry]], models: list[str], conv: str, tpr: float, ctx: str
    ) -> list[str]:
        """One sentence per pair of models, for each entry both have."""
        out = []
        for e in dict.fromkeys(e for es in groups.values() for e in es):
            ms = [m for m in models if self.has(m, e, conv)]
            for a, b in combinations(ms, 2):
                res = self.test(a, e, b, e, conv, tpr)
                where = f"{ctx}, {self.shown(e)}, {e[1]}, {conv}"
                if res is None:
                    d = self.diff(a, e, b, e, conv)
                    out.append(f"{a} vs {b} ({where}): NOT tested (no per-image scores); {a} - {b} {100 * d:+.2f}")
                else:
                    out.append(comparison_sentence(a, b, [(self.shown(e), res)], context=where, unit="entries"))
        return out

    def across_entries(
        self,
        groups: Mapping[str, list[_Entry]],
        models: list[str],
        conv: str,
        tpr: float,
        ctx: str,
        pairs: Sequence[tuple[str, str]] | None,
    ) -> list[str]:
        """Per method, one sentence per pair of its entries (``pairs``, or every pair) over the models
        that have both, and one for the models without per-image scores."""
        out = []
        for meth, entries in groups.items():
            named = {(e[0] or e[1]): e for e in entries}
            chosen = (
                [(named[a], named[b]) for a, b in pairs if a in named and b in named]
                if pairs is not None
                else list(combinations(entries, 2))
            )
            for ea, eb in chosen:
                ms = [m for m in models if self.has(m, ea, conv) and self.has(m, eb, conv)]
                if not ms:
                    continue
                where = f"{ctx}, {meth or ea[1]}, {conv}"
                results, untested = [], []
                for m in ms:
                    res = self.test(m, ea, m, eb, conv, tpr)
                    if res is None:
                        untested.append((m, self.diff(m, ea, m, eb, conv)))
                    else:
                        results.append((m, res))
                a, b = self.shown(ea), self.shown(eb)
                if results:
                    out.append(comparison_sentence(a, b, results, context=where))
                if untested:
                    diffs = "; ".join(f"{m} {100 * d:+.2f}" for m, d in untested)
                    out.append(
                        f"{a} vs {b} ({where}): NOT tested (no per-image scores) for "
                        f"{len(untested)} of {len(ms)} models; {ea[0] or ea[1]} - {eb[0] or eb[1]} in points: {diffs}"
                    )
        return out
