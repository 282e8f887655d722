"""Published figures of the anchor methods, as data: ``negvocab/resources/published.csv``, validated on read.

Each row is one figure a method's authors published (or that negvocab's own table quotes from them),
with the settings it was measured under: method, model and weights, templates, vocabulary size M,
benchmark and OOD set (or a summary: ``mean``, ``near-ood``, ``far-ood``), FPR@95 and AUROC in
percent as published, the FPR convention, seeds, and where the figure was read (``source_kind``:
``repository file``, ``readme``, ``paper table`` or ``issue table``; ``source``: the file or table).
A figure is never computed here: tables that show one beside negvocab's own rows mark it
``published`` (:func:`published_beside`).

>>> rows = published_results(method="negrefine")
>>> rows[0].ood_set, rows[0].fpr95, rows[0].source_kind
('inaturalist', 1.51, 'repository file')
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.data.benchmarks import get_benchmark

__all__ = [
    "PUBLISHED_COLUMNS",
    "SOURCE_KINDS",
    "PublishedResult",
    "published_beside",
    "published_results",
    "published_table_rows",
    "read_published",
]

#: the columns of a published-figures file, in order
PUBLISHED_COLUMNS: tuple[str, ...] = (
    "paper",
    "method",
    "vocabulary",
    "model",
    "pretrained",
    "templates",
    "size",
    "benchmark",
    "id_set",
    "ood_set",
    "fpr95",
    "auroc",
    "convention",
    "seeds",
    "source_kind",
    "source",
    "note",
)
#: where a figure was read
SOURCE_KINDS: tuple[str, ...] = ("repository file", "readme", "paper table", "issue table")
#: FPR conventions a published figure may state (negvocab's three; see docs/methods.md#metrics)
_CONVENTIONS = ("paper", "hendrycks", "openood")
#: the ID label space of ImageNet-1k as result files name it (``IdClasses.dataset``)
IMAGENET1K = "imagenet1k"
#: summary rows a figure may be, beside the sets of its benchmark
_SUMMARIES = ("mean", "near-ood", "far-ood")
#: the columns a row's record takes as they are written (the others are normalised or parsed)
_AS_GIVEN = (
    "paper", "model", "pretrained", "templates", "benchmark", "id_set", "ood_set", "convention", "seeds",
    "source_kind", "source", "note",
)  # fmt: skip
_REQUIRED = ("paper", "method", "model", "ood_set", "convention", "source_kind", "source")


@dataclass(frozen=True)
class PublishedResult:
    """One published figure and its settings (percent, as published; None: not published).

    ``paper``: the method as its paper names it (CSP); ``method``: the negvocab method that scores it
    (CSP's figures are NegLabel's score); ``vocabulary``: the builder of its negatives (``csp``;
    empty: the method's own or not stated)."""

    paper: str
    method: str
    vocabulary: str
    model: str
    pretrained: str
    templates: str
    size: int | None
    benchmark: str
    id_set: str
    ood_set: str
    fpr95: float | None
    auroc: float | None
    convention: str
    seeds: str
    source_kind: str
    source: str
    note: str

    @property
    def label_space(self) -> str:
        """The ID label space the figure was measured on, named as ``negvocab score`` records it
        (``IdClasses.dataset``): its benchmark's class list (ImageNet-1k where the benchmark names none),
        else ImageNet-1k where its ID set says so; "" where not known (it then meets no row)."""
        if self.benchmark:
            bench = get_benchmark(self.benchmark)
            return bench.id_classes().dataset if bench.classes else IMAGENET1K  # type: ignore[union-attr]
        return IMAGENET1K if self.id_set.lower().startswith("imagenet-1k") else ""

    def as_dict(self) -> dict[str, Any]:
        """The row as the file holds it (``published: True`` added)."""
        return {**asdict(self), "published": True}


def _percent(value: str, where: str, column: str) -> float | None:
    if not value:
        return None
    try:
        x = float(value)
    except ValueError:
        raise InputError(f"{where}: {column} must be a number in percent, got {value!r}") from None
    if not 0 <= x <= 100:
        raise InputError(f"{where}: {column} must be in [0, 100] (percent), got {value}")
    return x


def _row(raw: Mapping[str, str], where: str) -> PublishedResult:
    """One validated row; :class:`InputError` names the file, line and column."""
    v = {k: (raw.get(k) or "").strip() for k in PUBLISHED_COLUMNS}
    for k in _REQUIRED:
        if not v[k]:
            raise InputError(f"{where}: {k} is empty; every published figure names it")
    if v["convention"] not in _CONVENTIONS:
        raise InputError(f"{where}: unknown convention {v['convention']!r}; choose one of {', '.join(_CONVENTIONS)}")
    if v["source_kind"] not in SOURCE_KINDS:
        raise InputError(f"{where}: unknown source_kind {v['source_kind']!r}; choose one of {', '.join(SOURCE_KINDS)}")
    if v["size"] and not (v["size"].isdigit() and int(v["size"]) > 0):
        raise InputError(f"{where}: size must be a positive integer (M), got {v['size']!r}")
    if v["benchmark"]:
        sets = [s.name for s in get_benchmark(v["benchmark"]).sets]  # an unknown name is one line there
        if v["ood_set"] not in (*sets, *_SUMMARIES):
            raise InputError(
                f"{where}: ood_set {v['ood_set']!r} is not a set of benchmark {v['benchmark']!r} "
                f"({', '.join(sets)}) nor one of {', '.join(_SUMMARIES)}"
            )
    fpr, auroc = _percent(v["fpr95"], where, "fpr95"), _percent(v["auroc"], where, "auroc")
    if fpr is None and auroc is None:
        raise InputError(f"{where}: neither fpr95 nor auroc is given; a row holds at least one figure")
    as_given: dict[str, Any] = {k: v[k] for k in _AS_GIVEN}
    return PublishedResult(
        **as_given,
        method=v["method"].lower(),
        vocabulary=v["vocabulary"].lower(),
        size=int(v["size"]) if v["size"] else None,
        fpr95=fpr,
        auroc=auroc,
    )


def read_published(path: str | Path | None = None) -> list[PublishedResult]:
    """Every row of a published-figures CSV (default: the one shipped in the package), validated:
    the header must be :data:`PUBLISHED_COLUMNS`; a bad row is one :class:`InputError` naming it."""
    if path is None:
        text = resources.files("negvocab").joinpath("resources/published.csv").read_text(encoding="utf-8")
        name = "negvocab/resources/published.csv"
    else:
        text, name = read_text(path, what="published figures"), str(path)
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != PUBLISHED_COLUMNS:
        raise InputError(f"{name}: the header must be {','.join(PUBLISHED_COLUMNS)}, got {reader.fieldnames}")
    out = [_row(raw, f"{name}:{reader.line_num}") for raw in reader]
    seen: set[tuple[str, ...]] = set()
    for r in out:
        key = (r.paper, r.method, r.model, r.pretrained, r.benchmark, r.ood_set, r.convention, r.seeds, r.source)
        if key in seen:
            raise InputError(f"{name}: two rows for {r.method} on {r.ood_set} from the same source and settings")
        seen.add(key)
    return out


def published_results(
    *,
    method: str | None = None,
    model: str | None = None,
    benchmark: str | None = None,
    path: str | Path | None = None,
) -> list[PublishedResult]:
    """The published figures, optionally only those of one ``method`` (negvocab's name or the
    paper's: ``csp``), ``model`` or ``benchmark`` (each compared without case), in the file's order."""

    def keep(r: PublishedResult) -> bool:
        return (method is None or method.lower() in (r.method, r.paper.lower())) and all(
            want is None or have.lower() == want.lower() for want, have in ((model, r.model), (benchmark, r.benchmark))
        )

    return [r for r in read_published(path) if keep(r)]


def _field(row: object, key: str) -> Any:
    return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)


