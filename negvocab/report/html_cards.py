"""The images that fail, as the HTML report's cards: OOD images passing as ID and ID images flagged as
OOD at the run's operating point, worst first and capped, with what each was taken for, from a score
run's ``scores.npz`` and ``explanations.json`` or a coverage run's ``coverage_images.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.evaluation.stored import read_scores_npz
from negvocab.report.html_results import num
from negvocab.report.thumbs import Thumbnails
from negvocab.scoring.metrics import operating_point

__all__ = ["coverage_cards", "evasion_cards", "load_npz", "read_json", "score_cards"]


def _card(r: Mapping[str, Any], threshold: float, thumbs: Thumbnails) -> dict[str, Any]:
    path = str(r.get("path") or "")
    thumb = thumbs(path) if path else None
    return {
        "image": r.get("image", ""),
        "label": r.get("label") or "",
        "ood_set": r.get("ood_set") or "",
        "score": num(r["score"], 5),
        "threshold": num(threshold, 5),
        "id_class": r.get("id_class") or "",
        "id_cosine": num(r["id_cosine"], 3) if r.get("id_cosine") is not None else "",
        "negatives": [{"label": n["label"], "cosine": num(n["cosine"], 3)} for n in r.get("top_negatives") or []],
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


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot be read as JSON ({e}); re-run the command that wrote it") from e


def load_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of a scores.npz (``id/<run>``, ``ood/<run>``, the image arrays) through the one
    validation layer (:func:`negvocab.evaluation.stored.read_scores_npz`): one line naming the file."""
    got = read_scores_npz(path)
    return {**{f"id/{k}": v for k, v in got.id.items()}, **{f"ood/{k}": v for k, v in got.ood.items()}, **got.images}


def score_cards(
    folder: Path, doc: Mapping[str, Any], key: str | None, max_cards: int, max_flagged: int, thumbs: Thumbnails
) -> tuple[dict | None, dict | None, list[str]]:
    """Evasion and flagged cards of a ``negvocab score`` folder (scores.npz + explanations.json)."""
    notes: list[str] = []
    npz_path = folder / "scores.npz"
    if not npz_path.is_file():
        return None, None, ["scores.npz is missing: no per-image cards"]
    arrays = load_npz(npz_path)
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
    ex_doc = read_json(folder / "explanations.json") if (folder / "explanations.json").is_file() else {}
    ex = _explained(ex_doc, "vocabularies", vname)
    sections: list[dict[str, Any]] = []
    for name in names:
        in_set = [j for j in ood_idx if sets[j] == name]
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
            for j in in_set[:max_cards]
        ]
        sections.append({"name": name, "cards": cards, "total": len(in_set), "threshold": num(thr_of[name], 5)})
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
            "threshold": num(thr, 5),
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


def coverage_cards(
    folder: Path, doc: Mapping[str, Any], max_cards: int, max_flagged: int, thumbs: Thumbnails
) -> tuple[dict | None, dict | None]:
    path = folder / "coverage_images.json"
    if not path.is_file():
        return None, None
    rows = read_json(path).get("images", [])
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
            "threshold": num(thr, 5),
        },
        {"cards": [_card(r, thr, thumbs) for r in ids[:max_flagged]], "total": len(ids), "caption": caption},
    )
