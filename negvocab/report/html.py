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
import json
import logging
import math
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.atomic import write_text
from negvocab.errors import InputError
from negvocab.evaluation.row import interval
from negvocab.evaluation.rows import RANDOM_WEIGHTS_WARNING
from negvocab.evaluation.stored import read_results_json, read_scores_npz
from negvocab.provenance import negvocab_version
from negvocab.report.grid_section import GRID_MARKER, grid_section
from negvocab.report.plots import figure_png, scores_figure
from negvocab.report.results import CCR_COLUMNS, accuracy_columns_in
from negvocab.report.thumbs import THUMB_PX, Thumbnails  # noqa: F401  (THUMB_PX: its old home)
from negvocab.report.wrap import word_breaks
from negvocab.scoring.metrics import operating_point

logger = logging.getLogger(__name__)

__all__ = ["MAX_CARDS", "MAX_FLAGGED", "SMALL_N", "evasion_cards", "study_folders", "write_report"]

MAX_CARDS = 200
MAX_FLAGGED = 100
SMALL_N = 30  # fewer ID or OOD images than this: the report warns that the figures are noisy
WIDE_CI = 0.20  # a 95% CI of FPR wider than 20 points: the report says so
RANDOM_NOTE = RANDOM_WEIGHTS_WARNING  # the one sentence (negvocab.evaluation.rows)

# results-table columns in display order (others present are appended); those shown in the header
_FIRST = [
    "ood_set",
    "method",
    "vocabulary",
    "vocab_size",
    "deployable",
    "caveats",
    "oracle",
    "fpr",
    "auroc",
    "aupr_in",
    "aupr_out",
    "id_accuracy",  # issue 31: where the ID labels allow; CCR on a full-spectrum ID set
    *CCR_COLUMNS,
    "n_id",
    "n_ood",
]
_HIDDEN = {
    "model", "pretrained", "random_weights", "convention", "tpr", "positive", "params", "templates", "ci_level",
    "n_boot",
    "ci_resample", "fpr_ci", "auroc_ci", "fpr_ci_low", "fpr_ci_high", "auroc_ci_low", "auroc_ci_high", "vocab_source",
    "aupr_in_ci_low", "aupr_in_ci_high", "aupr_out_ci_low", "aupr_out_ci_high", "M", "order", "cell",
}  # fmt: skip
_PERCENT = {"fpr", "auroc", "aupr_in", "aupr_out", "aupr", "id_accuracy", *CCR_COLUMNS}
_TITLES = {"id_accuracy": "ID acc. %", **{c: f"{c.upper()} %" for c in CCR_COLUMNS}}


