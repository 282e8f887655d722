"""NegRefine's LLM filter of a negative vocabulary (Ansari et al., ICCV 2025; docs/methods.md#negrefine).

Each label of a vocabulary (NegRefine filters CSP's pool; here any vocabulary) is asked about, as
NegRefine's ``src/neg_filter.py`` does: first "is it a proper noun?" (a Yes removes it); then, for each
of its ``top_n`` (10) best-matching ID class names in order (cosine of the bare label and the bare
class name, no templates), the label equal to the class name is removed ("same", no question asked),
else "is it a sub-category of that class?" (a Yes removes it and ends the label's questions). An
answer is a Yes when its text, lower-cased, starts with ``yes`` (their parsing).

The questions run through negvocab's LLM layer (:class:`~negvocab.builders.llm.LLMRun`: the run
folder's journal, resume, any OpenAI-compatible server, the Batch API, dry-run cost) in stages: the
proper-noun question for every label, then the k-th sub-category question only for the labels still
undecided, so that no more questions are sent than NegRefine's loop sends. The answers are journaled
as they come in, so an interrupted run resumes where it stopped and a finished one is rebuilt
without a request. The prompts are NegRefine's, as data (``prompts/negrefine_*.txt``, attributed in
``prompts/negrefine.LICENSE``); they are sent verbatim (the ``verbatim`` response format).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.builders.llm import LLMRun
from negvocab.builders.llm_identity import check_model, run_folder
from negvocab.core.errors import InputError
from negvocab.labels.imagenet import IdClasses, imagenet1k
from negvocab.llm.cost import CostEstimate
from negvocab.llm.formats import VERBATIM
from negvocab.llm.journal import Journal
from negvocab.llm.prompts import PromptTemplate, load_prompt
from negvocab.llm.run import Request, make_request
from negvocab.llm.settings import LLMSettings
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM

__all__ = [
    "NegRefineDecision",
    "build_negrefine_vocabulary",
    "clean_words",
    "estimate_negrefine",
    "is_yes",
    "negrefine_decisions",
    "top_matching_classes",
]

log = logging.getLogger(__name__)

PROPER_TASK = "negrefine_proper_noun"
SUB_TASK = "negrefine_subcategory"
#: NegRefine's ``n = min(10, len(pos_labels))``: the ID classes a label is compared with
TOP_N = 10
#: the sampling temperature of Qwen2.5-Instruct's generation config, which NegRefine's ``generate`` uses
TEMPERATURE = 0.7


def clean_words(labels: Sequence[str]) -> list[str]:
    """NegRefine's ``_clean_words``: keep letters, ``_``, ``-`` and spaces; drop what is left with
    fewer than 3 characters; each label once. Their ``list(set(...))`` order depends on the hash seed;
    here the first appearance's order is kept."""
    out: dict[str, None] = {}
    for word in labels:
        w = "".join(c for c in word if c.isalpha() or c in {"_", "-", " "})
        if len(w) > 2:
            out[w] = None
    return list(out)


def is_yes(answer: str) -> bool:
    """NegRefine's reading of an answer: ``response.lower().startswith("yes")``."""
    return answer.lower().startswith("yes")


def top_matching_classes(neg_emb: np.ndarray, id_emb: np.ndarray, n: int = TOP_N) -> np.ndarray:
    """Per label, the indices of its ``min(n, C)`` most similar ID classes, most similar first
    (NegRefine's ``torch.topk`` over ``neg @ pos.T`` in float32)."""
    import torch

    k = min(n, id_emb.shape[0])
    sim = torch.as_tensor(np.asarray(neg_emb, np.float32)) @ torch.as_tensor(np.asarray(id_emb, np.float32)).T
    return torch.topk(sim, k, dim=1).indices.numpy()


@dataclass(frozen=True)
class NegRefineDecision:
    """What the filter did with one label: ``reason`` is None (kept), ``proper noun``, ``same`` or
    ``subcategory`` (with the ``id_class`` it matched), or ``unanswered`` (kept: no usable answer)."""

    label: str
    reason: str | None
    id_class: str | None = None
    answer: str | None = None
    asked: int = 0  # questions asked about it

    @property
    def removed(self) -> bool:
        return self.reason in ("proper noun", "same", "subcategory")


#: (label, round) -> the answer's text, or None when none is known yet (rounds: 0 the proper-noun question,
#: k >= 1 the sub-category question for the k-th best-matching ID class)
Answers = Callable[[str, int], "str | None"]