def published_beside(
    rows: Iterable[object], published: Iterable[PublishedResult] | None = None, *, id_classes: str | None = None
) -> list[tuple[object, PublishedResult]]:
    """Pairs (negvocab row, published figure) whose settings match: the same ID label space, method,
    model, weights (``pretrained``), OOD set and FPR convention, and the figure's vocabulary builder where
    it names one (the row's ``vocab_source``). ``rows``: result rows (``ResultRow`` or dicts); ``published``:
    default every shipped figure. The ID label space is the row's ``id_classes`` (as results files name it:
    ``imagenet1k``, ``custom:cub200.txt``, ...), else ``id_classes``; a row of an unknown label space
    matches nothing, as a CUB-200 row on iNaturalist is not ImageNet-1k's figure on iNaturalist. Templates,
    M and the ID split (ImageNet-1k val or OpenOOD's test list) are shown, not matched (a published figure
    rarely states the first two); a row measured with random weights matches nothing."""
    figures = list(published_results() if published is None else published)
    rows = list(rows)
    unknown = sum(1 for r in rows if not (_field(r, "id_classes") or id_classes))
    if unknown:
        warnings.warn(
            f"{unknown} result rows name no ID label space (id_classes): no published figure is matched to them; "
            "pass id_classes= (a results file's meta says it, e.g. 'imagenet1k')",
            stacklevel=2,
        )
    out = []
    for row in rows:
        space = str(_field(row, "id_classes") or id_classes or "")
        if _field(row, "random_weights") or not space:
            continue
        key = tuple(
            str(_field(row, k) or "").lower() for k in ("method", "model", "pretrained", "ood_set", "convention")
        )
        source = str(_field(row, "vocab_source") or "").lower()
        for f in figures:
            same = key == (f.method, f.model.lower(), f.pretrained.lower(), f.ood_set.lower(), f.convention)
            if same and f.label_space == space and (not f.vocabulary or f.vocabulary == source):
                out.append((row, f))
    return out


def published_table_rows(
    rows: Iterable[Mapping[str, Any]],
    published: Iterable[PublishedResult] | None = None,
    *,
    id_classes: str | None = None,
) -> list[dict[str, Any]]:
    """Tidy table rows of the published figures that match ``rows`` (:func:`published_beside`), to be
    shown beside them: each takes its negvocab row's settings, with the vocabulary marked
    ``<vocabulary> [published: <paper>]``, ``fpr``/``auroc`` the figure as a fraction (NaN where not
    published), ``published: True`` and the figure's ``source`` with its ID set. One row per figure and vocabulary."""
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for row, f in published_beside(list(rows), published, id_classes=id_classes):
        vocab = f"{_field(row, 'vocabulary') or _field(row, 'method')} [published: {f.paper}]"
        key = (str(_field(row, "model")), vocab, str(_field(row, "method")), f.ood_set, f.convention)
        out.setdefault(
            key,
            {
                **{k: _field(row, k) for k in ("model", "pretrained", "method", "convention", "tpr", "templates")},
                "vocabulary": vocab,
                "ood_set": _field(row, "ood_set"),
                "fpr": f.fpr95 / 100 if f.fpr95 is not None else math.nan,
                "auroc": f.auroc / 100 if f.auroc is not None else math.nan,
                "deployable": True,
                "published": True,
                "source": f"{f.source_kind}: {f.source}" + (f" (ID: {f.id_set})" if f.id_set else ""),
            },
        )
    return list(out.values())
