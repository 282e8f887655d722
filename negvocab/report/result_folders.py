"""Tidy rows of a ``score`` or ``sweep`` results folder, with the per-image scores a ``score`` folder
keeps (read and checked on first use) for the paired comparisons of :mod:`negvocab.report.tables`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.evaluation.stored import StoredScores, read_results_json, read_scores_npz, read_sweep_json
from negvocab.report.results import flat_row
from negvocab.report.significance import ScoreGetter

__all__ = ["folder_rows"]


def folder_rows(folder: Path) -> tuple[list[dict[str, Any]], ScoreGetter | None]:
    """Tidy rows of a ``score`` folder (``results.json``; per-image scores from ``scores.npz``) or
    a ``sweep`` folder (``sweep.json``: each size as ``vocabulary@M``, references by name), read
    through the validators of :mod:`negvocab.evaluation.stored` (as ``report`` and ``subsample``)."""
    if (folder / "results.json").is_file():
        doc = read_results_json(folder / "results.json")
        rows = [{**_run_fields(doc), **flat_row(r)} for r in doc["rows"]]
        return rows, _score_file_getter(folder / "scores.npz", rows)
    if (folder / "sweep.json").is_file():
        doc = read_sweep_json(folder / "sweep.json")
        rows = [{**flat_row(r), "vocabulary": f"{r.get('vocabulary', '')}@{r['M']}"} for r in doc["rows"]]
        rows += [flat_row(r) for r in doc.get("references") or []]
        return [{**_run_fields(doc), **r} for r in rows], None
    raise InputError(
        f"{folder}: no results.json, sweep.json or grid cells/; give a folder of negvocab score, sweep or grid run"
    )


def _run_fields(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What a results file says once for all its rows: the model, the templates, the ID label space's
    name (``id_classes``: ``imagenet1k``, ...), the ID split's name (``id_split``) and the benchmark each
    OOD set came from (``set_benchmarks``; "" each where the file does not say): published figures match
    on the last three."""
    space, id_set, sets = doc.get("id_classes"), doc.get("id_set"), doc.get("ood_sets")
    split = str(id_set.get("name") or "") if isinstance(id_set, Mapping) else ""
    sets = sets if isinstance(sets, Mapping) else {}
    benches = {str(k): str(v.get("benchmark") or "") for k, v in sets.items() if isinstance(v, Mapping)}
    return {
        "model": doc.get("model", ""),
        "templates": doc.get("templates", ""),
        "id_classes": str(space or ""),
        "id_split": split,
        "set_benchmarks": benches,
    }


def _score_file_getter(path: Path, rows: Sequence[Mapping[str, Any]]) -> ScoreGetter | None:
    """Per-image scores of a score folder for the comparisons, read (and validated) on first use:
    a file that cannot be read, or whose image counts disagree with the rows, is refused."""
    if not path.is_file():
        return None
    model = str(rows[0].get("model", "")) if rows else ""
    loaded: list[tuple[StoredScores, np.ndarray]] = []

    def stored() -> tuple[StoredScores, np.ndarray]:
        if not loaded:
            data = read_scores_npz(path)
            n_ood = len(next(iter(data.ood.values())))
            sets = data.images.get("ood_sets", np.array(["ood"] * n_ood))
            _check_counts(path, data, sets, rows)
            loaded.append((data, sets))
        return loaded[0]

    def get(m: str, vocabulary: str, method: str) -> tuple[np.ndarray, dict[str, np.ndarray]] | None:
        key = f"{method}@{vocabulary}" if vocabulary else method
        if m != model:
            return None
        data, sets = stored()
        if key not in data.id:
            return None
        ood = data.ood[key]
        return data.id[key], {n: ood[sets == n] for n in dict.fromkeys(sets.tolist())}

    return get


def _check_counts(path: Path, data: StoredScores, sets: np.ndarray, rows: Sequence[Mapping[str, Any]]) -> None:
    """The image counts the rows state (``n_id``; ``n_ood`` of each set) are those of the scores file."""
    n_id = len(next(iter(data.id.values())))
    counts = {str(n): int(np.sum(sets == n)) for n in dict.fromkeys(sets.tolist())}
    hint = "give the scores.npz written with this results.json (re-run `negvocab score` into a new folder)"
    for r in rows:
        said_id, said_ood, name = r.get("n_id"), r.get("n_ood"), str(r.get("ood_set", ""))
        if isinstance(said_id, (int, float)) and int(said_id) != n_id:
            raise InputError(f"{path}: holds {n_id} ID images; results.json says {int(said_id)}; {hint}")
        if name in counts and isinstance(said_ood, (int, float)) and int(said_ood) != counts[name]:
            raise InputError(
                f"{path}: holds {counts[name]} OOD images of {name!r}; results.json says {int(said_ood)}; {hint}"
            )