def negrefine_decisions(
    labels: Sequence[str], matches: Mapping[str, Sequence[str]], answers: Answers
) -> tuple[list[NegRefineDecision], list[tuple[str, int]]]:
    """NegRefine's decision loop over known answers: the decided labels, and the (label, round) questions
    to ask next (those whose answer is not known). ``matches[label]``: its ID class names, best first."""
    decided: list[NegRefineDecision] = []
    frontier: list[tuple[str, int]] = []
    for label in labels:
        decision, ask = _decide(label, matches[label], answers)
        if ask is not None:
            frontier.append((label, ask))
        elif decision is not None:
            decided.append(decision)
    return decided, frontier


def _decide(label: str, classes: Sequence[str], answers: Answers) -> tuple[NegRefineDecision | None, int | None]:
    first = answers(label, 0)
    if first is None:
        return None, 0
    if first == "":
        return NegRefineDecision(label, "unanswered", asked=1), None
    if is_yes(first):
        return NegRefineDecision(label, "proper noun", answer=first, asked=1), None
    for k, name in enumerate(classes, start=1):
        if label == name:
            return NegRefineDecision(label, "same", name, asked=k), None
        text = answers(label, k)
        if text is None:
            return None, k
        if text == "":
            return NegRefineDecision(label, "unanswered", name, asked=k + 1), None
        if is_yes(text):
            return NegRefineDecision(label, "subcategory", name, text, asked=k + 1), None
    return NegRefineDecision(label, None, asked=len(classes) + 1), None


@dataclass
class _Plan:
    """One filter run: the cleaned labels, each label's ID classes, the prompts and the run folder."""

    model: str
    labels: list[str]
    matches: dict[str, list[str]]
    proper: PromptTemplate
    sub: PromptTemplate
    identity: dict[str, Any]
    run_dir: Path
    top_n: int
    origin: dict[str, str] = field(default_factory=dict)  # cleaned label -> the vocabulary's label

    def request(self, label: str, round_: int) -> Request:
        if round_ == 0:
            return make_request(self.proper, label, 0, 1, {"label": label}, 1)
        name = self.matches[label][round_ - 1]
        return make_request(self.sub, label, round_, 1, {"label": label, "class_name": name}, 1)

    def run(self, template: PromptTemplate, requests: list[Request]) -> LLMRun:
        rounds = max((q.round for q in requests), default=0) + 1
        return LLMRun(
            "negrefine", self.model, template, requests, self.identity, self.run_dir, [], rounds, reads_text=True
        )

    def answers(self, journal: Journal) -> Answers:
        def known(label: str, round_: int) -> str | None:
            rec = journal.answer(f"{label}/r{round_}", self.request(label, round_).sha256)
            if rec is None:
                return None
            texts = rec.get("labels") or []
            return str(texts[0]) if rec.get("status") == "ok" and texts else ""

        return known


def _plan(
    vlm: VLM,
    vocabulary: Vocabulary,
    model: str,
    id_classes: IdClasses | None,
    top_n: int,
    run_dir: str | os.PathLike[str] | None,
    temperature: float | None,
) -> _Plan:
    model = check_model(model)
    if top_n < 1:
        raise InputError(f"top_n must be an integer >= 1, got {top_n}", param="top_n")
    classes = id_classes if id_classes is not None else imagenet1k()
    origin: dict[str, str] = {}
    for label in vocabulary.labels:
        for cleaned in clean_words([label]):
            origin.setdefault(cleaned, label)
    labels = list(origin)
    if not labels:
        raise InputError("no label of the vocabulary is left after NegRefine's cleaning (vocabulary)")
    names = list(classes.names)
    # bare texts, as NegRefine's _embed_text: one template "{}"
    idx = top_matching_classes(vlm.encode_text(labels, ["{}"]), vlm.encode_text(names, ["{}"]), top_n)
    matches = {lab: [names[j] for j in row] for lab, row in zip(labels, idx.tolist(), strict=True)}
    proper, sub = load_prompt(PROPER_TASK), load_prompt(SUB_TASK)
    identity = {
        "task": "negrefine",
        "model": model,
        "prompt": {PROPER_TASK: proper.sha256, SUB_TASK: sub.sha256},
        "temperature": temperature,
        "response_format": VERBATIM,
    }
    folder = run_folder(run_dir, "negrefine", model, identity)
    return _Plan(model, labels, matches, proper, sub, identity, folder, min(top_n, len(names)), origin)


def _verbatim(settings: LLMSettings | None) -> LLMSettings:
    return dataclasses.replace(settings or LLMSettings(), response_format=VERBATIM)


