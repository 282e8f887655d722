"""One self-contained HTML report of a results folder: tables, plots and the images that fail.

:func:`write_report` reads what ``negvocab score`` (``results.json``, ``scores.npz``,
``explanations.json``), ``negvocab sweep`` (``sweep.json``, ``sweep.png``) and ``negvocab coverage``
(``coverage.json``, ``coverage_images.json``, ``repair.png``) wrote into a folder and renders them
with the jinja2 templates shipped in ``negvocab/report/templates``: plots and thumbnails are embedded
(base64), so the file opens anywhere without a network. Evasion cards (OOD images passing as ID at
the FPR@tpr threshold of the run's convention) and flagged ID images are capped, worst first, so
50,000 ID and 10,000 OOD images still give a file of a few MB. Results written by older and newer
versions are both read: whatever columns a results table has are shown.
"""

from __future__ import annotations

import base64
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.core.atomic import write_text
from negvocab.core.errors import InputError
from negvocab.core.provenance import negvocab_version
from negvocab.evaluation.records import RANDOM_WEIGHTS_WARNING
from negvocab.evaluation.stored import read_results_json
from negvocab.report.grid_section import GRID_MARKER, grid_section
from negvocab.report.html_cards import coverage_cards, evasion_cards, load_npz, read_json, score_cards
from negvocab.report.html_results import SMALL_N, TITLES, ci_text, num, pct, results_table
from negvocab.report.plots import figure_png, scores_figure
from negvocab.report.results import accuracy_columns_in
from negvocab.report.thumbs import THUMB_PX, Thumbnails  # noqa: F401  (THUMB_PX: its old home)
from negvocab.report.wrap import word_breaks

logger = logging.getLogger(__name__)

__all__ = ["MAX_CARDS", "MAX_FLAGGED", "SMALL_N", "evasion_cards", "study_folders", "write_report"]

MAX_CARDS = 200
MAX_FLAGGED = 100
RANDOM_NOTE = RANDOM_WEIGHTS_WARNING  # the one sentence (negvocab.evaluation.records)


# ----------------------------------------------------------------------------------------------
# sources (the results table: negvocab.report.html_results; the cards: negvocab.report.html_cards)
# ----------------------------------------------------------------------------------------------
def _results_doc(path: Path) -> dict[str, Any]:
    """results.json through the one validation layer (:func:`negvocab.evaluation.stored.read_results_json`)."""
    return read_results_json(path)


def _scores_plot(folder: Path, doc: Mapping[str, Any], key: str | None) -> tuple[str | None, str]:
    """The score-distribution and ROC figure of one run (the cards' run), as base64 PNG."""
    path = folder / "scores.npz"
    if not path.is_file():
        return None, ""
    arrays = load_npz(path)
    runs = [k[3:] for k in arrays if k.startswith("id/") and "/" not in k[3:] and f"ood/{k[3:]}" in arrays]
    if not runs:
        return None, ""
    run = key if key in runs else next((r for r in runs if "@" in r), runs[0])
    ids, oods = arrays[f"id/{run}"].astype(np.float64), arrays[f"ood/{run}"].astype(np.float64)
    sets = [str(x) for x in arrays["ood_sets"]] if len(arrays.get("ood_sets", [])) == oods.size else None
    tpr, conv = float(doc.get("tpr", 0.95)), str(doc.get("convention", "paper"))
    random = bool(doc.get("random_weights"))
    fig = scores_figure(
        ids,
        oods,
        sets,
        tpr=tpr,
        convention=conv,
        detector=run,
        title=f"Score distributions and ROC: {run}" + (" [RANDOM WEIGHTS]" if random else ""),
    )
    caption = (f"Run {run}: ID against each OOD set, the threshold at TPR {int(round(100 * tpr))}% dashed; "
               f"ROC per OOD set, the dot is FPR@{int(round(100 * tpr))} ({conv} convention). "
               "Other runs: negvocab report --run.")  # fmt: skip
    return base64.b64encode(figure_png(fig)).decode("ascii"), caption


