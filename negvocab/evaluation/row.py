"""One result row: :class:`ResultRow`, the typed record that ``score``, ``sweep`` and the grid all make.

A row names what was scored (model, vocabulary, method and its parameters, OOD set, templates), how
(convention, TPR) and what came out (FPR, AUROC, AUPR-In/Out, counts, bootstrap intervals). Inside
the library an interval has one shape: ``intervals[metric] = (low, high)``. Every results file holds
one row shape, :meth:`ResultRow.to_dict`'s: the columns :data:`ROW_COLUMNS` in that order (null where
a field does not apply; an interval as ``<metric>_ci_low``/``<metric>_ci_high``, null where not
bootstrapped; ``caveats`` as ``"kind: text; kind: text"``; ``params`` an object and ``ood_sets`` a list,
written as JSON text in a CSV or parquet table: :func:`table_cell`), then a row's extra fields:
``score``'s results.json and results.csv, ``sweep``'s files, a grid's cells and its table.
:meth:`ResultRow.from_dict` is the one reader of this row and of every older shape (``fpr_ci: [low,
high]`` pairs, a ``score`` file's ``kind;kind`` caveats, a grid's JSON-text params, a sweep reference's
``name``; :func:`interval` gives one interval of a row dict, :func:`file_row` any row in this shape);
:func:`to_frame` and :func:`rows_from_frame` go to a pandas DataFrame and back.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from negvocab.core.errors import InputError
from negvocab.evaluation.kinds import RESULT_KINDS, result_kind  # the one rule, re-exported where it was

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "INTERVAL_METRICS",
    "LAYOUTS",
    "RESULT_KINDS",
    "ROW_COLUMNS",
    "ResultRow",
    "file_row",
    "interval",
    "result_kind",
    "rows_from_frame",
    "table_cell",
    "to_frame",
]

#: the metrics that may carry a bootstrap interval, in the order files write them
INTERVAL_METRICS: tuple[str, ...] = ("fpr", "auroc", "aupr_in", "aupr_out")
#: the columns of every results row, in order (a row's extra fields follow them)
ROW_COLUMNS: tuple[str, ...] = (
    "model", "pretrained", "random_weights",
    "vocabulary", "vocab_source", "vocab_size", "vocab_hash", "oracle", "deployable", "caveats",
    "method", "params", "templates", "M", "order", "cell",
    "ood_set", "n_ood_sets", "ood_sets", "convention", "positive", "tpr",
    *(f"{m}{s}" for m in INTERVAL_METRICS for s in ("", "_ci_low", "_ci_high")),
    "aupr_method", "n_id", "n_ood", "ci_level", "n_boot", "ci_resample",
)  # fmt: skip
#: where a row came from: ``score`` (results.json), ``sweep`` and ``reference`` (sweep.json), ``grid``
#: (a grid cell and the tidy table); older files had a row shape for each, read back by
#: :meth:`ResultRow.from_dict`
LAYOUTS: tuple[str, ...] = ("score", "sweep", "reference", "grid")
Layout = Literal["score", "sweep", "reference", "grid"]
_REQUIRED = ("method", "ood_set", "convention", "tpr", "fpr", "auroc", "aupr_in", "aupr_out", "n_id", "n_ood")
#: keys a file holds that the record derives (not kept in ``extra``)
_DERIVED = {"positive", "oracle", "name", "layout", "extra", "intervals", "result_kind"}


@dataclass(frozen=True)
class ResultRow:
    """The metrics of one (model, vocabulary, method, OOD set, convention), with what made them.

    ``intervals``: metric -> ``(low, high)`` percentile bootstrap interval over OOD images (at
    ``ci_level``, ``n_boot`` draws; absent without a bootstrap). Summary rows (``ood_set`` ``mean``,
    ``near-ood``, ``far-ood``) carry ``n_ood_sets`` and, for the groups, ``ood_sets``. ``caveats``:
    kind -> text of a vocabulary that is not deployable (an old ``score`` file holds the kinds only).
    ``M`` and ``order``: a sweep's vocabulary size M and its order; ``cell``: a grid cell's digest;
    ``extra``: anything else a row holds (NegLabel top-k bounds, ...). ``layout``: where the row
    came from (:data:`LAYOUTS`).

    Parameters
    ----------
    method : str
        The method.
    ood_set : str
        The OOD set, or a summary (``mean``, ``near-ood``, ``far-ood``).
    convention : str
        The metrics' convention.
    tpr : float
        The true-positive rate at which FPR is read.
    fpr, auroc, aupr_in, aupr_out : float
        The metrics.
    n_id : int
        ID images.
    n_ood : int
        OOD images.
    model : str, default ""
        The model.
    pretrained : str, optional
        The model's weights.
    random_weights : bool, default False
        Scored with random weights.
    vocabulary : str, default ""
        The vocabulary's name.
    vocab_source : str, default ""
        The vocabulary's source.
    vocab_hash : str, default ""
        The vocabulary's hash.
    vocab_size : int, default 0
        The vocabulary size M.
    deployable : bool, default True
        False for a vocabulary that is not deployable.
    caveats : mapping kind -> text, default {}
        Why the vocabulary is not deployable.
    params : mapping, optional
        The method's parameters.
    templates : str, default ""
        The prompt templates.
    aupr_method : str, optional
        How AUPR was computed under the convention.
    intervals : mapping metric -> (low, high), default {}
        Bootstrap intervals.
    ci_level : float, optional
        The intervals' level.
    n_boot : int, optional
        Bootstrap draws.
    ci_resample : str, optional
        What the bootstrap resampled.
    n_ood_sets : int, optional
        OOD sets a summary row averages.
    ood_sets : tuple of str, optional
        The OOD sets of a group row.
    M : int, optional
        A sweep's vocabulary size.
    order : str, optional
        A sweep's order.
    cell : str, optional
        A grid cell's digest.
    extra : mapping, default {}
        Anything else a row holds.
    layout : Layout, default "score"
        Where the row came from (:data:`LAYOUTS`).
    """

    method: str
    ood_set: str
    convention: str
    tpr: float
    fpr: float
    auroc: float
    aupr_in: float
    aupr_out: float
    n_id: int
    n_ood: int
    model: str = ""
    pretrained: str | None = None
    random_weights: bool = False
    vocabulary: str = ""
    vocab_source: str = ""
    vocab_hash: str = ""
    vocab_size: int = 0
    deployable: bool = True
    caveats: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, Any] | None = None
    templates: str = ""
    aupr_method: str | None = None
    intervals: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    ci_level: float | None = None
    n_boot: int | None = None
    ci_resample: str | None = None
    n_ood_sets: int | None = None
    ood_sets: tuple[str, ...] | None = None
    M: int | None = None
    order: str | None = None
    cell: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    layout: Layout = "score"

    @property
    def positive(self) -> str:
        """The positive class of the FPR: OOD under openood, else ID."""
        return "OOD" if self.convention == "openood" else "ID"

    @property
    def oracle(self) -> bool:
        return "oracle" in self.caveats

    @property
    def result_kind(self) -> str:
        """What kind of result this is (:data:`RESULT_KINDS`; :func:`negvocab.evaluation.kinds.result_kind`)."""
        fields = {"vocabulary": self.vocabulary, "deployable": self.deployable, "caveats": dict(self.caveats)}
        return result_kind({**fields, **{k: self.extra.get(k) for k in ("test_time", "tuned_on_test")}})

    @property
    def summary(self) -> bool:
        """Whether the row averages several OOD sets (``mean``, ``near-ood``, ``far-ood``)."""
        return self.n_ood_sets is not None

    def replace(self, **changes: Any) -> ResultRow:
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------------------------------
    # writing
    # ------------------------------------------------------------------------------------------
    def to_dict(self, layout: Layout | None = None) -> dict[str, Any]:
        """The row as every results file holds it: :data:`ROW_COLUMNS` in order (None where a field
        does not apply), then ``extra``. ``layout`` (deprecated, ignored): every file holds this one row."""
        if layout is not None:
            if layout not in LAYOUTS:
                raise InputError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
            warnings.warn(
                "ResultRow.to_dict(layout): every results file holds one row now; layout is ignored and "
                "goes in the next release",
                DeprecationWarning,
                stacklevel=2,
            )
        out: dict[str, Any] = {
            "model": self.model,
            "pretrained": self.pretrained,
            "random_weights": self.random_weights,
            "vocabulary": self.vocabulary,
            "vocab_source": self.vocab_source,
            "vocab_size": self.vocab_size,
            "vocab_hash": self.vocab_hash,
            "oracle": self.oracle,
            "deployable": self.deployable,
            "caveats": "; ".join(f"{k}: {v}" for k, v in self.caveats.items()),
            "method": self.method,
            "params": None if self.params is None else dict(self.params),
            "templates": self.templates,
            "M": self.M,
            "order": self.order,
            "cell": self.cell,
            **self.metrics_dict(),
        }
        return {**out, **{k: v for k, v in self.extra.items() if k not in out}}

    def metrics_dict(self) -> dict[str, Any]:
        """The OOD set, the metrics and their intervals: :data:`ROW_COLUMNS` from ``ood_set`` on."""
        out: dict[str, Any] = {
            "ood_set": self.ood_set,
            "n_ood_sets": self.n_ood_sets,
            "ood_sets": None if self.ood_sets is None else list(self.ood_sets),
            "convention": self.convention,
            "positive": None if self.summary else self.positive,
            "tpr": self.tpr,
        }
        for m in INTERVAL_METRICS:
            low, high = self.intervals.get(m, (None, None))
            out.update({m: getattr(self, m), f"{m}_ci_low": low, f"{m}_ci_high": high})
        out.update(aupr_method=self.aupr_method, n_id=self.n_id, n_ood=self.n_ood)
        out.update(ci_level=self.ci_level, n_boot=self.n_boot, ci_resample=self.ci_resample)
        return out

    def flat_dict(self) -> dict[str, Any]:
        """Every field in one flat mapping (intervals as ``<metric>_ci_low``/``_ci_high``, ``extra``
        merged): a DataFrame's columns (:func:`to_frame`)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in ("intervals", "extra"):
                continue
            value = getattr(self, f.name)
            out[f.name] = dict(value) if isinstance(value, Mapping) else value
        for m in INTERVAL_METRICS:
            out[f"{m}_ci_low"], out[f"{m}_ci_high"] = self.intervals.get(m, (math.nan, math.nan))
        return {**out, **self.extra}

    # ------------------------------------------------------------------------------------------
    # reading
    # ------------------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, row: Mapping[str, Any], layout: Layout | None = None) -> ResultRow:
        """A row read back from any results file, old or new: this version's row (:meth:`to_dict`), an
        older ``score`` results.json row, sweep or reference row of sweep.json, grid cell row or
        tidy-table row (intervals as ``fpr_ci: [low, high]`` or as ``fpr_ci_low``/``fpr_ci_high``), or
        :meth:`flat_dict`'s, or a CSV table's row as :class:`csv.DictReader` reads it (every value text, an
        empty cell for a missing value: :func:`_from_text`). ``layout``: where it came from (default: guessed
        from its fields)."""
        if isinstance(row.get("fpr"), str):  # a metric as text: a CSV row (a JSON row's metrics are numbers)
            row = _from_text(row)
        missing = [k for k in _REQUIRED if k not in row]
        if missing:
            raise InputError(f"a results row lacks {', '.join(missing)}; it holds {', '.join(map(str, row))}")
        layout = layout or row.get("layout") or _detect(row)
        if layout not in LAYOUTS:
            raise InputError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        kw: dict[str, Any] = {k: row[k] for k in names & set(row) if k not in _DERIVED}
        kw["caveats"] = _caveats(row.get("caveats"))
        params = row.get("params")
        try:
            kw["params"] = json.loads(params) if isinstance(params, str) else params
        except ValueError:
            raise InputError(f"a results row's params must be a JSON object, got {params!r:.60}") from None
        if row.get("ood_sets") is not None:
            sets = row["ood_sets"]
            kw["ood_sets"] = tuple(json.loads(sets) if isinstance(sets, str) else sets)
        kw["intervals"] = {m: ci for m in INTERVAL_METRICS if (ci := interval(row, m)) is not None}
        extra = dict(row.get("extra") or {})
        extra.update({k: v for k, v in row.items() if k not in names and k not in _DERIVED and not _is_ci(k)})
        return cls(**kw, extra=extra, layout=layout)


