"""The results table of the HTML report: columns in display order, those equal in every row moved to a
header, cells formatted (percent, intervals, shortened hashes), and warnings for numbers a reader could
over-trust (few images, a wide or zero-width interval).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from negvocab.evaluation.kinds import kind_marks
from negvocab.evaluation.records import SPREAD_METRICS
from negvocab.evaluation.row import interval
from negvocab.report.results import CCR_COLUMNS, TEST_TIME_MARK, test_time_notes

__all__ = ["SMALL_N", "TITLES", "WIDE_CI", "ci_text", "num", "pct", "results_table"]

SMALL_N = 30  # fewer ID or OOD images than this: the report warns that the figures are noisy
WIDE_CI = 0.20  # a 95% CI of FPR wider than 20 points: the report says so

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
    "id_accuracy",  # where the ID labels allow; CCR on a full-spectrum ID set
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
_SPREAD = {f"{m}_{s}": f"{m.upper().replace('_', '-')} {s.replace('std', '± sd')} (seeds) %" for m in SPREAD_METRICS
           for s in ("std", "min", "max")}  # a test-time row over several stream seeds: apart from the CIs  # fmt: skip
_PERCENT = {"fpr", "auroc", "aupr_in", "aupr_out", "aupr", "id_accuracy", *CCR_COLUMNS, *_SPREAD}
TITLES = {"id_accuracy": "ID acc. %", **{c: f"{c.upper()} %" for c in CCR_COLUMNS}, **_SPREAD}


def pct(x: Any) -> str:
    """A fraction in percent with two decimals (``-`` for None or NaN; other text as it is)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "-" if x is None else str(x)
    return "-" if math.isnan(v) else f"{100 * v:.2f}"


def num(x: Any, digits: int = 4) -> str:
    """A number to ``digits`` significant digits (``-`` for NaN; other text as it is)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "-" if math.isnan(v) else f"{v:.{digits}g}"


def ci_text(row: Mapping[str, Any], name: str) -> str:
    """`` [low, high]`` of ``name``'s interval in a row, in percent; empty without one."""
    ci = interval(row, name)
    if ci is None:
        return ""
    return f" [{pct(ci[0])}, {pct(ci[1])}]"


def _cell(row: Mapping[str, Any], col: str) -> dict[str, Any]:
    v = row.get(col)
    if col in _PERCENT:
        return {"text": pct(v) + (ci_text(row, col) if col in ("fpr", "auroc") else ""), "num": True}
    if isinstance(v, bool):
        return {"text": "yes" if v else "no", "num": False}
    if isinstance(v, (int, float)):
        return {"text": num(v, 6), "num": True}
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
    if col == "method" and kind_marks(row, TEST_TIME_MARK):  # the footer says what each mark is, and the stream
        return {"text": f"{v}{kind_marks(row, TEST_TIME_MARK)}", "num": False, "full": ""}
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
                f"wide [{pct(ci[0])}, {pct(ci[1])}]: the point value says little."
            )
        elif ci[1] == ci[0] and isinstance(r.get("n_ood"), int) and r["n_ood"] < SMALL_N:
            out.append(
                f"{name}: a CI of zero width [{pct(ci[0])}, {pct(ci[1])}] from {r['n_ood']} "
                "OOD images is not certainty: the bootstrap cannot see beyond the images it has."
            )
    return out


def results_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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
        **TITLES,
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
        )
        + "".join(f" {n}." for n in test_time_notes(rows)),
    }