def estimate_negrefine(
    vlm: VLM,
    vocabulary: Vocabulary,
    *,
    model: str,
    id_classes: IdClasses | None = None,
    top_n: int = TOP_N,
    run_dir: str | os.PathLike[str] | None = None,
    temperature: float | None = TEMPERATURE,
    settings: LLMSettings | None = None,
) -> CostEstimate:
    """The dry run: the questions still to ask at most (every undecided label's remaining questions:
    a Yes ends a label's questions early), their tokens and cost; nothing is sent."""
    plan = _plan(vlm, vocabulary, model, id_classes, top_n, run_dir, temperature)
    with Journal(plan.run_dir, plan.identity, readonly=True) as journal:
        _, frontier = negrefine_decisions(plan.labels, plan.matches, plan.answers(journal))
    todo = [plan.request(lab, r) for lab, k in frontier for r in range(k, len(plan.matches[lab]) + 1)]
    return plan.run(plan.sub, todo).estimate(_verbatim(settings))


def build_negrefine_vocabulary(
    vlm: VLM,
    vocabulary: Vocabulary,
    *,
    model: str,
    id_classes: IdClasses | None = None,
    top_n: int = TOP_N,
    run_dir: str | os.PathLike[str] | None = None,
    temperature: float | None = TEMPERATURE,
    settings: LLMSettings | None = None,
) -> Vocabulary:
    """``vocabulary`` filtered by NegRefine's LLM questions (see the module docstring).

    The result records its source (``negrefine``), the input vocabulary (source, hash, size), the run
    folder, the tokens and cost, and every removed label with its reason, the ID class and the answer
    (``settings["removed"]``). Labels keep the input's order and metadata.

    Parameters
    ----------
    vlm : VLM
        The model that matches each label with its best-matching ID class names (bare texts).
    vocabulary : Vocabulary
        The vocabulary filtered.
    model : str
        The chat model that answers the questions.
    id_classes : IdClasses, optional
        The ID classes (default ImageNet-1k).
    top_n : int, default TOP_N
        The best-matching ID class names asked about for each label (>= 1).
    run_dir : str or PathLike, optional
        The run folder (its journal); default the cache's folder of this task, model and identity.
    temperature : float, optional, default TEMPERATURE
        The sampling temperature of the questions.
    settings : LLMSettings, optional
        The LLM layer's settings (server, batching, ...); the response format is always verbatim.
    """
    plan = _plan(vlm, vocabulary, model, id_classes, top_n, run_dir, temperature)
    s = _verbatim(settings)
    while True:  # stage by stage: the next questions follow from the answers journaled so far
        with Journal(plan.run_dir, plan.identity, readonly=True) as journal:
            decided, frontier = negrefine_decisions(plan.labels, plan.matches, plan.answers(journal))
        if not frontier:
            break
        proper = [plan.request(lab, 0) for lab, r in frontier if r == 0]
        sub = [plan.request(lab, r) for lab, r in frontier if r > 0]
        for template, reqs in ((plan.proper, proper), (plan.sub, sub)):
            if reqs:
                plan.run(template, reqs).execute(s)
    outcome = plan.run(plan.sub, []).execute(s)  # nothing to send: the run's tokens and cost, from the journal
    return _vocabulary(plan, vocabulary, decided, outcome.usage_total, outcome.cost_total_usd)


def _vocabulary(
    plan: _Plan, vocabulary: Vocabulary, decided: list[NegRefineDecision], usage: dict[str, int], cost: float | None
) -> Vocabulary:
    by_label = {d.label: d for d in decided}
    kept = [lab for lab in plan.labels if not by_label[lab].removed]
    if not kept:
        raise InputError("NegRefine's filter removed every label of the vocabulary (vocabulary)")
    removed = [
        {"label": d.label, "reason": d.reason, "id_class": d.id_class, "answer": d.answer} for d in decided if d.removed
    ]
    unanswered = [d.label for d in decided if d.reason == "unanswered"]
    if unanswered:
        log.warning("%d labels had no usable answer and are kept (e.g. %r)", len(unanswered), unanswered[0])
    cleaned = {lab: src for lab, src in plan.origin.items() if lab != src}
    meta = {lab: vocabulary.meta[plan.origin[lab]] for lab in kept if plan.origin[lab] in vocabulary.meta}
    settings = {
        "input": {"source": vocabulary.source, "sha256": vocabulary.sha256, "size": len(vocabulary)},
        "model": plan.model,
        "temperature": plan.identity["temperature"],
        "top_n": plan.top_n,
        "prompts": plan.identity["prompt"],
        "run_dir": str(plan.run_dir),
        "questions": sum(d.asked for d in decided),
        "removed": removed,
        "removed_counts": {
            r: sum(1 for d in removed if d["reason"] == r) for r in ("proper noun", "same", "subcategory")
        },
        "cleaned": cleaned,
        "unanswered": unanswered,
        "usage": usage,
        "cost_usd": cost,
        "paper": "Ansari et al., NegRefine, ICCV 2025",
    }
    return Vocabulary.from_labels(kept, source="negrefine", meta=meta, settings=settings)