#: a row's fields by type, to read them back from a CSV table's text (:func:`_from_text`)
_FLOATS = frozenset({"tpr", "fpr", "auroc", "aupr_in", "aupr_out", "ci_level"})
_INTS = frozenset({"n_id", "n_ood", "vocab_size", "n_boot", "n_ood_sets", "M"})
_BOOLS = frozenset({"random_weights", "deployable", "oracle"})


def _from_text(row: Mapping[str, Any]) -> dict[str, Any]:
    """A CSV table's row (:func:`table_cell`'s text) with its values typed again: an empty cell is a missing
    value (None; a field of the record then takes its default), numbers and ``True``/``False`` as such, an
    interval bound as a number, an extra field's JSON text (a list, an object) as what it encodes."""
    out: dict[str, Any] = {}
    fields = {f.name for f in dataclasses.fields(ResultRow)}
    for key, value in row.items():
        if not isinstance(value, str):
            out[key] = value
        elif value == "":
            if key not in fields:  # an extra field: None, as in the row written (a record's field: its default)
                out[key] = None
        elif key in _FLOATS or _is_ci(key):
            out[key] = float(value)
        elif key in _INTS:
            out[key] = int(float(value))
        elif key in _BOOLS:
            out[key] = value in ("True", "true", "1")
        elif key not in fields:
            out[key] = _text_value(value)
        else:
            out[key] = value
    return out


