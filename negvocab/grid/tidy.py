"""The tables a paper prints from a grid: the tidy long table, pivots, comparisons, the M sweep.

:class:`GridResult` holds one row per cell (model, vocabulary, OOD set, method, convention) plus a
``mean`` row over the OOD sets per (model, vocabulary, method, convention). ``pivot`` gives models x
OOD sets (+ mean) for one metric with the best value per column marked, as Markdown or LaTeX
(booktabs); ``paper_table`` is any rows x columns table of :mod:`negvocab.report.tables` (the paper's Table 2:
models x vocabularies with the mean over VLMs; baselines beside them; intervals; bold only beyond
the interval); ``comparisons`` states in words how two vocabularies compare across models, each
model by a paired bootstrap on the stored per-image scores (:mod:`negvocab.evaluation.compare`);
:func:`load_rows` reads the rows of grid, ``score`` and ``sweep`` folders for ``negvocab table``;
``plot_sweep`` draws FPR (or AUROC) against M for a vocabulary built with several sizes: a panel per model
and (method, convention), a line per OOD set and the mean, bands, the baselines as references.
Rows from random weights or non-deployable vocabularies are marked where shown.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.atomic import atomic_path, write_json, write_text
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import MEAN
from negvocab.evaluation.kinds import caveat_notes, result_kind
from negvocab.evaluation.records import (
    RANDOM_WEIGHTS_WARNING,
    THRESHOLD_RULES,
    seed_sd,
    summary_sets,
)
from negvocab.evaluation.row import table_cell
from negvocab.evaluation.stored import read_grid_cells, read_grid_means
from negvocab.grid.config import spec_digest
from negvocab.grid.identity import grid_identity, read_identity
from negvocab.grid.pivot import METRICS, PIVOT_METRICS, Pivot
from negvocab.grid.store import read_scores
from negvocab.grid.summary import GROUP, mean_rows, spread_rows
from negvocab.grid.work import id_classes, open_sets, plan_cells
from negvocab.report import tables as T
from negvocab.report.plots import plot_overlay
from negvocab.report.results import (
    TABLE_COLUMNS,
    TEST_TIME_MARK,
    table_columns,
    table_csv,
)
from negvocab.report.significance import PairedMarks, bold_note
from negvocab.scoring.methods import EVALUATION_PARAMS

if TYPE_CHECKING:
    from negvocab.grid.config import GridConfig

logger = logging.getLogger(__name__)

__all__ = [
    "COLUMNS",
    "GridResult",
    "PIVOT_METRICS",
    "Pivot",
    "RANDOM_NOTE",
    "grid_scores",
    "is_grid_folder",
    "load_rows",
]

COLUMNS = TABLE_COLUMNS  # the one row of every results file (negvocab.evaluation.row.ROW_COLUMNS)
RANDOM_NOTE = RANDOM_WEIGHTS_WARNING  # the one sentence (negvocab.evaluation.records)


class GridResult:
    """The rows of a grid (one per cell) and what to make of them; see the module docstring.

    Parameters
    ----------
    rows : sequence of mappings
        One row per cell.
    config : GridConfig, optional
        The grid (None: rows read back from a folder).
    stats : mapping, optional
        The run's stats.
    out_dir : Path, optional
        The grid's output folder.
    status : mapping, optional
        The grid's status (its failed cells).
    means : mapping, optional
        The bootstrap intervals of the mean rows, by (model, vocabulary, method, convention) key
        (a group row's under that key plus its name).
    groups : mapping name -> str or None, optional
        Each OOD set's group in its benchmark (default: the config's).
    label_space : str, default ""
        The ID label space's name where there is no config ("": not known).
    identity : mapping, optional
        The ID split and each OOD set's benchmark where there is no config.
    """

    def __init__(
        self,
        rows: Sequence[Mapping[str, Any]],
        config: GridConfig | None = None,
        *,
        stats: Mapping[str, Any] | None = None,
        out_dir: Path | None = None,
        status: Mapping[str, Any] | None = None,
        means: Mapping[tuple[str, ...], Mapping[str, float]] | None = None,
        groups: Mapping[str, str | None] | None = None,
        label_space: str = "",
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        self.rows = [dict(r) for r in rows]
        self.means = dict(means or {})
        self.config = config
        #: each OOD set's group in its benchmark (the config's, else as given: a folder's grid.json)
        self.groups = dict(groups) if groups is not None else {s.name: s.group for s in getattr(config, "ood_sets", [])}
        self.stats = dict(stats or {})
        self.out_dir = out_dir
        self.status = dict(status or {})
        #: the ID label space's name as ``negvocab score`` records it (``imagenet1k``; "": not known, an old folder)
        self.label_space = label_space if config is None else str(id_classes(config).dataset)
        #: the ID split and each OOD set's benchmark (negvocab.grid.identity; published figures match on them)
        self.identity = dict(identity or {}) if config is None else grid_identity(config)
        self._scores_memo: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        models = len({r["model"] for r in self.rows})
        rw = ", RANDOM weights" if self.random_weights else ""
        return f"GridResult({len(self.rows)} cells, {models} models{rw})"

    @property
    def random_weights(self) -> bool:
        return any(r.get("random_weights") for r in self.rows)

    def table(self, *, mean: bool = True) -> list[dict[str, Any]]:
        """The tidy long table: the cell rows, then the summary rows (``mean=True``): ``near-ood`` and
        ``far-ood`` where the OOD sets span both groups of their benchmarks, and ``mean``; then, for a
        test-time method run over several stream seeds (``NAME#s0``, ...), its spread over them."""
        rows = [*self.rows, *(mean_rows(self.rows, self.means, self.groups) if mean else [])]
        return [*rows, *spread_rows(rows)]

    def _in_reader_order(self) -> list[dict[str, Any]]:
        """:meth:`table` in a reader's order (:func:`_reader_key`): the tables of a run and of its folder
        read back (``negvocab table``) lay their rows out alike."""
        cells = sorted(self.rows, key=_reader_key)
        rows = [*cells, *mean_rows(cells, self.means, self.groups)]
        return [*rows, *spread_rows(rows)]

    def failed_models(self) -> dict[str, str]:
        """Model -> the one-line reason, for models with failed cells (from the grid's status)."""
        out: dict[str, str] = {}
        for f in self.status.get("failed", []):
            out.setdefault(
                str(f["cell"][0]),
                f"{sum(1 for g in self.status['failed'] if g['cell'][0] == f['cell'][0])} cells: {f.get('error', '')}",
            )
        return out

    def pivot(
        self,
        metric: str = "fpr",
        *,
        rows: str = "model",
        vocabulary: str | None = None,
        method: str | None = None,
        convention: str | None = None,
        model: str | None = None,
    ) -> Pivot:
        """``metric`` with ``rows`` (model, vocabulary or method) x OOD sets + mean; the other
        dimensions fixed by the keyword arguments (needed where the grid has several values).
        Methods without a vocabulary (MCM) stay beside the vocabularies. :meth:`paper_table` makes
        any other layout, with intervals. ``id_accuracy`` and the CCR columns where the cells hold them."""
        if metric not in PIVOT_METRICS:
            raise InputError(f"unknown metric {metric!r}; choose one of {', '.join(PIVOT_METRICS)}")
        if rows not in ("model", "vocabulary", "method"):
            raise InputError(f"rows must be model, vocabulary or method, got {rows!r}")
        fixed = {
            k: v
            for k, v in {"vocabulary": vocabulary, "method": method, "convention": convention, "model": model}.items()
            if v is not None
        }
        if not self.rows:
            raise InputError("no finished cells to tabulate")
        sel = T.select_rows(self._in_reader_order(), (rows, "ood_set"), fixed, True)
        index = list(dict.fromkeys(T.row_label(r, rows) for r in sel))
        columns = [c for c in dict.fromkeys(r["ood_set"] for r in sel) if c != "mean"]
        columns += ["mean"] if any(r["ood_set"] == "mean" for r in sel) else []
        values, spread = np.full((len(index), len(columns)), np.nan), np.full((len(index), len(columns)), np.nan)
        cells: dict[tuple[int, int], Mapping[str, Any]] = {}
        for r in sel:
            i, j = index.index(T.row_label(r, rows)), columns.index(r["ood_set"])
            values[i, j], cells[(i, j)] = r.get(metric, math.nan), r
            spread[i, j] = (seed_sd(r, metric) or (math.nan,))[0]  # a test-time entry over its stream seeds
        name, higher = PIVOT_METRICS[metric]
        tpr = int(round(100 * sel[0]["tpr"]))
        conv = sel[0]["convention"]
        marker = PairedMarks(self.score_getter(), n_boot=self._n_boot())  # the tables' one rule (bold_note)
        bold = np.zeros(values.shape, dtype=bool)
        for j in range(len(columns)):
            bold[:, j] = marker.marks([cells.get((i, j)) for i in range(len(index))], values[:, j], metric)
        notes = [
            f"{name.format(tpr=tpr)} (%), {conv} convention.",
            f"Threshold: {THRESHOLD_RULES.get(conv, conv)}.",
            bold_note(marker, "cols", "none", rows),
        ]
        if metric.startswith("aupr"):
            notes.append(f"AUPR as {sel[0]['aupr_method'].replace('_', ' ')}.")
        bad = sorted({r["vocabulary"] for r in sel if not r.get("deployable", True)})
        if bad:
            notes.append(f"Not deployable (oracle/transductive): {', '.join(bad)}.")
        notes += [f"Caveat: {c}." for c in caveat_notes(sel)]
        notes += T.test_time_notes(sel, [metric])  # [tt], each stream, the ± of a spread over seeds
        tt = {str(r["method"]) for r in sel if result_kind(r) == "test_time"}
        notes += [f"{m}: cells failed ({why}); not shown." for m, why in self.failed_models().items()]
        if any(r.get("random_weights") for r in sel):
            notes.append(RANDOM_NOTE)
        shown: dict[str, Callable[[Any], str]] = {
            "vocabulary": lambda v: v or "none",
            "method": lambda m: m + (TEST_TIME_MARK if m in tt else ""),
            "model": str,
        }
        fixed_notes = [
            f"{d}={shown[d](sel[0][d])}"
            for d in ("vocabulary", "method", "model")
            if d != rows and len({r[d] for r in sel}) == 1
        ]
        base = sorted({r["method"] for r in sel if result_kind(r) == "baseline"})  # by kind: a test-time one is none
        if base and rows != "method" and any(r["vocabulary"] for r in sel):
            fixed_notes.append(f"without a vocabulary: {', '.join(base)}")
        if fixed_notes:
            notes.append("(" + ", ".join(fixed_notes) + ")")
        if rows == "vocabulary":  # the row itself says so: bold may fall on an oracle row
            index = [f"{i} (NOT deployable)" if i in bad else i for i in index]
        if rows == "method":  # a test-time method's row says so (the notes say why)
            index = [f"{i}{TEST_TIME_MARK}" if i in tt else i for i in index]
        spread_or_none = spread if np.any(~np.isnan(spread)) else None
        return Pivot(metric, [str(i) for i in index], columns, values, higher, rows, notes, bold, spread_or_none)

    def to_latex(self, metric: str = "fpr", caption: str | None = None, label: str | None = None, **pivot: Any) -> str:
        """:meth:`pivot` as a LaTeX booktabs table."""
        return self.pivot(metric, **pivot).to_latex(caption=caption, label=label)

    def paper_table(
        self,
        metric: str | Sequence[str] = "fpr",
        *,
        rows: str | Sequence[str] = "model",
        cols: str | Sequence[str] = "ood_set",
        **kw: Any,
    ) -> T.Table:
        """Any rows x columns table of the grid (:func:`negvocab.report.tables.build_table`; ``kw``
        as there: ``where``, ``mean_rows``, ``col_groups``, ``intervals``, ``bold``, ...); models
        whose cells failed are named in the caption. The paper's Table 2:
        ``paper_table("fpr", rows="model", cols="vocabulary",
        where={"ood_set": "mean", "method": "neglabel"}, mean_rows=True)``."""
        kw.setdefault("scores", self.score_getter())  # bold: the paired test on the stored per-image scores
        kw.setdefault("n_boot", self._n_boot())
        return T.build_table(
            self._in_reader_order(), metric=metric, rows_by=rows, cols_by=cols, failed=self.failed_models(), **kw
        )

    def _n_boot(self) -> int:
        """The grid's bootstrap draws (its config's ``n_boot``, else the library's default)."""
        if self.config is not None and self.config.n_boot:
            return int(self.config.n_boot)
        default: Any = EVALUATION_PARAMS["n_boot"].default
        return int(default)

    def score_getter(self) -> T.ScoreGetter | None:
        """Per-image scores of a (model, vocabulary, method) from ``scores/`` (the grid's config or
        the ``scores_index.json`` its :meth:`write` left), or None where they cannot be found."""
        if "index" not in self._scores_memo:  # read once: every table and pivot asks
            self._scores_memo["index"] = self._score_index()
        index = self._scores_memo["index"]
        if not index or self.out_dir is None:
            return None
        return _getter(Path(self.out_dir), index)

    def _score_index(self) -> dict[str, Any]:
        if self.config is not None:
            index: dict[str, Any] = {}
            errors: dict[str, str] = {}  # an OOD set or vocabulary that cannot be read: its cells failed, no scores
            for c in plan_cells(self.config, open_sets(self.config, errors), errors):
                if c.error:
                    continue
                entry = index.setdefault(" | ".join((c.model, c.vocabulary, c.method)), {"id": c.id_scores, "ood": {}})
                entry["ood"][c.ood_set] = c.ood_scores
            return index
        return _stored_index(Path(self.out_dir)) if self.out_dir is not None else {}

    def comparisons(
        self,
        metric: str = "fpr",
        ood_set: str = "mean",
        *,
        n_boot: int | None = None,
        seed: int = 0,
        across: str = "vocabularies",
    ) -> list[str]:
        """Sentences comparing each pair of vocabularies (and MCM) across models, per method and
        convention (``across="models"``: each pair of models per entry), each by a paired bootstrap
        over the same ID and OOD images (:func:`negvocab.report.comparisons.comparisons`): "A beats B"
        only where the difference's interval excludes 0, with n and the count of models."""
        if metric not in METRICS:
            raise InputError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
        said = T.comparisons(
            self.table(),
            self.score_getter(),
            metric=metric,
            ood_set=ood_set,
            n_boot=int(n_boot or self._n_boot()),
            seed=seed,
            across=across,
        )
        return said + [
            f"{m}: cells failed ({why}); left out of these comparisons" for m, why in self.failed_models().items()
        ]

    def plot_sweep(
        self,
        path: str | os.PathLike[str],
        *,
        vocabulary: str,
        method: str | Sequence[str] | None = None,
        convention: str | Sequence[str] | None = None,
        ood_set: str | Sequence[str] | None = None,
        metric: str = "fpr",
        baselines: bool = True,
    ) -> Path:
        """``metric`` against the vocabulary size M for the ``vocabulary@M`` entries
        (:func:`negvocab.report.plots.overlay_figure`): one panel per model and (method, convention)
        asked for (default every one), a line per OOD set (default every set) and their mean, bands
        from the stored intervals, the methods without a vocabulary (MCM) as dashed references; the
        format follows the suffix (.pdf, .svg, .png)."""

        def wanted(value: str, asked: str | Sequence[str] | None) -> bool:
            return asked is None or value == asked or (not isinstance(asked, str) and value in asked)

        table = [r for r in self.table() if wanted(r["ood_set"], ood_set) and wanted(r["convention"], convention)]
        sized = [r for r in table if r["vocabulary"].startswith(f"{vocabulary}@") and wanted(r["method"], method)]
        if not sized:
            raise InputError(
                f"no sized entries {vocabulary}@M in the grid for the methods, conventions and OOD sets asked for"
            )
        rows = [{**r, "M": int(r["vocabulary"].rsplit("@", 1)[1])} for r in sized]
        refs = [
            r for r in table if result_kind(r) == "baseline" and baselines and r["model"] in {x["model"] for x in sized}
        ]
        return plot_overlay(rows, path, baselines=refs, metric=metric, random_weights=self.random_weights)

    def write(self, out_dir: str | os.PathLike[str] | None = None) -> Path:
        """Write ``table.csv`` (+ ``table.parquet`` with pyarrow), one pivot per (vocabulary, method,
        convention) as ``pivots.md`` / ``pivots.tex``, the paper's Table 2 per (method, convention,
        OOD set) as ``tables.md`` / ``tables.tex``, ``scores_index.json``, ``comparisons.md``, the M sweeps
        (``sweep_<vocabulary>.pdf``/``.svg``) and ``grid.json`` (last; the run's stats)."""
        out = Path(out_dir or self.out_dir or ".")
        out.mkdir(parents=True, exist_ok=True)
        table = self.table()
        write_text(out / "table.csv", table_csv(table))  # a test-time method's columns: its stream
        self._write_parquet(out / "table.parquet", table)
        md, tex = [], []
        for vocab, meth, conv in dict.fromkeys((r["vocabulary"], r["method"], r["convention"]) for r in table):
            try:
                p = self.pivot("fpr", vocabulary=vocab, method=meth, convention=conv)
            except InputError:
                continue
            head = f"{vocab or '(no vocabulary)'} / {meth} / {conv}"
            md.append(f"### {head}\n\n{p.to_markdown()}")
            tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{vocab or 'none'}-{meth}-{conv}").strip("-")
            tex.append(f"% {head}\n{p.to_latex(caption=head, label=f'tab:fpr-{tag}')}")
        write_text(out / "pivots.md", "\n".join(md))
        write_text(out / "pivots.tex", "\n".join(tex))
        md, tex = self._paper_tables()
        write_text(out / "tables.md", "\n".join(md))
        write_text(out / "tables.tex", "\n".join(tex))
        index = self._score_index()
        if index:  # what `negvocab table DIR --compare` needs to find each entry's per-image scores
            write_json(out / "scores_index.json", index)
        said = self.comparisons()
        if len({r["model"] for r in table}) > 1:  # the paper tables bold across models: the same test, said
            note = lambda s: s.startswith(("RANDOM", "Caveat: ")) or "cells failed (" in s  # noqa: E731
            models = [f"(models) {s}" for s in self.comparisons(across="models") if not note(s)]
            said = [s for s in said if not note(s)] + models + [s for s in said if note(s)]
        write_text(out / "comparisons.md", "\n".join(f"- {s}" for s in said) + "\n")
        swept = dict.fromkeys(r["vocabulary"].rsplit("@", 1)[0] for r in table if "@" in r["vocabulary"])
        for vocab in swept:  # every method, convention and OOD set, with the mean and the baselines
            for ext in ("pdf", "svg"):
                self.plot_sweep(out / f"sweep_{vocab}.{ext}", vocabulary=vocab)
        stats = {
            k: (v if k != "embed_calls" else {f"{m} / {s}": n for (m, s), n in v.items()})
            for k, v in self.stats.items()
        }
        doc = {"stats": stats, "status": self.status, "random_weights": self.random_weights}
        if self.label_space:  # read back by a folder without its config (published figures match on it)
            doc["id_classes"] = self.label_space
        doc.update(self.identity)
        if any(self.groups.values()):  # read back by a folder without its config (the group rows)
            doc["ood_groups"] = self.groups
        if self.random_weights:
            doc["warning"] = RANDOM_NOTE
        if caveat_notes(table):  # ID class names inside a vocabulary, ...: said as `negvocab score` says them
            doc["caveats"] = caveat_notes(table)
        write_json(out / "grid.json", json.loads(json.dumps(doc, default=str)))
        return out

    def _paper_tables(self) -> tuple[list[str], list[str]]:
        """Table 2 per (method, convention, OOD set): models x vocabularies (the baselines beside
        them), FPR and AUROC side by side with intervals, the mean over models where there are several."""
        md, tex = [], []
        table = self.table()
        several = len({r["model"] for r in table}) > 1
        for meth, conv in dict.fromkeys((r["method"], r["convention"]) for r in table if r["vocabulary"]):
            for ood in dict.fromkeys(r["ood_set"] for r in table):
                where = {"ood_set": ood, "method": meth, "convention": conv}
                tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{meth}-{conv}-{ood}").strip("-")
                try:
                    t = self.paper_table(
                        ["fpr", "auroc"],
                        rows="model",
                        cols="vocabulary",
                        where=where,
                        mean_rows=several,
                        intervals=True,
                        label=f"tab:{tag}",
                    )
                except InputError:
                    continue
                md.append(f"### {meth} / {conv} / {ood}\n\n{t.to_markdown()}")
                tex.append(f"% {meth} / {conv} / {ood}\n{t.to_latex()}")
        return md, tex

    @staticmethod
    def _write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ModuleNotFoundError:
            logger.warning("table.parquet not written: pip install 'negvocab[grid]' (pyarrow)")
            return
        cols = {c: [table_cell(r.get(c)) for r in rows] for c in table_columns(rows)}
        with atomic_path(path, suffix=".parquet") as tmp:
            pq.write_table(pa.table(cols), tmp)


def _getter(out: Path, index: Mapping[str, Any]) -> T.ScoreGetter:
    def get(model: str, vocabulary: str, method: str) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        entry = index.get(" | ".join((model, vocabulary, method)))
        if entry is None:
            return None
        s_id = read_scores(out / "scores" / f"{entry['id']}.npz")
        sets = {k: read_scores(out / "scores" / f"{d}.npz") for k, d in entry["ood"].items()}
        if s_id is None or any(v is None for v in sets.values()):
            return None
        return s_id, {k: v for k, v in sets.items() if v is not None}

    return get


def _stored_index(out: Path) -> dict[str, Any]:
    path = out / "scores_index.json"
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not readable JSON ({e})") from e
    if not isinstance(doc, dict) or not all(
        isinstance(v, dict) and "id" in v and isinstance(v.get("ood"), dict) for v in doc.values()
    ):
        raise InputError(f"{path}: each entry must be {{'id': digest, 'ood': {{set: digest}}}}")
    return doc


def _natural(text: str) -> tuple[Any, ...]:
    """A sort key that puts numbers in number order ("wordnet@100" before "wordnet@1000")."""
    return tuple(int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", text))


def _reader_key(r: Mapping[str, Any]) -> tuple[Any, ...]:
    """A reader's order of rows: vocabularies by name (sizes in number order), the baselines (no
    vocabulary) after them; the tables of a run and of its folder read back share it."""
    return (
        not r.get("vocabulary"),
        *(_natural(str(r.get(k, ""))) for k in ("vocabulary", "model", "ood_set", "method", "convention")),
    )


def _grid_folder(folder: Path) -> GridResult:
    """A grid's output folder read back without its config: the stored cells, the stored intervals
    of the means (``means/``), the failed cells, and ``scores_index.json`` when written."""
    rows, digests, failed = read_grid_cells(folder)

    # the cell files come in digest order: put the rows in a reader's order (wordnet@100 before @200)
    order = sorted(range(len(rows)), key=lambda i: _reader_key(rows[i]))
    rows, digests = [rows[i] for i in order], [digests[i] for i in order]
    groups, label_space, identity = _read_grid_json(folder / "grid.json")
    by_key: dict[tuple[str, ...], dict[str, str]] = {}
    for r, d in zip(rows, digests, strict=True):
        by_key.setdefault(tuple(r[k] for k in GROUP), {})[r["ood_set"]] = d
    means: dict[tuple[str, ...], Mapping[str, float]] = {}
    for key, cells in by_key.items():
        for name, names in summary_sets(list(cells), groups):
            path = folder / "means" / f"{spec_digest(sorted(cells[n] for n in names))}.json"
            if path.is_file():
                means[key if name == MEAN else (*key, name)] = read_grid_means(path)
    kw: dict[str, Any] = {"groups": groups, "label_space": label_space, "identity": identity}
    return GridResult(rows, None, out_dir=folder, status={"failed": failed}, means=means, **kw)


def _read_grid_json(path: Path) -> tuple[dict[str, str | None], str, dict[str, Any]]:
    """Each OOD set's group as a grid's ``grid.json`` stored it (none there: no group rows), the ID
    label space's name ("" where not stored: a folder of an older release) and the grid's identity."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, "", {}
    doc = doc if isinstance(doc, dict) else {}
    groups, space = doc.get("ood_groups"), doc.get("id_classes")
    got = {str(k): (str(v) if v else None) for k, v in groups.items()} if isinstance(groups, dict) else {}
    return got, space if isinstance(space, str) else "", read_identity(doc)


def is_grid_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` is the output folder of ``negvocab grid run`` (it holds ``cells/``)."""
    return (Path(folder) / "cells").is_dir()


def grid_scores(
    folder: str | os.PathLike[str],
) -> tuple[dict[str, dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]], bool]:
    """Per model, each entry's per-image scores from a grid folder (key ``method@vocabulary``, or the
    method alone, as a ``score`` folder's scores.npz names them): (ID scores, OOD scores by set);
    and whether any weights were random."""
    res = _grid_folder(Path(folder))
    get = res.score_getter()
    if get is None:
        raise InputError(f"{folder}: no scores_index.json; the grid's per-image scores cannot be found (run it again)")
    out: dict[str, dict[str, tuple[np.ndarray, dict[str, np.ndarray]]]] = {}
    for model, vocab, method in dict.fromkeys((r["model"], r["vocabulary"], r["method"]) for r in res.rows):
        got = get(model, vocab, method)
        if got is not None:
            out.setdefault(model, {})[f"{method}@{vocab}" if vocab else method] = got
    if not out:
        raise InputError(f"{folder}: the grid holds no readable per-image scores")
    return out, res.random_weights


def load_rows(
    paths: Sequence[str | os.PathLike[str]],
) -> tuple[list[dict[str, Any]], T.ScoreGetter | None, dict[str, str]]:
    """Tidy rows of grid, ``score`` and ``sweep`` folders together (``negvocab table DIR...``),
    the per-image scores where stored, and the models whose cells failed. A folder that is none of them
    but holds some (the demo's output: ``results/``, ``sweep/``) stands for those it holds."""
    rows: list[dict[str, Any]] = []
    getters: list[T.ScoreGetter] = []
    failed: dict[str, str] = {}
    for p in (q for given in map(Path, paths) for q in _results_folders(given)):
        if (p / "cells").is_dir():
            res = _grid_folder(p)
            rows += [{**r, "id_classes": res.label_space, **res.identity} for r in res.table()]
            failed.update(res.failed_models())
            get = res.score_getter()
        else:
            more, get = T.folder_rows(p)
            rows += more
        if get is not None:
            getters.append(get)

    def first(model: str, vocabulary: str, method: str) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        for g in getters:
            found = g(model, vocabulary, method)
            if found is not None:
                return found
        return None

    return rows, (first if getters else None), failed


def _results_folders(p: Path) -> list[Path]:
    """``p`` if it is a results folder (or no folder of results folders), else the results folders in it."""
    if not p.is_dir():
        raise InputError(f"{p}: not a folder; give folders of negvocab score, sweep or grid run")
    kinds = ("cells", "results.json", "sweep.json")
    if any((p / k).exists() for k in kinds):
        return [p]
    inner = sorted(q for q in p.iterdir() if q.is_dir() and any((q / k).exists() for k in kinds))
    return inner or [p]
