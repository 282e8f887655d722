"""A paper table's caption and notes: what its numbers are (metric, convention, counts, weights), what
it fixes, how its means and bold marks were made, and every caveat a reader needs (test-time streams,
entries that are not deployable, published figures, random weights)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from negvocab.data.published import published_notes
from negvocab.evaluation.kinds import KIND_LABELS, caveat_notes, is_test_time, is_test_tuned, kind_marks, stream_words
from negvocab.evaluation.records import MEAN, RANDOM_WEIGHTS_WARNING, THRESHOLD_RULES, seed_sd
from negvocab.report.results import TEST_TIME_MARK, TEST_TUNED_NOTE, authors_notes
from negvocab.report.table_format import Table
from negvocab.report.table_rows import is_baseline

__all__ = ["caption_notes", "dedupe_caption", "mean_note", "test_time_notes"]


def caption_notes(
    sel: Sequence[Mapping[str, Any]],
    t: Table,
    axes: tuple[str, ...],
    bold_text: str,
    failed: Mapping[str, str],
    means: list[str],
) -> list[str]:
    """The notes of table ``t`` over the rows ``sel``: metric, convention, counts, templates, weights,
    what is fixed, the means, the bold rule, caveats and warnings, one sentence per fact."""
    # long: one sentence per fact a reader of the table needs
    first = sel[0]
    marks = {str(r["method"]): kind_marks(r, TEST_TIME_MARK) for r in sel if kind_marks(r, TEST_TIME_MARK)}
    tt_notes = test_time_notes(sel, t.metrics)
    notes = [", ".join(t.metric_names) + " in %."]
    convs = list(dict.fromkeys(str(r.get("convention", "paper")) for r in sel))
    for c in convs:
        notes.append(f"{c} convention; threshold: {THRESHOLD_RULES.get(c, c)}; TPR {first.get('tpr', 0.95):g}.")
    n_id = sorted({int(r["n_id"]) for r in sel if r.get("n_id") is not None})
    n_ood = {str(r["ood_set"]): str(r["n_ood"]) for r in sel if r.get("ood_set") != MEAN and r.get("n_ood") is not None}
    in_all = sorted({int(r["n_ood"]) for r in sel if r.get("ood_set") == MEAN and r.get("n_ood") is not None})
    if in_all:  # the mean over the sets: its images are all the sets' together
        n_ood["in all the sets of the mean"] = ", ".join(map(str, in_all))
    notes.append(f"n ID {', '.join(map(str, n_id))}; n OOD " + ", ".join(f"{k} {v}" for k, v in n_ood.items()) + ".")
    tpl = list(dict.fromkeys(str(r.get("templates", "?")) for r in sel))
    notes.append(f"Templates: {', '.join(tpl)}.")
    weights = dict.fromkeys(
        f"{r['model']} ({'RANDOM weights' if r.get('random_weights') else r.get('pretrained') or '?'})" for r in sel
    )
    notes.append(f"Weights: {', '.join(weights)}.")
    for d in ("model", "vocabulary", "method", "ood_set"):
        vals = list(
            dict.fromkeys(str(r.get(d, "")) for r in sel if not (d in ("vocabulary", "method") and is_baseline(r)))
        )
        if d not in axes and len(vals) == 1 and vals[0]:
            name = {"ood_set": "OOD set"}.get(d, d.capitalize())
            mark = marks.get(vals[0], "") if d == "method" else ""
            notes.append(f"{name}: {vals[0] if vals[0] != MEAN else 'mean over the OOD sets'}{mark}.")
    base = sorted({str(r["method"]) for r in sel if is_baseline(r)})
    if base:
        notes.append(f"Without a vocabulary (baseline): {', '.join(base)}.")
    if any(str(r.get("ood_set")) == MEAN for r in sel):
        notes.append(
            "mean (OOD set): mean over the OOD sets; its interval resamples each set's OOD images within the set."
        )
    notes += means
    if t.intervals:
        notes.append("Brackets: 95% bootstrap intervals over the OOD images.")
    notes += tt_notes[1:] + [f"{n[:1].upper()}{n[1:]}." for n in authors_notes(sel)]  # and authors' settings
    notes.append(bold_text)
    if any("aupr" in m for m in t.metrics):
        notes.append(f"AUPR as {str(first.get('aupr_method', 'average_precision')).replace('_', ' ')}.")
    bad = sorted({str(r["vocabulary"]) for r in sel if r.get("deployable") is False and r.get("vocabulary")})
    if bad:
        notes.append(f"NOT deployable (oracle/transductive, a bound, not a result): {', '.join(bad)}.")
    notes += [f"Caveat: {c}." for c in caveat_notes(sel)]
    notes += published_notes(sel)  # each published figure's kind, source, benchmark and ID split
    notes += tt_notes[:1]
    for model, why in failed.items():
        notes.append(f"{model}: cells failed ({why}); not in the table, nor in its means.")
    if any(r.get("random_weights") for r in sel):
        notes.append(RANDOM_WEIGHTS_WARNING + ".")
    return notes


def test_time_notes(rows: Sequence[Mapping[str, Any]], metrics: Sequence[str]) -> list[str]:
    """A caption's sentences on the test-time entries of ``rows`` (none without one): what ``[tt]`` means,
    each method's stream(s) and whether the table mixes kinds; then, where an entry is a spread over
    stream seeds, what its ``±`` is; where an entry was tuned on the test sets, what its mark means. Tables
    and grid pivots say it alike."""
    streams: dict[str, dict[str, None]] = {}  # a test-time method -> its streams in words
    for r in rows:
        if is_test_time(r):
            streams.setdefault(str(r["method"]), {})[stream_words(r)] = None
    tuned = TEST_TUNED_NOTE if any(is_test_tuned(r) for r in rows) else ""
    if not streams:
        return [tuned] if tuned else []
    said = "; ".join(f"{m} (stream {' | '.join(w)})" for m, w in sorted(streams.items()))
    mixed = len(streams) < len({str(r["method"]) for r in rows})
    out = [
        f"[tt] test-time (scores depend on the test stream seen): {said}"
        + ("; the table mixes them with other kinds." if mixed else ".")
    ]
    out += [tuned] if tuned else []
    if any(seed_sd(r, m) for r in rows for m in metrics):
        out.append("± after a [tt] value: the sample sd over its stream seeds (the value: their mean), no interval.")
    return out


def mean_note(made: Sequence[tuple[str, str]], what: str, over: str, sd: bool) -> str:
    """The caption's sentence on one summary: plain mean, within which kind, with the spread."""
    split = len(made) > 1
    names = "; ".join(f"{n}" + (f" over the {KIND_LABELS.get(k, k)} entries only" if split else "") for n, k in made)
    return (
        f"{names} ({what}): plain mean over {over}"
        + ("; kinds are never averaged together" if split else "")
        + ("; ± the standard deviation over the models" if sd else "")
        + "; no interval; '-' where a member is missing."
    )


def dedupe_caption(caption: str, names: Sequence[str]) -> str:
    """A caption that only names the metric says nothing the notes do not ("AUROC AUROC (%)")."""
    return (
        ""
        if caption.strip().rstrip(".").lower() in {n.lower() for n in names} | {f"{n.lower()} (%)" for n in names}
        else caption
    )
