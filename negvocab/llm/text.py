"""Cleaning of label strings proposed by a language model: the one normaliser of
:mod:`negvocab.labels.clean`, re-exported here for the LLM layer (and older imports), and applied
again to journaled answers when a vocabulary is built, so journals written by an older normaliser
get today's cleaning too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from negvocab.labels.clean import (
    CleanResult,
    clean_label,
    clean_labels,
    clean_labels_report,
    parse_label_list,
)
from negvocab.labels.lexicon import judge_answer

__all__ = ["CleanResult", "clean_label", "clean_labels", "clean_labels_report", "parse_label_list", "reclean_results"]


def reclean_results(results: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], CleanResult]:
    """Journal results with their labels cleaned again (``raw_labels`` when a record keeps them,
    else ``labels``), items that look like no name dropped (:func:`negvocab.labels.lexicon.judge_answer`; an
    answer that is mostly no language loses every item and counts as ``invalid``),
    and what cleaning changed and dropped over all of them (for the provenance)."""
    out: dict[str, dict[str, Any]] = {}
    total = CleanResult()
    for cid, rec in results.items():
        raw = rec.get("raw_labels") or rec.get("labels") or []
        report = clean_labels_report(raw)
        kept, bad, babble = judge_answer(report.labels)
        nonsense = [x for x in bad if x not in kept]  # a stray nonsense item; an unknown name in a good answer stays
        if babble:  # an answer journaled by an older negvocab that is no language: none of it reaches a vocabulary
            kept, nonsense = [], report.labels
            rec = {**rec, "status": "invalid", "error": "the answer is not language"}
        out[cid] = {**rec, "labels": kept}
        total.changed.update(report.changed)
        total.dropped.extend(d for d in [*report.dropped, *nonsense] if d not in total.dropped)
    return out, total
