"""What a grid's rows were measured on, beyond their own fields: the ID split's name and the benchmark
each OOD set came from, as ``grid.json`` keeps them and ``negvocab score``'s results record them
(published figures meet a row only on the same benchmark sets and ID split)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from negvocab.data.benchmarks import get_benchmark, id_split_name
from negvocab.grid.config import GridConfig

__all__ = ["grid_identity", "read_identity"]


def grid_identity(cfg: GridConfig) -> dict[str, Any]:
    """``id_split``: the benchmark ID set's name ("" for a folder of the user's: not known to be a
    benchmark's split); ``set_benchmarks``: each OOD set's benchmark ("" for a folder of the user's)."""
    spec = getattr(cfg, "id_set", None)
    bench = getattr(spec, "benchmark", None) if getattr(spec, "benchmark_id", False) else None
    split = id_split_name(get_benchmark(bench)) if bench else ""
    sets = {s.name: getattr(s, "benchmark", None) or "" for s in getattr(cfg, "ood_sets", [])}
    return {"id_split": split, "set_benchmarks": sets}


def read_identity(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The identity a ``grid.json`` stored (:func:`grid_identity`; empty where an older release wrote none)."""
    split, sets = doc.get("id_split"), doc.get("set_benchmarks")
    if not isinstance(split, str) or not isinstance(sets, Mapping):
        return {}
    return {"id_split": split, "set_benchmarks": {str(k): str(v or "") for k, v in sets.items()}}