# ----------------------------------------------------------------------------------------------
# formatting
# ----------------------------------------------------------------------------------------------
def _pct(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-" if x is None else str(x)
    return "-" if math.isnan(v) else f"{100 * v:.2f}"


def _num(x: Any, digits: int = 4) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "-" if math.isnan(v) else f"{v:.{digits}g}"


def _ci(row: Mapping[str, Any], name: str) -> str:
    ci = interval(row, name)
    if ci is None:
        return ""
    return f" [{_pct(ci[0])}, {_pct(ci[1])}]"


def _cell(row: Mapping[str, Any], col: str) -> dict[str, Any]:
    v = row.get(col)
    if col in _PERCENT:
        return {"text": _pct(v) + (_ci(row, col) if col in ("fpr", "auroc") else ""), "num": True}
    if isinstance(v, bool):
        return {"text": "yes" if v else "no", "num": False}
    if isinstance(v, (int, float)):
        return {"text": _num(v, 6), "num": True}
    if isinstance(v, Mapping):
        return {"text": "; ".join(f"{k}: {x}" for k, x in v.items()), "num": False}
    if isinstance(v, (list, tuple)):
        return {"text": "; ".join(str(x) for x in v), "num": False}
    return {"text": "" if v is None else str(v), "num": False}


def _is_hash(v: Any) -> bool:
    return isinstance(v, str) and len(v) >= 16 and all(c in "0123456789abcdef" for c in v.lower())


def _no_vocab(row: Mapping[str, Any]) -> bool:
    """A baseline row (MCM, GL-MCM): no vocabulary, so M and deployability do not apply."""
    return not row.get("vocabulary") and not row.get("vocab_size")


def _results_cell(row: Mapping[str, Any], col: str) -> dict[str, Any]:
    if col in ("vocabulary", "vocab_size", "deployable", "caveats", "oracle") and _no_vocab(row):
        return {"text": "-", "num": col == "vocab_size", "full": "no vocabulary: a baseline method"}
    v = row.get(col)
    if _is_hash(v):
        return {"text": str(v)[:10] + "…", "num": False, "full": str(v)}
    return {**_cell(row, col), "full": ""}


def _small_sample(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Warnings for numbers a reader could over-trust: few images, or a wide (or empty-width) CI."""
    out = []
    small = sorted({f"{r.get('ood_set', '')} (n_id={r.get('n_id')}, n_ood={r.get('n_ood')})" for r in rows
                    if any(isinstance(r.get(k), int) and r[k] < SMALL_N for k in ("n_id", "n_ood"))})  # fmt: skip
    if small:
        out.append(
            f"Small samples: fewer than {SMALL_N} ID or OOD images in {', '.join(small)}; "
            "FPR@95 moves by whole points with one image, read these numbers as a dry run."
        )
    for r in rows:
        ci = interval(r, "fpr")
        if ci is None:
            continue
        name = (
            f"{r.get('method')}"
            + (f"@{r['vocabulary']}" if r.get("vocabulary") else "")
            + f" on {r.get('ood_set', '')}"
        )
        if ci[1] - ci[0] > WIDE_CI:
            out.append(
                f"{name}: the 95% CI of FPR is {100 * (ci[1] - ci[0]):.0f} points "
                f"wide [{_pct(ci[0])}, {_pct(ci[1])}]: the point value says little."
            )
        elif ci[1] == ci[0] and isinstance(r.get("n_ood"), int) and r["n_ood"] < SMALL_N:
            out.append(
                f"{name}: a CI of zero width [{_pct(ci[0])}, {_pct(ci[1])}] from {r['n_ood']} "
                "OOD images is not certainty: the bootstrap cannot see beyond the images it has."
            )
    return out


def _results_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The results table: columns in display order; those equal in every row go to a header
    (``constant``) so that the table fits a 1280 px screen and an A4 page."""
    present = [c for c in _FIRST if any(c in r for r in rows)]
    extra = [c for c in dict.fromkeys(k for r in rows for k in r) if c not in _FIRST and c not in _HIDDEN]
    cols = present + extra
    tpr = int(round(100 * float(rows[0].get("tpr", 0.95)))) if rows else 95
    title = {
        "fpr": f"FPR@{tpr} % [95% CI]",
        "auroc": "AUROC % [95% CI]",
        "aupr_in": "AUPR-In %",
        "aupr_out": "AUPR-Out %",
        "vocab_size": "M",
        **_TITLES,
    }
    conv = rows[0].get("convention", "paper") if rows else "paper"
    cells = {c: [_results_cell(r, c) for r in rows] for c in cols}
    constant = [
        c for c in cols if len(rows) > 1 and c not in ("fpr", "auroc") and len({x["text"] for x in cells[c]}) == 1
    ]
    shown = [c for c in cols if c not in constant]
    name = lambda c: title.get(c, c.replace("_", " "))  # noqa: E731
    return {
        "columns": [{"title": name(c), "num": c in _PERCENT or c in ("vocab_size", "n_id", "n_ood")} for c in shown],
        "rows": [[cells[c][i] for c in shown] for i in range(len(rows))],
        "constant": [(name(c), cells[c][0]["full"] or cells[c][0]["text"]) for c in constant],
        "warnings": _small_sample(rows),
        "footer": (
            f"FPR convention: {conv}; intervals: bootstrap over OOD "
            "images. Oracle/caveated vocabularies are not deployable."
        ),
    }


# ----------------------------------------------------------------------------------------------
# images
# ----------------------------------------------------------------------------------------------
def _card(r: Mapping[str, Any], threshold: float, thumbs: Thumbnails) -> dict[str, Any]:
    path = str(r.get("path") or "")
    thumb = thumbs(path) if path else None
    return {
        "image": r.get("image", ""),
        "label": r.get("label") or "",
        "ood_set": r.get("ood_set") or "",
        "score": _num(r["score"], 5),
        "threshold": _num(threshold, 5),
        "id_class": r.get("id_class") or "",
        "id_cosine": _num(r["id_cosine"], 3) if r.get("id_cosine") is not None else "",
        "negatives": [{"label": n["label"], "cosine": _num(n["cosine"], 3)} for n in r.get("top_negatives") or []],
        "thumb": thumb,
        "noimg": "image not found" if path else "no path",
    }


def evasion_cards(
    id_scores: np.ndarray, ood_scores: np.ndarray, *, tpr: float = 0.95, convention: str = "paper"
) -> tuple[np.ndarray, np.ndarray, float]:
    """(OOD indices passing as ID, highest score first; ID indices flagged as OOD, lowest first;
    threshold) at the FPR@tpr operating point of ``convention``."""
    op = operating_point(id_scores, ood_scores, tpr, convention=convention)  # type: ignore[arg-type]
    ood = np.flatnonzero(op.ood_passing)
    ids = np.flatnonzero(op.id_flagged)
    return (
        ood[np.argsort(-ood_scores[ood], kind="stable")],
        ids[np.argsort(id_scores[ids], kind="stable")],
        op.threshold,
    )


# ----------------------------------------------------------------------------------------------
# sources
# ----------------------------------------------------------------------------------------------
def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot be read as JSON ({e}); re-run the command that wrote it") from e


def _results_doc(path: Path) -> dict[str, Any]:
    """results.json through the one validation layer (:func:`negvocab.evaluation.stored.read_results_json`)."""
    return read_results_json(path)


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a scores.npz (``id/<run>``, ``ood/<run>``, the image arrays) through the one
    validation layer (:func:`negvocab.evaluation.stored.read_scores_npz`): one line naming the file."""
    got = read_scores_npz(path)
    return {**{f"id/{k}": v for k, v in got.id.items()}, **{f"ood/{k}": v for k, v in got.ood.items()}, **got.images}


def _scores_plot(folder: Path, doc: Mapping[str, Any], key: str | None) -> tuple[str | None, str]:
    """The score-distribution and ROC figure of one run (the cards' run), as base64 PNG."""
    path = folder / "scores.npz"
    if not path.is_file():
        return None, ""
    arrays = _load_npz(path)
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


def _score_images(
    folder: Path, doc: Mapping[str, Any], key: str | None, max_cards: int, max_flagged: int, thumbs: Thumbnails
) -> tuple[dict | None, dict | None, list[str]]:
    """Evasion and flagged cards of a ``negvocab score`` folder (scores.npz + explanations.json)."""
    notes: list[str] = []
    npz_path = folder / "scores.npz"
    if not npz_path.is_file():
        return None, None, ["scores.npz is missing: no per-image cards"]
    arrays = _load_npz(npz_path)
    rows = [r for r in doc.get("rows", []) if r.get("vocabulary")] or list(doc.get("rows", []))
    keys = [f"{r.get('method')}@{r['vocabulary']}" if r.get("vocabulary") else str(r.get("method")) for r in rows]
    asked = key
    if key is None:
        key = next((k for k in keys if f"ood/{k}" in arrays), None)
        if key is None:  # a newer layout: take the first per-image score array of a run with negatives
            key = next((k[4:] for k in arrays if k.startswith("ood/") and "@" in k and "/" not in k[4:]), None)
    runs = sorted(k[4:] for k in arrays if k.startswith("ood/") and "/" not in k[4:])
    if asked is not None and f"ood/{asked}" not in arrays:
        raise InputError(f"run {key!r} is not in {npz_path}; its runs: {', '.join(runs) or 'none'}")
    if key is None or f"ood/{key}" not in arrays or f"id/{key}" not in arrays:
        return None, None, [f"no per-image scores for {key or 'any run'} in scores.npz: no per-image cards"]
    s_id, s_ood = arrays[f"id/{key}"].astype(np.float64), arrays[f"ood/{key}"].astype(np.float64)
    paths = [str(p) for p in arrays.get("ood_paths", [])]
    ids = [str(p) for p in arrays.get("ood_image_ids", [])]
    if len(paths) != len(s_ood):
        return None, None, [f"scores.npz: {len(s_ood)} OOD scores for {len(paths)} paths: no per-image cards"]
    tpr = float(doc.get("tpr", 0.95))
    conv = str(doc.get("convention", "paper"))
    # several named OOD sets (an ``ood_sets`` array names each OOD image's set): each set has its
    # own operating point under the conventions that look at OOD scores (paper: the same for all)
    sets = [str(x) for x in arrays["ood_sets"]] if len(arrays.get("ood_sets", [])) == len(s_ood) else [""] * len(s_ood)
    names = list(dict.fromkeys(sets))
    passing: list[int] = []
    thr_of: dict[str, float] = {}
    id_idx = np.empty(0, dtype=np.int64)
    for n, name in enumerate(names):
        members = np.flatnonzero(np.array(sets) == name)
        o, flagged_ids, thr_of[name] = evasion_cards(s_id, s_ood[members], tpr=tpr, convention=conv)
        passing += [int(x) for x in members[o]]
        if n == 0:
            id_idx = flagged_ids
    ood_idx = sorted(passing, key=lambda j: -s_ood[j])
    thr = thr_of[names[0]]
    vname = key.split("@", 1)[1] if "@" in key else None
    ex_doc = _read_json(folder / "explanations.json") if (folder / "explanations.json").is_file() else {}
    ex = _explained(ex_doc, "vocabularies", vname)
    sections = []
    for name in names:
        members = [j for j in ood_idx if sets[j] == name]
        cards = [
            _card(
                {
                    "image": ids[j],
                    "path": paths[j],
                    "score": s_ood[j],
                    **_why(ex.get(ids[j])),
                    "ood_set": name if len(names) > 1 else "",
                },
                thr_of[name],
                thumbs,
            )
            for j in members[:max_cards]
        ]
        sections.append({"name": name, "cards": cards, "total": len(members), "threshold": _num(thr_of[name], 5)})
    id_paths = [str(p) for p in arrays.get("id_paths", [])]
    id_ids = [str(p) for p in arrays.get("id_image_ids", [])]
    id_ex = _explained(ex_doc, "id_images", vname)
    flagged = (
        [
            _card(
                {"image": id_ids[j], "path": id_paths[j], "score": s_id[j], **_why(id_ex.get(id_ids[j]))}, thr, thumbs
            )
            for j in id_idx[:max_flagged]
        ]
        if len(id_paths) == len(s_id)
        else []
    )
    caption = (
        f"Run {key}: at the FPR@{int(round(100 * tpr))} threshold "
        f"({conv} convention{', per OOD set' if len(names) > 1 else ''})."
    )
    notes.append("A score run keeps no image labels; negvocab coverage (labelled OOD sets) adds labels and confusions.")
    if flagged and not id_ex:
        notes.append(
            "explanations.json explains no flagged ID image (written by an older "
            "version): re-run negvocab score to see what they were taken for."
        )
    cards = [c for sec in sections for c in sec["cards"]]
    return (
        {
            "cards": cards,
            "sets": sections if len(names) > 1 else [],
            "total": len(ood_idx),
            "caption": caption,
            "threshold": _num(thr, 5),
            "key": key,
        },
        {"cards": flagged, "total": len(id_idx), "caption": caption},
        notes,
    )


def _explained(ex_doc: Mapping[str, Any], part: str, vname: str | None) -> dict[str, Mapping[str, Any]]:
    """Image id -> explanation of ``vname`` in explanations.json's ``part`` (``vocabularies``: OOD
    images; ``id_images``: flagged ID images, absent in files of older versions)."""
    return {e.get("image"): e for e in (ex_doc.get(part, {}).get(vname, []) if vname else [])}


def _why(e: Mapping[str, Any] | None) -> dict[str, Any]:
    """The card fields of one explanation: the ID class taken for and the negatives that fired."""
    top_id = ((e or {}).get("top_id") or [{}])[0]
    return {
        "id_class": top_id.get("label"),
        "id_cosine": top_id.get("cosine"),
        "top_negatives": (e or {}).get("top_negatives"),
    }


def _coverage_images(
    folder: Path, doc: Mapping[str, Any], max_cards: int, max_flagged: int, thumbs: Thumbnails
) -> tuple[dict | None, dict | None]:
    path = folder / "coverage_images.json"
    if not path.is_file():
        return None, None
    rows = _read_json(path).get("images", [])
    thr = float(doc.get("summary", {}).get("threshold", math.nan))
    ood = sorted((r for r in rows if r["set"] == "ood" and r["misjudged"]), key=lambda r: -r["score"])
    ids = sorted((r for r in rows if r["set"] == "id" and r["misjudged"]), key=lambda r: r["score"])
    caption = (
        f"{doc.get('method', '')}: at the FPR@{int(round(100 * float(doc.get('tpr', 0.95))))} "
        f"threshold ({doc.get('convention', 'paper')} convention)."
    )
    return (
        {
            "cards": [_card(r, thr, thumbs) for r in ood[:max_cards]],
            "sets": [],
            "total": len(ood),
            "caption": caption,
            "threshold": _num(thr, 5),
        },
        {"cards": [_card(r, thr, thumbs) for r in ids[:max_flagged]], "total": len(ids), "caption": caption},
    )


def _coverage_section(folder: Path, doc: Mapping[str, Any], max_rows: int = 300) -> dict[str, Any]:
    s = doc.get("summary", {})
    summary = [
        ("OOD classes / images", f"{s.get('n_classes')} / {s.get('n_ood_images')}"),
        (
            "exact coverage (label or WordNet synonym in the vocabulary)",
            f"{_pct(s.get('exact_coverage'))}% of classes, {_pct(s.get('exact_coverage_images'))}% of images",
        ),
        (
            "coverage by text cosine",
            ", ".join(f">= {t}: {_pct(v)}%" for t, v in (s.get("cosine_coverage") or {}).items()),
        ),
        ("FPR / AUROC with the vocabulary", f"{_pct(s.get('fpr'))}% / {_pct(s.get('auroc'))}%"),
        ("ORACLE: FPR with every OOD label added", f"{_pct(s.get('oracle_fpr'))}%"),
        (
            "share of the oracle gap closed by the top-k oracle additions",
            ", ".join(
                f"k={k}: {_pct(v) + '%' if v is not None else '-'}"
                for k, v in (s.get("gap_closed_by_top_k") or {}).items()
            ),
        ),
    ]
    classes = sorted(doc.get("classes", []), key=lambda r: (-r.get("fpr_gain", 0), -r.get("passing_share", 0)))
    shown = [
        {
            **r,
            "nearest_cosine": _num(r.get("nearest_cosine"), 3),
            "passing_share": f"{_pct(r.get('passing_share'))}% ({r.get('passing')})",
            "fired": "; ".join(f"{f['label']} ({f['count']})" for f in r.get("fired", []))
            if isinstance(r.get("fired"), list)
            else r.get("fired"),
            "fpr_with": _pct(r.get("fpr_with")),
            "fpr_gain": _pct(r.get("fpr_gain")),
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
                    "fpr": _pct(r["fpr"]),
                    "auroc": _pct(r["auroc"]),
                }
                for r in rep.get("rows", [])
            ],
        }
    conf = [{**r, "mean_score": _num(r["mean_score"], 4)} for r in doc.get("confusions", [])[:50]]
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
        grid = grid_section(folder, _results_table)
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
        ctx["results"] = _results_table(doc.get("rows", []))
        ctx["evasions"], ctx["flagged"], score_notes = _score_images(folder, doc, key, max_cards, max_flagged, thumbs)
        ctx["notes"] += score_notes
        ctx["scores_png"], ctx["scores_caption"] = _scores_plot(folder, doc, key)
    if "sweep.json" in found:
        doc = _read_json(found["sweep.json"])
        metas.append(doc)
        one_set = doc.get("ood_set") if isinstance(doc.get("ood_set"), str) else ""
        more = accuracy_columns_in([*doc.get("rows", []), *doc.get("references", [])])
        fmt = lambda r: {  # noqa: E731
            "M": r.get("M"),
            "name": r.get("name") or r.get("vocabulary") or "",  # "name": an older sweep.json's reference
            "ood_set": r.get("ood_set") or one_set or "-",
            "fpr": _pct(r.get("fpr")),
            "auroc": _pct(r.get("auroc")),
            "ci": _ci(r, "fpr").strip(),
            "more": [_pct(r.get(c)) for c in more],
        }
        ctx["sweep"] = {
            "columns": [_TITLES[c] for c in more],
            "png": _png(folder / "sweep.png"),
            "rows": [fmt(r) for r in doc.get("rows", [])],
            "references": [fmt(r) for r in doc.get("references", [])],
        }
    if "coverage.json" in found:
        doc = _read_json(found["coverage.json"])
        metas.append(doc)
        ctx["coverage"] = _coverage_section(folder, doc)
        ev, fl = _coverage_images(folder, doc, max_cards, max_flagged, thumbs)
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
