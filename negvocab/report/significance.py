"""One significance rule for every mark of a winner in a table: a paired test on the same images.

An entry of a table is bold only where the paired bootstrap over the same ID and OOD images
(:func:`negvocab.evaluation.compare.bootstrap_draws` and :func:`~negvocab.evaluation.compare.paired_from_draws`,
the test ``negvocab table --compare`` states in words) finds it better than every other entry it
competes with, at the table's ``level``. The competitors are the entries of one column (or one row),
which differ by what the table's layout shows (vocabularies of one model, or models when the
layout compares models). Entries of a kind that is no result (oracle, transductive:
:data:`negvocab.evaluation.kinds.COMPETING_KINDS`) neither win nor compete; where an entry's
per-image scores are not stored, or two entries were not scored on the same images, or one is a
test-time entry (its ID scores are those of each OOD set's own stream), nothing is bold, since nothing
was tested.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import MEAN
from negvocab.evaluation.compare import METRIC_NAMES, SCORE_METRICS, bootstrap_draws, metric_label, paired_from_draws
from negvocab.evaluation.kinds import COMPETING_KINDS, result_kind

__all__ = ["BOLD_AXES", "PairedMarks", "ScoreGetter", "bold_note"]

#: (model, vocabulary, method) -> (ID scores, OOD scores by set), or None where they are not stored
ScoreGetter = Callable[[str, str, str], "tuple[np.ndarray, dict[str, np.ndarray]] | None"]
#: which entries compete: those of a column (the best row per column) or of a row
BOLD_AXES = ("cols", "rows")

_Draws = tuple[float, np.ndarray, tuple[Any, ...]]
#: why a group with a test-time entry has no bold
_PER_STREAM = "a test-time entry is not tested (each OOD set's stream scored the ID images anew)"


@dataclass
class PairedMarks:
    """Bold marks from paired tests over per-image scores (``scores``), memoised per entry.

    ``level``: the interval's coverage; ``n_boot``/``seed``: the bootstrap's draws (the same for
    every entry scored on the same images, so any two subtract into a paired difference).
    ``missing`` collects why a group got no bold (shown in the caption).
    """

    scores: ScoreGetter | None
    level: float = 0.95
    n_boot: int = 1000
    seed: int = 0
    missing: set[str] = field(default_factory=set)
    _memo: dict[tuple[Any, ...], _Draws | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.level < 1:
            raise InputError(f"level must be in (0, 1), got {self.level!r}")
        if int(self.n_boot) < 1:
            raise InputError(f"n_boot must be >= 1 for a paired test, got {self.n_boot!r}")

    def _draws(self, row: Mapping[str, Any], metric: str) -> _Draws | None:
        """(point, per-draw values, image counts) of one entry on its OOD set (``mean``: all sets; a
        group row, ``near-ood``/``far-ood``: its ``ood_sets``)."""
        conv, tpr = str(row.get("convention", "paper")), float(row.get("tpr", 0.95))
        ood = str(row.get("ood_set", ""))
        key = (str(row.get("model", "")), str(row.get("vocabulary", "")), str(row["method"]), conv, tpr, ood, metric)
        if key not in self._memo:
            # a test-time entry's ID scores differ from one OOD set's stream to the next: no one paired set
            test_time = result_kind(row) == "test_time"
            got = self.scores(key[0], key[1], key[2]) if self.scores is not None and not test_time else None
            names = [] if got is None else list(got[1]) if ood == MEAN else list(row.get("ood_sets") or [ood])
            sets = {n: got[1][n] for n in names} if got is not None and set(names) <= set(got[1]) else None
            if got is None or sets is None:
                self._memo[key] = None
            else:
                ((point, draws),) = bootstrap_draws(
                    {"x": (got[0], sets)}, metric=metric, tpr=tpr, convention=conv, n_boot=self.n_boot, seed=self.seed
                ).values()
                sizes = (int(np.asarray(got[0]).size), *((k, int(np.asarray(v).size)) for k, v in sets.items()))
                self._memo[key] = (point, draws, (conv, tpr, sizes))
        return self._memo[key]

    def marks(
        self, entries: Sequence[Mapping[str, Any] | None], values: np.ndarray, metric: str, *, ties: str = "none"
    ) -> np.ndarray:
        """Bold marks of one group of ``entries`` (the rows behind a column's or a row's cells; None
        for a summary or an empty cell) with their ``values``. ``ties="none"``: the best entry alone,
        where it is better than every other competitor at ``level``; ``"all"``: the best entry and
        every competitor not distinguishable from it (nothing where a test is missing)."""
        out = np.zeros(len(entries), dtype=bool)
        if metric not in SCORE_METRICS:  # ID accuracy, CCR: they need each image's class, not stored
            self.missing.add(f"{metric_label(metric)} is not tested (it needs each ID image's classification)")
            return out
        compete = [
            i
            for i, r in enumerate(entries)
            if r is not None and not np.isnan(values[i]) and result_kind(r) in COMPETING_KINDS
        ]
        if len(compete) < 2:
            return out
        draws = {i: self._draws(entries[i], metric) for i in compete}  # type: ignore[arg-type]
        if any(d is None for d in draws.values()):
            none = [entries[i] for i, d in draws.items() if d is None]
            streamed = all(result_kind(r) == "test_time" for r in none if r is not None)
            self.missing.add(_PER_STREAM if streamed else "per-image scores not stored")
            return out
        got = {i: d for i, d in draws.items() if d is not None}  # every one, as just checked
        if len({d[2] for d in got.values()}) > 1:
            self.missing.add("entries not scored on the same images under one convention")
            return out
        higher = METRIC_NAMES[metric][1]
        best = max(compete, key=lambda i: values[i]) if higher else min(compete, key=lambda i: values[i])
        top = [i for i in compete if abs(values[i] - values[best]) <= 1e-12]
        if len(top) > 1 and ties == "none":
            return out
        verdicts = {}
        for j in compete:
            if j == best:
                continue
            a, b = got[best], got[j]
            n_id, *sets = a[2][2]
            res = paired_from_draws(
                a[:2],
                b[:2],
                metric=metric,
                n_id=n_id,
                n_ood=dict(sets),
                level=self.level,
            )
            verdicts[j] = res.verdict
        if ties == "none":
            out[best] = all(v == "a" for v in verdicts.values())
        else:
            out[best] = True
            for j, v in verdicts.items():
                out[j] = v != "a"
        return out


def bold_note(marks: PairedMarks | None, axis: str, ties: str, entry: str) -> str:
    """The caption's sentence on bold: the test, its scope, its level, and where nothing is bold."""
    if marks is None:
        return "No bold (bold=none)."
    group = "column" if axis == "cols" else "row"
    level = f"{100 * marks.level:.10g}%"
    test = f"a paired bootstrap over the same ID and OOD images ({marks.n_boot} draws, {level} two-sided interval)"
    if ties == "none":
        head = f"Bold: the best {entry} of each {group} where {test} finds it better than every other {entry} of it"
    else:
        head = f"Bold: the best {entry} of each {group} and every {entry} {test} cannot distinguish from it"
    why = "; ".join(sorted(marks.missing))
    return (
        head
        + "; oracle and transductive entries are never bold and do not compete; summary means are not tested"
        + (f"; no bold where {why}" if why else "")
        + "."
    )
