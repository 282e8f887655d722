"""A grid's output folder as one report section: its paper tables, comparisons, sweeps and one
results table per model, read from the files ``negvocab grid run`` wrote (``grid.json``,
``tables.md``, ``comparisons.md``, ``sweep_*.svg``, ``table.csv``), so that the report layer needs
nothing of the grid's code."""

from __future__ import annotations

import base64
import csv
import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from negvocab.report.results import CCR_COLUMNS, STREAM_COLUMNS

__all__ = ["GRID_MARKER", "grid_section"]

#: the file that makes a folder a grid's output folder for the report
GRID_MARKER = "grid.json"
#: ID accuracy and CCR: shown where table.csv holds them
ACCURACY = ("id_accuracy", *CCR_COLUMNS)
#: the columns of a model's results table (the digests, parameters and AUPR intervals stay in table.csv)
_SHOWN = ("ood_set", "method", "vocabulary", "vocab_size", "deployable", "caveats", "convention", "tpr", "fpr",
          "auroc", "aupr_in", "aupr_out", "n_id", "n_ood", "random_weights", *ACCURACY)  # fmt: skip
_NUMBERS = ("fpr", "auroc", "aupr_in", "aupr_out", "tpr", "vocab_size", "n_id", "n_ood", *ACCURACY)


def _markdown_tables(text: str) -> list[dict[str, Any]]:
    """The ``### heading`` / Markdown table / caption blocks of ``tables.md``: heading, head, rows
    (cells as (text, bold)), caption."""
    out: list[dict[str, Any]] = []
    for block in text.split("### ")[1:]:
        heading, _, rest = block.partition("\n")
        lines = [ln for ln in rest.splitlines() if ln.strip()]
        table = [ln for ln in lines if ln.startswith("|")]
        cells = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in table if not ln.startswith("|---")]
        if not cells:
            continue
        rows = [[_cell(c) for c in row] for row in cells[1:]]
        caption = " ".join(ln for ln in lines if not ln.startswith("|"))
        out.append({"heading": heading.strip(), "head": cells[0], "rows": rows, "caption": caption})
    return out


def _cell(text: str) -> tuple[str, str, bool]:
    """(value, interval or spread, bold) of a Markdown cell such as ``**12.50** [8.33, 25.00]``."""
    bold = text.startswith("**")
    value, sep, rest = text.replace("**", "").partition(" [")
    if sep:
        return value, f"[{rest}", bold
    value, sep, rest = value.partition(" ± ")
    return value, f"± {rest}" if sep else "", bold


def _svg(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode("ascii")


def _model_rows(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The rows of ``table.csv`` by model (numbers as numbers, empty as NaN)."""
    if not path.is_file():
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    with path.open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            row: dict[str, Any] = dict(r)
            for k in _NUMBERS:
                if k in row:
                    try:
                        row[k] = float(row[k]) if row[k] != "" else math.nan
                    except ValueError:
                        pass
            for m in ("fpr", "auroc"):  # the interval as a score row holds it: shown beside the value
                lo, hi = row.pop(f"{m}_ci_low", ""), row.pop(f"{m}_ci_high", "")
                if lo not in ("", "nan") and hi not in ("", "nan"):
                    row[f"{m}_ci"] = [float(lo), float(hi)]
            keep = {k: v for k, v in row.items() if k in _SHOWN or k.endswith("_ci")}
            # a test-time cell keeps its kind and stream (the table marks it [tt] and names its stream)
            keep.update({k: v for k, v in row.items() if k in STREAM_COLUMNS and v not in ("", None)})
            out.setdefault(str(r.get("model", "")), []).append(keep)
    return out


def grid_section(
    folder: Path, results_table: Callable[[Sequence[Mapping[str, Any]]], dict[str, Any]]
) -> dict[str, Any]:
    """The template's grid block of ``folder`` (``results_table``: the report's table of results rows)."""
    doc = json.loads((folder / GRID_MARKER).read_text(encoding="utf-8"))
    tables = (
        _markdown_tables((folder / "tables.md").read_text(encoding="utf-8")) if (folder / "tables.md").is_file() else []
    )
    said = (folder / "comparisons.md").read_text(encoding="utf-8") if (folder / "comparisons.md").is_file() else ""
    notes = [f"Caveat: {c}" for c in doc.get("caveats", [])]  # random weights: the page's banner says so
    return {
        "tables": tables,
        "comparisons": [ln[2:] for ln in said.splitlines() if ln.startswith("- ")],
        "sweeps": [{"name": p.stem, "svg": _svg(p)} for p in sorted(folder.glob("sweep_*.svg"))],
        "models": [
            {"name": m, "results": results_table(rows)} for m, rows in _model_rows(folder / "table.csv").items()
        ],
        "notes": notes,
        "random": bool(doc.get("random_weights")),
    }