def _text_value(text: str) -> Any:
    """An extra field's value from a CSV cell: a boolean, a number, JSON text's list or object, else the text."""
    if text in ("True", "False"):
        return text == "True"
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _detect(row: Mapping[str, Any]) -> Layout:
    if row.get("cell") is not None or (isinstance(row.get("params"), str) and "positive" not in row):
        return "grid"
    if row.get("M") is not None:
        return "reference" if "name" in row or row.get("order") is None else "sweep"  # a reference has no order
    return "score"


def table_cell(value: Any) -> Any:
    """A row's value as a CSV or parquet table holds it: a mapping (``params``) or a list (``ood_sets``,
    ``stream_seeds``) as JSON text (keys sorted), anything else as it is."""
    if isinstance(value, (Mapping, list, tuple)):
        return json.dumps(dict(value) if isinstance(value, Mapping) else list(value), sort_keys=True)
    return value


def file_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A results row of any version (:meth:`ResultRow.from_dict`) in this version's shape
    (:meth:`ResultRow.to_dict`): the same values, the keys of every results file."""
    return ResultRow.from_dict(row).to_dict()


def _is_ci(key: str) -> bool:
    return any(key in (f"{m}_ci", f"{m}_ci_low", f"{m}_ci_high") for m in INTERVAL_METRICS)


def _caveats(value: Any) -> dict[str, str]:
    """Caveats as kind -> text, from a mapping, a ``score`` file's ``kind;kind`` or a grid's ``kind: text; ...``."""
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if not value or not isinstance(value, str):
        return {}
    if ": " not in value:
        return dict.fromkeys(value.split(";"), "")
    out: dict[str, str] = {}
    last = None
    for part in value.split("; "):
        kind, sep, text = part.partition(": ")
        if sep and " " not in kind:
            out[kind], last = text, kind
        elif last is not None:  # a "; " inside a caveat's text
            out[last] += f"; {part}"
    return out


def interval(row: Mapping[str, Any], metric: str) -> tuple[float, float] | None:
    """The ``(low, high)`` bootstrap interval of ``metric`` in a row dict of any file (``<metric>_ci``
    as a pair, or ``<metric>_ci_low``/``_ci_high``); None where none is stored or its ends are not
    numbers (null, NaN: not bootstrapped)."""
    pair = row.get(f"{metric}_ci")
    if pair is None and f"{metric}_ci_low" in row:
        pair = (row[f"{metric}_ci_low"], row.get(f"{metric}_ci_high"))
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return None
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) for v in pair):
        return None
    return float(pair[0]), float(pair[1])


def to_frame(rows: Iterable[ResultRow]) -> pd.DataFrame:
    """One DataFrame row per result row (:meth:`ResultRow.flat_dict`'s columns); pandas is imported here."""
    import pandas as pd

    return pd.DataFrame([r.flat_dict() for r in rows])


def rows_from_frame(frame: pd.DataFrame) -> list[ResultRow]:
    """The rows of a :func:`to_frame` DataFrame (a column's NaN where a row had no value reads as absent)."""
    out = []
    for rec in frame.to_dict("records"):
        kept = {k: v for k, v in rec.items() if k in _REQUIRED or not (isinstance(v, float) and math.isnan(v))}
        out.append(ResultRow.from_dict({**kept, **_ints(kept)}))
    return out


def _ints(rec: Mapping[str, Any]) -> dict[str, Any]:
    """Integer fields that a DataFrame column with gaps turned into floats."""
    return {k: int(rec[k]) for k in ("M", "n_boot", "n_ood_sets", "n_id", "n_ood", "vocab_size") if k in rec}
