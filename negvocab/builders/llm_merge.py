"""Merging a run's journaled answers into a vocabulary: per class or chunk, over rounds, filtered.

Used by :mod:`negvocab.builders.llm` (the run and its folder live there); the provenance written here
(classes and rounds per label, endpoints, served models, response formats, failures) is what the
vocabulary's settings hold.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from negvocab.builders.llm_classes import own_label_space
from negvocab.core.errors import InputError, ResourceError
from negvocab.labels.synonyms import Match, SynonymFilter
from negvocab.llm.journal import custom_id
from negvocab.llm.text import reclean_results
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.builders.llm_run import LLMRun

__all__ = ["check_rounds_used", "count_stats", "merge_rounds", "vocabulary_from_results"]


def check_rounds_used(r: int, rounds: int) -> int:
    if not 1 <= r <= rounds:
        raise InputError(f"rounds used must be between 1 and the run's {rounds} rounds, got {r}")
    return r


def merge_rounds(
    results: Mapping[str, Mapping[str, Any]], keys: Sequence[str], rounds_used: int
) -> tuple[dict[str, dict[str, list[int]]], dict[str, list[str]]]:
    """Per key (class or chunk): every unique label of rounds ``0..rounds_used-1`` with the rounds
    that proposed it, in order of first proposal; and the custom ids per non-``ok`` status.

    Labels of ``short`` answers are kept; ``refused`` and ``invalid`` answers have none. A
    missing result raises :class:`InputError`.
    """
    per_key: dict[str, dict[str, list[int]]] = {}
    failures: dict[str, list[str]] = {}
    missing = []
    for key in keys:
        merged: dict[str, list[int]] = {}
        for r in range(rounds_used):
            cid = custom_id(key, r)
            rec = results.get(cid)
            if rec is None:
                missing.append(cid)
                continue
            if rec["status"] != "ok":
                failures.setdefault(rec["status"], []).append(cid)
            for label in rec.get("labels") or ():
                rounds_of = merged.setdefault(label, [])
                if not rounds_of or rounds_of[-1] != r:
                    rounds_of.append(r)
        per_key[key] = merged
    if missing:
        raise InputError(
            f"{len(missing)} requests have no result in the journal (e.g. {missing[0]}); run the build to complete them"
        )
    return per_key, failures


def count_stats(counts: Sequence[int]) -> dict[str, float]:
    """Min, mean and max of per-class (or per-chunk) label counts, as vocabulary settings hold them."""
    if not counts:
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": min(counts), "mean": round(statistics.fmean(counts), 2), "max": max(counts)}


def vocabulary_from_results(
    run: LLMRun,
    results: Mapping[str, Mapping[str, Any]],
    *,
    rounds_used: int | None = None,
    synonym_filter: SynonymFilter | bool | None = None,
    extra_settings: Mapping[str, Any] | None = None,
) -> Vocabulary:
    """Merge the results of the first ``rounds_used`` rounds, synonym-filter, and make the vocabulary.

    Labels are ordered by key (class or chunk) order, then by first proposal within the key.
    ``meta[label]["proposed_by"]`` maps each key that proposed the label to its rounds. The
    settings report per-key unique counts before and after the filter, the removed labels with
    the rule that removed them, and the failed requests by status.
    """
    r_used = run.rounds if rounds_used is None else check_rounds_used(rounds_used, run.rounds)
    results, cleaning = reclean_results(results)  # the one normaliser (negvocab.labels.clean), also for old journals
    per_key, failures = merge_rounds(results, run.keys, r_used)
    proposed: dict[str, dict[str, list[int]]] = {}
    for key, labels in per_key.items():
        for label, rounds_of in labels.items():
            proposed.setdefault(label, {})[key] = rounds_of
    if not proposed:
        raise ResourceError(_nothing_answered(run, results, failures))
    kept, removed, filter_record = _filtered(run, list(proposed), synonym_filter)
    if not kept:
        raise InputError(f"no labels left from {run.run_dir} after the synonym filter ({len(removed)} removed)")
    keep = set(kept)
    meta = {
        label: {
            "proposed_by": proposed[label],
            "prompt": run.template.name,
            "prompt_file": run.template.source,
            "prompt_sha256": run.template.sha256,
        }
        for label in kept
    }
    unique = {key: len(labels) for key, labels in per_key.items()}
    kept_counts = {key: sum(1 for lab in labels if lab in keep) for key, labels in per_key.items()}
    per_class = run.task in ("gpt_siblings", "eoe_near")
    views = {key: [lab for lab in labels if lab in keep] for key, labels in per_key.items()} if per_class else {}
    used = [results[cid] for k in run.keys for r in range(r_used) if (cid := custom_id(k, r)) in results]
    served = sorted({str(rec["model"]) for rec in used if rec.get("model")})
    endpoints = sorted({str(rec["endpoint"]) for rec in used if rec.get("endpoint")})
    settings = {
        "task": run.task,
        "model": run.model,
        "served_models": served,  # what the server says answered (e.g. a dated snapshot of the alias)
        "endpoints": endpoints,  # public URLs only (no user info, no query)
        "response_formats": dict(Counter(str(rec.get("response_format") or "json_schema") for rec in used)),
        "prompt": run.template.name,
        "prompt_file": run.template.source,
        "prompt_sha256": run.template.sha256,
        "labels_per_request": run.identity["n"],
        "rounds": run.rounds,
        "rounds_used": r_used,
        "keys": len(run.keys),
        "temperature": run.identity.get("temperature"),
        "run_dir": str(run.run_dir),
        "run_identity_sha256": run.identity_sha256,
        "unique_per_key": unique,
        "kept_per_key": kept_counts,
        "unique_per_key_stats": count_stats(list(unique.values())),
        "kept_per_key_stats": count_stats(list(kept_counts.values())),
        "unique_labels": len(proposed),
        **({"synonym_filter": filter_record} if filter_record is not None else {}),
        "label_cleaning": cleaning.to_settings(),  # raw -> clean, and what was dropped as no label
        "failures": failures,
        # partial answers are answers: the names the answers held against the names asked (before the filter)
        "names": {"asked": sum(int(rec.get("n") or 0) for rec in used), "got": sum(len(rec["labels"]) for rec in used)},
        **dict(extra_settings or {}),
    }
    if run.chunks:
        settings["chunks"] = run.chunks
    source = "gpt" if run.task == "gpt_siblings" else "eoe"
    return Vocabulary.from_labels(kept, source=source, meta=meta, settings=settings, views=views)


def _filtered(
    run: LLMRun, labels: list[str], synonym_filter: SynonymFilter | bool | None
) -> tuple[list[str], dict[str, Match], dict[str, Any] | None]:
    """The labels kept and removed, and the filter's record: ``None`` or ``True`` filters against the run's ID
    label space, as the CLI does (ImageNet-1k's by default); ``False`` keeps every label (no record)."""
    if synonym_filter is False:
        return labels, {}, None
    if synonym_filter is None or synonym_filter is True:
        own = own_label_space(run.id_classes)
        synonym_filter = SynonymFilter(run.id_classes) if own else SynonymFilter()
    kept, removed = synonym_filter.split(labels)
    return kept, removed, synonym_filter.report(kept, removed)


def _nothing_answered(run: LLMRun, results: Mapping[str, Mapping[str, Any]], failures: Mapping[str, list[str]]) -> str:
    """The one line for a run whose answers hold no label at all: what the server answered, not a
    filter to blame."""
    failed = sum(len(ids) for ids in failures.values())
    first = next((results[cid] for ids in failures.values() for cid in ids), {})
    said = f"; e.g. {first.get('custom_id')}: {first.get('error')}" if first.get("error") else ""
    if first.get("snippet"):
        said += f", the server returned {first['snippet']!r}"
    return (
        f"no labels from {run.run_dir}: {failed} of {len(results)} answers failed "
        f"({', '.join(f'{st} {len(ids)}' for st, ids in failures.items()) or 'empty lists'}){said}; "
        "fix the server or model, then re-run the same command (failed requests are asked again)"
    )
