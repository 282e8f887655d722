"""Published figures of the anchor methods, as data: ``negvocab/resources/published.csv``, validated on read.

Each row is one figure a method's authors published, with what it was measured on and how: method,
model and weights, templates, vocabulary size M, the **benchmark** (a registered benchmark's name, ""
where no negvocab benchmark holds that pairing) and its **ID split** (the ID set as results name it:
``ImageNet-1k val`` for the MOS four, ``ImageNet-1k (OpenOOD test)`` for OpenOOD v1.5), the OOD set or a
summary (``mean``, ``near-ood``, ``far-ood``), FPR@95 and AUROC in percent as published, the FPR
convention, seeds, its **kind** (:data:`KINDS`: a paper's table or abstract, the authors' log, a paper's
table as the authors' README shows it, a rerun, one seed of n), its **source** (paper, table; or log file
and commit) and how it was **checked** against that source. A figure is never computed here: tables that
show one beside negvocab's own rows mark it ``published`` (:func:`published_beside`), only beside rows of
the same benchmark sets and ID split.

>>> rows = published_results(method="negrefine")
>>> rows[0].ood_set, rows[0].fpr95, rows[0].kind
('inaturalist', 1.51, 'one seed of 10')
"""

from __future__ import annotations

import csv
import io
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.data.benchmarks import get_benchmark, id_split_name

__all__ = [
    "KINDS",
    "PUBLISHED_COLUMNS",
    "PublishedResult",
    "published_beside",
    "published_notes",
    "published_results",
    "published_table_rows",
    "read_published",
    "row_benchmark",
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
    "id_split",
    "ood_set",
    "fpr95",
    "auroc",
    "convention",
    "seeds",
    "kind",
    "source",
    "checked",
    "note",
)
#: what a figure is (besides these: ``one seed of N``, one seed of the N a paper averages)
KINDS: tuple[str, ...] = ("paper table", "paper abstract", "authors' log", "authors' README", "rerun")
_ONE_SEED = re.compile(r"one seed of ([2-9]|[1-9]\d+)")
#: FPR conventions a published figure may state (negvocab's three; see docs/methods.md#metrics)
_CONVENTIONS = ("paper", "hendrycks", "openood")
#: the ID label space of ImageNet-1k as result files name it (``IdClasses.dataset``)
IMAGENET1K = "imagenet1k"
#: summary rows a figure may be, beside the sets of its benchmark (``mean``: all of them; a group's)
_SUMMARIES = {"mean": None, "near-ood": "near", "far-ood": "far"}
#: the columns a row's record takes as they are written (the others are normalised or parsed)
_AS_GIVEN = (
    "paper", "model", "pretrained", "templates", "benchmark", "id_split", "ood_set", "convention", "seeds",
    "kind", "source", "checked", "note",
)  # fmt: skip
_REQUIRED = ("paper", "method", "model", "id_split", "ood_set", "convention", "kind", "source", "checked")