def _png(path: Path) -> str | None:
    return base64.b64encode(path.read_bytes()).decode("ascii") if path.is_file() else None


def _coverage_section(folder: Path, doc: Mapping[str, Any], max_rows: int = 300) -> dict[str, Any]:
    s = doc.get("summary", {})
    summary = [
        ("OOD classes / images", f"{s.get('n_classes')} / {s.get('n_ood_images')}"),
        (
            "exact coverage (label or WordNet synonym in the vocabulary)",
            f"{pct(s.get('exact_coverage'))}% of classes, {pct(s.get('exact_coverage_images'))}% of images",
        ),
        (
            "coverage by text cosine",
            ", ".join(f">= {t}: {pct(v)}%" for t, v in (s.get("cosine_coverage") or {}).items()),
        ),
        ("FPR / AUROC with the vocabulary", f"{pct(s.get('fpr'))}% / {pct(s.get('auroc'))}%"),
        ("ORACLE: FPR with every OOD label added", f"{pct(s.get('oracle_fpr'))}%"),
        (
            "share of the oracle gap closed by the top-k oracle additions",
            ", ".join(
                f"k={k}: {pct(v) + '%' if v is not None else '-'}"
                for k, v in (s.get("gap_closed_by_top_k") or {}).items()
            ),
        ),
    ]
    classes = sorted(doc.get("classes", []), key=lambda r: (-r.get("fpr_gain", 0), -r.get("passing_share", 0)))
    shown = [
        {
            **r,
            "nearest_cosine": num(r.get("nearest_cosine"), 3),
            "passing_share": f"{pct(r.get('passing_share'))}% ({r.get('passing')})",
            "fired": "; ".join(f"{f['label']} ({f['count']})" for f in r.get("fired", []))
            if isinstance(r.get("fired"), list)
            else r.get("fired"),
            "fpr_with": pct(r.get("fpr_with")),
            "fpr_gain": pct(r.get("fpr_gain")),
        }
        for r in classes[:max_rows]
    ]
    repair = None
    if doc.get("repair"):
        rep = doc["repair"]
        repair = {
            "oracle": bool(rep.get("oracle")),
            "note": rep.get("note", ""),
            "png": _png(folder / "repair.png"),
            "rows": [
                {
                    **r,
                    "label": r["label"] or "(the vocabulary as given)",
                    "fpr": pct(r["fpr"]),
                    "auroc": pct(r["auroc"]),
                }
                for r in rep.get("rows", [])
            ],
        }
    conf = [{**r, "mean_score": num(r["mean_score"], 4)} for r in doc.get("confusions", [])[:50]]
    more = f"showing {max_rows} of {len(classes)} classes; all are in coverage.csv" if len(classes) > max_rows else ""
    return {"summary": summary, "classes": shown, "repair": repair, "confusions": conf, "more": more}


# ----------------------------------------------------------------------------------------------
# the report
# ----------------------------------------------------------------------------------------------
_MARKERS = ("results.json", "sweep.json", "coverage.json", GRID_MARKER)


