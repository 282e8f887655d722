"""A grid's summary rows, made from its cells as ``negvocab score`` makes them: a ``mean`` row (and
``near-ood`` / ``far-ood`` rows) per (model, vocabulary, method, convention) over its OOD sets, and a
test-time method's spread over its stream seeds."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any

from negvocab.data.benchmarks import MEAN
from negvocab.evaluation.accuracy import mean_ccr
from negvocab.evaluation.records import seed_spread, summary_records, summary_sets
from negvocab.evaluation.row import INTERVAL_METRICS, ResultRow
from negvocab.report.results import CCR_COLUMNS, TABLE_COLUMNS

__all__ = ["GROUP", "STREAM_KEYS", "mean_rows", "spread_rows"]

COLUMNS = TABLE_COLUMNS  # the one row of every results file (negvocab.evaluation.row.ROW_COLUMNS)
#: what a test-time method's cells share and their summary rows keep
STREAM_KEYS = ("test_time", "stream_order", "stream_batch_size", "stream_seed", "id_ood_ratio")
GROUP = ("model", "vocabulary", "method", "convention")
_BOOTSTRAP = ("ci_level", "n_boot", "ci_resample")  # what a row says of its intervals' bootstrap


def mean_rows(
    rows: Sequence[Mapping[str, Any]],
    means: Mapping[tuple[str, ...], Mapping[str, float]] | None = None,
    groups: Mapping[str, str | None] | None = None,
) -> list[dict[str, Any]]:
    """One ``ood_set = "mean"`` row per (model, vocabulary, method, convention) over its OOD sets,
    after a ``near-ood`` and a ``far-ood`` row when its sets span both groups (``groups``: each set's
    group in its benchmark), made as ``negvocab score`` makes them
    (:func:`negvocab.evaluation.records.summary_records`). The mean's intervals from ``means``
    (bootstrap of the mean, see :func:`negvocab.grid.run.mean_intervals`: the ``mean`` row's under the
    (model, vocabulary, method, convention) key, a group row's under that key plus its name)."""
    by_key: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        by_key.setdefault(tuple(r[k] for k in GROUP), []).append(r)
    out = []
    for key, members in by_key.items():
        names = [m["ood_set"] for m in members]
        stored = {
            name: (means or {}).get(key if name == MEAN else (*key, name))
            for name, _ in summary_sets(names, groups or {})
        }
        intervals = {name: _pairs(ci) for name, ci in stored.items() if ci}
        first = ResultRow.from_dict(members[0])
        recs = [first, *map(ResultRow.from_dict, members[1:])]
        boot = {"convention": first.convention, "n_boot": first.n_boot or 0}
        for rec in summary_records(recs, None, None, groups or {}, intervals=intervals, **boot):
            picked = [m for m in members if m["ood_set"] in (rec.ood_sets or names)]
            out.append(_summary_row(rec.replace(aupr_method=first.aupr_method), picked))
    return out


def _pairs(ci: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """A stored interval of the mean (``<metric>_ci_low``/``_ci_high``) as ``metric -> (low, high)``."""
    return {m: (ci[f"{m}_ci_low"], ci[f"{m}_ci_high"]) for m in INTERVAL_METRICS if f"{m}_ci_low" in ci}


_SEEDED = re.compile(r"(?P<base>.+)#s(?P<seed>\d+)")


def spread_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per test-time method run over several stream seeds (methods ``NAME#s<seed>``), model,
    vocabulary, convention and OOD set (summary rows too): method ``NAME``, each metric's mean over the
    seeds with its standard deviation, minimum and maximum (:func:`negvocab.evaluation.records.seed_spread`;
    no bootstrap interval: the seeds are the spread)."""
    by_key: dict[tuple[Any, ...], list[tuple[int, Mapping[str, Any]]]] = {}
    for r in rows:
        found = _SEEDED.fullmatch(str(r.get("method", "")))
        if found and r.get("test_time"):
            key = (r["model"], r["vocabulary"], found["base"], r["convention"], r["ood_set"])
            by_key.setdefault(key, []).append((int(found["seed"]), r))
    out = []
    for (_, _, base, _, _), members in by_key.items():
        if len(members) < 2:
            continue
        members.sort(key=lambda m: m[0])
        row = {**members[0][1], "method": base, **seed_spread([r for _, r in members], [s for s, _ in members])}
        row.update(_accuracy([r for _, r in members]))  # CCR: the mean over the seeds, as the metrics
        row.update({k: None for k in COLUMNS if k.endswith(("_ci_low", "_ci_high")) or k in _BOOTSTRAP})
        digest = hashlib.sha256(" ".join(str(r.get("cell", "")) for _, r in members).encode()).hexdigest()[:16]
        out.append({**row, "cell": digest})
    return out


def _summary_row(rec: ResultRow, members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A summary row of the tidy table (:func:`negvocab.evaluation.records.summary_records`' ``rec`` over the
    cells ``members``): the table's columns, a test-time method's stream, the ID accuracy and CCR."""
    got = rec.to_dict()  # the cells' AUPR method: a grid's tables have always kept it
    row = {k: got[k] for k in COLUMNS}
    # what the cells share (model ... order) as the cells hold it: an older cell without vocab_size or
    # oracle gives a summary row without them, not the record's defaults (0, False)
    row.update({k: members[0].get(k) for k in COLUMNS[: COLUMNS.index("cell")]})
    row.update({k: members[0][k] for k in STREAM_KEYS if k in members[0]})  # a test-time method's stream
    row.update({k: got[k] for k in _accuracy(members)})
    return row


def _accuracy(members: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A summary row's ID accuracy (its cells': one model, one ID set) and CCR (the mean over its cells,
    :func:`negvocab.evaluation.accuracy.mean_ccr`, as ``negvocab score``'s summary rows), where every cell
    holds them (a folder of an older version: none)."""
    out: dict[str, Any] = {}
    if all("id_accuracy" in m for m in members):
        out["id_accuracy"] = members[0]["id_accuracy"]
    if all(c in m for m in members for c in CCR_COLUMNS):
        out.update(mean_ccr(members))
    return out