@dataclass(frozen=True)
class PublishedResult:
    """One published figure, what it was measured on and where it was read (percent, as published;
    None: not published).

    ``paper``: the method as its paper names it (CSP); ``method``: the negvocab method that scores it
    (CSP's figures are NegLabel's score); ``vocabulary``: the builder of its negatives (``csp``;
    empty: the method's own or not stated). ``benchmark``: a registered benchmark's name ("": none holds
    the figure's pairing of sets and ID split; it then meets no row); ``id_split``: the ID set as results
    name it; ``kind``: :data:`KINDS` or ``one seed of N``; ``checked``: how it was checked against its
    source, or why it was not.

    Parameters
    ----------
    paper : str
        The method as its paper names it.
    method : str
        The negvocab method that scores it.
    vocabulary : str
        The builder of its negatives ("": the method's own or not stated).
    model : str
        The model.
    pretrained : str
        The model's weights.
    templates : str
        The prompt templates.
    size : int or None
        The vocabulary size M.
    benchmark : str
        A registered benchmark's name ("": none holds the figure's pairing).
    id_split : str
        The ID set as results name it.
    ood_set : str
        The OOD set, or a summary (``mean``, ``near-ood``, ``far-ood``).
    fpr95 : float or None
        FPR@95 in percent (None: not published).
    auroc : float or None
        AUROC in percent (None: not published).
    convention : str
        The FPR convention.
    seeds : str
        The seeds.
    kind : str
        :data:`KINDS` or ``one seed of N``.
    source : str
        Where it was read (paper, table; or log file and commit).
    checked : str
        How it was checked against its source, or why it was not.
    note : str
        A note.
    """

    paper: str
    method: str
    vocabulary: str
    model: str
    pretrained: str
    templates: str
    size: int | None
    benchmark: str
    id_split: str
    ood_set: str
    fpr95: float | None
    auroc: float | None
    convention: str
    seeds: str
    kind: str
    source: str
    checked: str
    note: str

    @property
    def label_space(self) -> str:
        """The ID label space the figure was measured on, named as ``negvocab score`` records it
        (``IdClasses.dataset``): its benchmark's class list (ImageNet-1k where the benchmark names none),
        else ImageNet-1k where its ID split says so; "" where not known (it then meets no row)."""
        if self.benchmark:
            bench = get_benchmark(self.benchmark)
            return bench.id_classes().dataset if bench.classes else IMAGENET1K  # type: ignore[union-attr]
        return IMAGENET1K if self.id_split.lower().startswith("imagenet-1k") else ""

    @property
    def tag(self) -> str:
        """How a table marks the figure beside a row: ``published: PAPER, KIND``."""
        return f"published: {self.paper}, {self.kind}"

    @property
    def source_kind(self) -> str:
        """Deprecated: :attr:`kind` (the column was renamed when figures gained their kind)."""
        warnings.warn("PublishedResult.source_kind is deprecated: use .kind", DeprecationWarning, stacklevel=2)
        return self.kind

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
    if v["kind"] not in KINDS and not _ONE_SEED.fullmatch(v["kind"]):
        raise InputError(f"{where}: unknown kind {v['kind']!r}; choose one of {', '.join(KINDS)} or 'one seed of N'")
    if v["size"] and not (v["size"].isdigit() and int(v["size"]) > 0):
        raise InputError(f"{where}: size must be a positive integer (M), got {v['size']!r}")
    if v["benchmark"]:
        _check_benchmark(v, where)
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


def _check_benchmark(v: Mapping[str, str], where: str) -> None:
    """A figure's benchmark is a registered one, its ID split that benchmark's, its OOD set one of its sets."""
    try:
        bench = get_benchmark(v["benchmark"])
    except InputError as e:
        raise InputError(f"{where}: benchmark {v['benchmark']!r}: {e}") from None
    split = id_split_name(bench)
    if v["id_split"] != split:
        raise InputError(
            f"{where}: id_split {v['id_split']!r} is not the ID split of benchmark {bench.name!r}; allowed: {split!r}"
        )
    sets = [s.name for s in bench.sets]
    if v["ood_set"] not in (*sets, *_SUMMARIES):
        raise InputError(
            f"{where}: ood_set {v['ood_set']!r} is not a set of benchmark {v['benchmark']!r} "
            f"({', '.join(sets)}) nor one of {', '.join(_SUMMARIES)}"
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
        fields = ("paper", "method", "model", "pretrained", "benchmark", "id_split", "ood_set", "convention", "seeds")
        key = tuple(getattr(r, k) for k in (*fields, "kind", "source"))
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
    paper's: ``csp``), ``model`` or ``benchmark`` (each compared without case), in the file's order.

    Parameters
    ----------
    method : str, optional
        Only this method's figures.
    model : str, optional
        Only this model's figures.
    benchmark : str, optional
        Only this benchmark's figures.
    path : str or Path, optional
        A published-figures CSV (default: the one shipped in the package).
    """

    def keep(r: PublishedResult) -> bool:
        return (method is None or method.lower() in (r.method, r.paper.lower())) and all(
            want is None or have.lower() == want.lower() for want, have in ((model, r.model), (benchmark, r.benchmark))
        )

    return [r for r in read_published(path) if keep(r)]


def _field(row: object, key: str) -> Any:
    return row.get(key) if isinstance(row, Mapping) else getattr(row, key, None)


def _summarised(bench: Any, ood_set: str) -> list[str]:
    """The sets of ``bench`` that OOD set ``ood_set`` is: itself, or the sets a summary averages."""
    if ood_set not in _SUMMARIES:
        return [ood_set]
    group = _SUMMARIES[ood_set]
    return [s.name for s in bench.sets if group is None or s.group == group]


def _files(benchmark: str, ood_set: str) -> list[tuple[str, str, str]]:
    """The files of the sets ``ood_set`` is in ``benchmark`` (layout, where, image folder): two benchmarks
    share a set only where these agree (OpenOOD's Textures list is not MOS's Textures folder)."""
    bench = get_benchmark(benchmark)
    names = _summarised(bench, ood_set)
    return [(s.layout, s.where, s.image_dir) for s in bench.sets if s.name in names]


def row_benchmark(row: object) -> str:
    """The benchmark a result row's OOD set came from (its ``set_benchmarks``: set name -> benchmark, as
    results files record it); for a summary row, the one benchmark all the sets it averages came from,
    where they are all of that benchmark's sets of the summary; "" where not known or mixed."""
    sets = _field(row, "set_benchmarks")
    name = str(_field(row, "ood_set") or "")
    if not isinstance(sets, Mapping):
        return ""
    if name not in _SUMMARIES:
        return str(sets.get(name) or "")
    benches = {str(b or "") for b in sets.values()}
    if len(benches) != 1 or "" in benches:
        return ""
    (b,) = benches
    try:
        bench = get_benchmark(b)
    except InputError:  # a benchmark registered by the run, not here
        return ""
    group = _SUMMARIES[name]
    have = sorted(str(s) for s in sets if group is None or bench.group_of(str(s)) == group)
    return b if have and have == sorted(_summarised(bench, name)) else ""