def study_folders(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The results folders of ``paths``: each one holding a marker (results.json, sweep.json,
    coverage.json) itself, else every folder below it that does (a study, or a grid's cells), sorted."""
    out: list[Path] = []
    for given in paths:
        folder = Path(given)
        if not folder.is_dir():
            raise InputError(f"{folder}: no such results folder")
        if any((folder / m).is_file() for m in _MARKERS):
            out.append(folder)
            continue
        below = sorted(
            {
                f.parent
                for m in _MARKERS
                for f in folder.rglob(m)
                if not any(p.startswith(".") for p in f.relative_to(folder).parts)
            }
        )
        if not below:
            raise InputError(
                f"{folder}: no results.json, sweep.json, coverage.json or grid.json in it or "
                "below it; give folders negvocab score, sweep, coverage or grid wrote"
            )
        out += below
    return list(dict.fromkeys(out))


def _folder_section(
    folder: Path, key: str | None, max_cards: int, max_flagged: int, thumbs: Thumbnails
) -> dict[str, Any]:
    """The report section of one results folder (the template's ``s``)."""
    # long: one context from the three kinds of results file a folder may hold
    found = {name: folder / name for name in _MARKERS if (folder / name).is_file()}
    thumbs.base = folder  # relative image paths: looked up against this folder too
    if GRID_MARKER in found:  # a grid's folder: its tables, comparisons, sweeps, one results table per model
        grid = grid_section(folder, results_table)
        empty = dict.fromkeys(("results", "sweep", "evasions", "flagged", "coverage", "scores_png"))
        return {**empty, "grid": grid, "notes": grid["notes"], "name": str(folder), "kinds": "grid",
                "meta": [], "random": grid["random"], "tpr_pct": 95}  # fmt: skip
    score_notes: list[str] = []
    ctx: dict[str, Any] = {
        "grid": None,
        "results": None,
        "sweep": None,
        "evasions": None,
        "flagged": None,
        "coverage": None,
        "notes": [],
        "scores_png": None,
    }
    metas: list[Mapping[str, Any]] = []
    if "results.json" in found:
        doc = _results_doc(found["results.json"])
        metas.append(doc)
        ctx["results"] = results_table(doc.get("rows", []))
        ctx["evasions"], ctx["flagged"], score_notes = score_cards(folder, doc, key, max_cards, max_flagged, thumbs)
        ctx["notes"] += score_notes
        ctx["scores_png"], ctx["scores_caption"] = _scores_plot(folder, doc, key)
    if "sweep.json" in found:
        doc = read_json(found["sweep.json"])
        metas.append(doc)
        one_set = doc.get("ood_set") if isinstance(doc.get("ood_set"), str) else ""
        more = accuracy_columns_in([*doc.get("rows", []), *doc.get("references", [])])
        fmt = lambda r: {  # noqa: E731
            "M": r.get("M"),
            "name": r.get("name") or r.get("vocabulary") or "",  # "name": an older sweep.json's reference
            "ood_set": r.get("ood_set") or one_set or "-",
            "fpr": pct(r.get("fpr")),
            "auroc": pct(r.get("auroc")),
            "ci": ci_text(r, "fpr").strip(),
            "more": [pct(r.get(c)) for c in more],
        }
        ctx["sweep"] = {
            "columns": [TITLES[c] for c in more],
            "png": _png(folder / "sweep.png"),
            "rows": [fmt(r) for r in doc.get("rows", [])],
            "references": [fmt(r) for r in doc.get("references", [])],
        }
    if "coverage.json" in found:
        doc = read_json(found["coverage.json"])
        metas.append(doc)
        ctx["coverage"] = _coverage_section(folder, doc)
        ev, fl = coverage_cards(folder, doc, max_cards, max_flagged, thumbs)
        if ev is not None:  # labelled cards replace those of a score run in the same folder
            ctx["evasions"], ctx["flagged"] = ev, fl
            ctx["notes"] = [n for n in ctx["notes"] if n not in score_notes]
    ctx["notes"] += [n for n in [thumbs.note(folder)] if n]
    model_random = any(bool(m.get("random_weights")) for m in metas)
    # rows also say so when their vocabulary was built with random weights (a pretrained model scored it)
    random = model_random or any(
        isinstance(r, dict) and r.get("random_weights") is True for m in metas for r in (m.get("rows") or [])
    )
    first = metas[0]
    tpr = float(first.get("tpr", 0.95))
    vocab = first.get("vocabulary") or first.get("vocabularies")
    thresholds = (ctx["evasions"] or {}).get("sets") or []
    meta = [
        ("model",
         f"{first.get('model', '?')} ({'RANDOM weights' if model_random else first.get('pretrained') or 'weights?'})"),
        ("method", first.get("method") or ", ".join(dict.fromkeys(r.get("method", "") for r in first.get("rows", [])))),
        ("vocabulary", _vocab_text(vocab)),
        ("convention / TPR", f"{first.get('convention', 'paper')} / {tpr}"),
        ("ID / OOD sets", _sets_text(first)),
        (f"threshold of run {ctx['evasions'].get('key', '')} (score >= it: taken as ID)" if ctx["evasions"]
         else "threshold",
         ", ".join(f"{t['name']}: {t['threshold']}" for t in thresholds) if thresholds
         else (ctx["evasions"]["threshold"] if ctx["evasions"] else "")),
    ]  # fmt: skip
    return {
        **ctx,
        "name": str(folder),
        "kinds": ", ".join(found),
        "meta": [(k, v) for k, v in meta if v],
        "random": random,
        "tpr_pct": int(round(100 * tpr)),
    }


def write_report(
    results_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str] | None = None,
    *,
    key: str | None = None,
    max_cards: int = MAX_CARDS,
    max_flagged: int = MAX_FLAGGED,
) -> Path:
    """Render the report of ``results_dir`` into ``output`` (default ``results_dir/report.html``).

    ``results_dir``: a results folder, or several, or a study/grid folder holding results folders
    below it: one page, one section per folder, with a table of contents when there are several.
    ``key``: the run whose per-image scores make the cards (``method@vocabulary``; default: the
    first run with a vocabulary). ``max_cards``/``max_flagged``: caps on the cards shown.

    Parameters
    ----------
    results_dir : path or sequence of paths
        A results folder, several, or a study/grid folder holding results folders below it.
    output : path, optional
        The HTML file written (default ``results_dir/report.html``).
    key : str, optional
        The run whose per-image scores make the cards (``method@vocabulary``).
    max_cards : int, default MAX_CARDS
        Cap on the evasion cards shown.
    max_flagged : int, default MAX_FLAGGED
        Cap on the flagged (ID images scored as OOD) cards shown.
    """
    import jinja2

    given = [results_dir] if isinstance(results_dir, (str, os.PathLike)) else list(results_dir)
    if not given:
        raise InputError("no results folder given")
    folders = study_folders(given)
    thumbs = Thumbnails()
    sections = [_folder_section(f, key, max_cards, max_flagged, thumbs) for f in folders]
    for i, sec in enumerate(sections):
        sec["p"] = "" if i == 0 else f"s{i + 1}-"  # the first section keeps the plain anchors
    random = any(sec["random"] for sec in sections)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("negvocab.report", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["wbr"] = word_breaks
    one = len(sections) == 1
    html = env.get_template("report.html.j2").render(
        title=f"negvocab report: {folders[0].name}"
        if one
        else f"negvocab study report: {len(sections)} results folders",
        subtitle=sections[0]["kinds"] if one else ", ".join(str(f) for f in given),
        random_weights=random,
        random_warning=RANDOM_NOTE,
        sections=sections,
        version=negvocab_version(),
        created=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        source=", ".join(str(f) for f in given),
    )
    out = Path(output) if output is not None else Path(given[0]) / "report.html"
    write_text(out, html)
    return out


def _vocab_text(vocab: Any) -> str:
    if isinstance(vocab, Mapping) and "size" in vocab:
        return f"{vocab.get('source', '')} {str(vocab.get('sha256', ''))[:12]} (M={vocab['size']})"
    if isinstance(vocab, Mapping):
        return "; ".join(f"{k}: {_vocab_text(v)}" for k, v in vocab.items())
    return str(vocab or "")


def _sets_text(doc: Mapping[str, Any]) -> str:
    def one(x: Any) -> str:
        return f"{x.get('name', '?')} ({x.get('n', '?')})" if isinstance(x, Mapping) else str(x)

    if (
        "id_set" in doc and isinstance(doc.get("ood_sets"), Mapping) and len(doc["ood_sets"]) > 1
    ):  # several named OOD sets
        return f"{one(doc['id_set'])} / " + ", ".join(f"{k}: {one(v)}" for k, v in doc["ood_sets"].items())
    if "id_set" in doc:
        return f"{one(doc['id_set'])} / {one(doc.get('ood_set', '?'))}"
    if "n_id" in doc:
        return f"{doc['n_id']} / {doc.get('n_ood', '?')} images"
    return ""