def _same_benchmark(row: object, f: PublishedResult) -> bool:
    """Whether a row was measured on the figure's benchmark: the same ID split, and the same sets of files."""
    bench = row_benchmark(row)
    if not (f.benchmark and bench and str(_field(row, "id_split") or "") == f.id_split):
        return False
    try:
        mine = _files(bench, f.ood_set)
    except InputError:
        return False
    return bool(mine) and mine == _files(f.benchmark, f.ood_set)


def published_beside(
    rows: Iterable[object], published: Iterable[PublishedResult] | None = None, *, id_classes: str | None = None
) -> list[tuple[object, PublishedResult]]:
    """Pairs (negvocab row, published figure) measured alike: the same benchmark sets and ID split
    (:func:`row_benchmark`, the row's ``id_split``), ID label space, method, model, weights
    (``pretrained``), OOD set and FPR convention, and the figure's vocabulary builder where it names one
    (the row's ``vocab_source``). Set names alone never match: ``mean`` and ``textures`` are names in
    several benchmarks. ``rows``: result rows (dicts, as results files are read); ``published``: default
    every shipped figure. The ID label space is the row's ``id_classes``, else ``id_classes``; a row of an
    unknown label space, benchmark or ID split matches nothing, said in one warning. Templates and M are
    shown, not matched (a published figure rarely states them); a row measured with random weights matches
    nothing."""
    figures = list(published_results() if published is None else published)
    rows = list(rows)
    unknown = sum(1 for r in rows if not (_field(r, "id_classes") or id_classes))
    unsaid = sum(1 for r in rows if not (_field(r, "id_split") and row_benchmark(r)))
    if unknown or unsaid:
        warnings.warn(
            f"{unknown} result rows name no ID label space (id_classes) and {unsaid} no benchmark or ID split "
            "(set_benchmarks, id_split): no published figure is matched to them",
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
                if _same_benchmark(row, f):
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
    ``<vocabulary> [published: <paper>, <kind>]``, ``fpr``/``auroc`` the figure as a fraction (NaN where
    not published), ``published: True``, and the figure's ``kind``, ``source``, ``benchmark``, ``id_split``
    and ``checked`` (:func:`published_notes` says them). One row per vocabulary, paper and kind: where one
    kind has several sources (AdaNeg's two logged runs) the first listed, the headline, is shown.

    Parameters
    ----------
    rows : iterable of mappings
        Result rows.
    published : iterable of PublishedResult, optional
        The figures to match (default: every shipped figure).
    id_classes : str, optional
        The ID label space of rows that name none.
    """
    out: dict[tuple[str, ...], dict[str, Any]] = {}
    for row, f in published_beside(list(rows), published, id_classes=id_classes):
        vocab = f"{_field(row, 'vocabulary') or _field(row, 'method')} [{f.tag}]"
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
                **{k: getattr(f, k) for k in ("kind", "source", "benchmark", "id_split", "checked")},
            },
        )
    return list(out.values())


def published_notes(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """A caption's sentences on the published rows among ``rows`` (:func:`published_table_rows`): each
    figure's mark, kind, source, benchmark and ID split, and how it was checked; none without one.

    Parameters
    ----------
    rows : iterable of mappings
        Table rows; those with ``published`` set are the published ones.
    """
    said: dict[str, None] = {}
    for r in rows:
        if r.get("published"):
            mark = str(r["vocabulary"]).rsplit(" [", 1)[-1].rstrip("]")
            said[
                f"[{mark}] ({r['kind']}): {r['source']}; benchmark {r['benchmark']}, ID {r['id_split']}; "
                f"{r['checked']}."
            ] = None
    if not said:
        return []
    return ["Published figures, not computed here, each only beside rows of its benchmark and ID split:", *said]
