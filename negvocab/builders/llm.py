"""LLM vocabularies: GPT siblings (per class, R rounds, merged) and EOE envisioned outliers.

GPT siblings (paper, section "vocabularies"): for every ImageNet-1k class ask for ``per_class``
visually confusable categories that are not ImageNet-1k classes; repeat for ``rounds`` rounds;
merge per class keeping every unique label with the classes and rounds that proposed it; remove
labels equal to an ImageNet-1k name or WordNet synonym (:class:`negvocab.SynonymFilter`); the
vocabulary is the union over classes with a per-class view (``views[wnid]``). The paper saw 26-138
unique labels per class (mean 73.6) after 10 rounds.

EOE (Cao et al., "Envisioning Outlier Exposure by Large Language Models for Out-of-Distribution
Detection", ICML 2024): ``near`` asks per class for a few visually similar categories from other
domains; ``far`` and ``fine`` ask, for chunks of the label space, for labels far from all of them
or of the same fine-grained type but not in the list.

Every request goes through a run folder with a journal (:mod:`negvocab.llm.journal`): running the
same build again resumes and never pays twice; the vocabulary of the first ``r`` rounds comes from
the journal without new requests (``rounds_used=r``). The run itself (its requests, identity and folder; priced,
sent, merged) is :class:`~negvocab.builders.llm_run.LLMRun`, re-exported here.

How to reach the server and run the requests (endpoint, key, concurrency, Batch API, response
format, timeouts, prices) is one :class:`~negvocab.llm.settings.LLMSettings`, the same for both
builders; what is asked (classes, rounds, labels per request, prompt, temperature) is given to
each builder itself.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from negvocab.builders.llm_classes import (
    ClassesSpec,
    chunks_of,
    label_space_from_record,
    own_label_space,
    select_classes,
    selection_record,
)
from negvocab.builders.llm_identity import base_identity, check_counts, check_model, run_folder
from negvocab.builders.llm_merge import merge_rounds, vocabulary_from_results
from negvocab.builders.llm_run import LLMRun, RunOutcome, last_settings
from negvocab.builders.llm_size import build_to_size
from negvocab.core.deprecation import renamed_kwargs
from negvocab.core.errors import InputError
from negvocab.labels.imagenet import imagenet1k
from negvocab.llm.journal import Journal, identity_hash
from negvocab.llm.prompts import load_prompt
from negvocab.llm.run import make_request
from negvocab.llm.settings import LLMSettings, resolve_settings
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.labels.synonyms import SynonymFilter

__all__ = [
    "EOE_MODES",
    "EoeMode",
    "LLMRun",
    "LLMSettings",
    "RunOutcome",
    "build_eoe_vocabulary",
    "build_gpt_vocabulary",
    "eoe_run",
    "gpt_run",
    "merge_rounds",
    "select_classes",
    "vocabulary_from_journal",
    "vocabulary_from_results",
]

EoeMode = Literal["near", "far", "fine"]
EOE_MODES: tuple[str, ...] = ("near", "far", "fine")


def gpt_run(
    model: str,
    *,
    per_class: int = 20,
    rounds: int = 10,
    classes: ClassesSpec = None,
    run_dir: str | os.PathLike[str] | None = None,
    prompt_path: str | os.PathLike[str] | None = None,
    temperature: float | None = 1.0,
    min_labels: int | None = None,
    id_classes: IdClasses | None = None,
) -> LLMRun:
    """The GPT-sibling run: one request per (class, round), round by round (see the module docstring).

    Parameters
    ----------
    model : str
        Chat model name (OpenAI or any OpenAI-compatible server).
    per_class : int, default 20
        Labels asked per request.
    rounds : int, default 10
        Rounds over all classes.
    classes : int, path or list, optional
        First ``K`` classes of ``id_classes``, a file of wnids/names, or a list (default: all).
    run_dir : path, optional
        Run folder (default: a folder in the cache named after the run's identity).
    prompt_path : path, optional
        Your own prompt template (default: the packaged one of the task).
    temperature : float, optional, default 1.0
        Sampling temperature.
    min_labels : int, optional
        Fewest distinct labels an answer may have before it is retried (default: the labels asked).
    id_classes : IdClasses, optional
        The ID label space ``classes`` selects from (default: ImageNet-1k).
    """
    model = check_model(model)
    check_counts(per_class, rounds, min_labels, temperature)
    own = own_label_space(id_classes)  # a label space other than ImageNet-1k: a prompt that names it
    template = load_prompt("gpt_siblings", prompt_path, variant="labelspace" if own else "")
    chosen = select_classes(classes, id_classes)
    need = per_class if min_labels is None else min_labels
    used = "id_classes" in template.fields  # once per class, not per request
    space = id_classes or imagenet1k()  # a selection of K classes is still ImageNet-1k's label space
    listed = {w: _listed(space, n) for w, n in zip(chosen.wnids, chosen.names, strict=True) if used}
    reqs = [
        make_request(
            template,
            wnid,
            r,
            per_class,
            {"class_name": name, "synonyms": ", ".join(syn) or name, "wnid": wnid, "id_classes": listed.get(wnid)},
            need,
        )
        for r in range(rounds)
        for wnid, name, syn in zip(chosen.wnids, chosen.names, chosen.synonyms, strict=True)
    ]
    identity = base_identity("gpt_siblings", model, template, per_class, temperature, need)
    folder = run_folder(run_dir, "gpt", model, identity)
    return LLMRun(
        "gpt_siblings",
        model,
        template,
        reqs,
        identity,
        folder,
        list(chosen.wnids),
        rounds,
        selection=selection_record(classes, chosen),
        prompt_path=None if prompt_path is None else str(Path(prompt_path).resolve()),
        id_classes=id_classes,
    )


def _listed(space: IdClasses, name: str, most: int = 30) -> str:
    """The label space as a GPT-siblings prompt names it (``{id_classes}``): up to ``most`` of its other
    classes, quoted, and how many it holds."""
    others = [n for n in space.names if n != name]
    more = f", ... ({len(space)} classes in all)" if len(others) > most else ""
    return ", ".join(f'"{n}"' for n in others[:most]) + more


@renamed_kwargs(chunk_size="classes_per_request")
def eoe_run(
    model: str,
    *,
    mode: EoeMode = "near",
    per_request: int | None = None,
    size: int | None = None,
    classes_per_request: int = 100,
    rounds: int = 1,
    classes: ClassesSpec = None,
    run_dir: str | os.PathLike[str] | None = None,
    prompt_path: str | os.PathLike[str] | None = None,
    temperature: float | None = 1.0,
    min_labels: int | None = None,
    id_classes: IdClasses | None = None,
) -> LLMRun:
    """The EOE run: ``near`` one request per class; ``far``/``fine`` one per chunk of ``classes_per_request`` classes.

    ``per_request`` labels are asked per request (default 5 for near, 50 otherwise); for far/fine,
    ``size`` (L, the total wanted) sets ``per_request = ceil(L / chunks)`` instead.

    Parameters
    ----------
    model : str
        Chat model name (OpenAI or any OpenAI-compatible server).
    mode : {"near", "far", "fine"}, default "near"
        EOE's prompt: one request per class (near) or per chunk of classes (far, fine).
    per_request : int, optional
        Labels asked per request (default 5 for near, 50 otherwise).
    size : int, optional
        L, the total wanted (far/fine only; not with ``per_request``).
    classes_per_request : int, default 100
        Classes in each far/fine request.
    rounds : int, default 1
        Rounds over all requests.
    classes : int, path or list, optional
        First ``K`` classes of ``id_classes``, a file of wnids/names, or a list (default: all).
    run_dir : path, optional
        Run folder (default: a folder in the cache named after the run's identity).
    prompt_path : path, optional
        Your own prompt template (default: the packaged one of the task).
    temperature : float, optional, default 1.0
        Sampling temperature.
    min_labels : int, optional
        Fewest distinct labels an answer may have before it is retried (default: the labels asked).
    id_classes : IdClasses, optional
        The ID label space ``classes`` selects from (default: ImageNet-1k).
    """
    model = check_model(model)
    if mode not in EOE_MODES:
        raise InputError(f"unknown EOE mode {mode!r}; choose one of {list(EOE_MODES)}")
    if mode == "near" and size is not None:
        raise InputError("size (L) sets the total of far/fine runs; near asks per_request labels per class")
    if size is not None and per_request is not None:
        raise InputError("give size (L, the total) or per_request, not both")
    if classes_per_request < 1:
        raise InputError(f"classes_per_request must be >= 1, got {classes_per_request}")
    template = load_prompt(f"eoe_{mode}", prompt_path)
    chosen = select_classes(classes, id_classes)
    chunk_map: dict[str, list[str]] = {}
    if mode == "near":
        n = per_request or 5
        values = {
            w: {"class_name": nm, "synonyms": ", ".join(sy) or nm, "wnid": w}
            for w, nm, sy in zip(chosen.wnids, chosen.names, chosen.synonyms, strict=True)
        }
    else:
        spans = chunks_of(len(chosen), classes_per_request)
        if size is not None:
            if size < 1:
                raise InputError(f"size must be >= 1, got {size}")
            n = math.ceil(size / len(spans))
        else:
            n = per_request or 50
        values = {}
        for i, span in enumerate(spans):
            key = f"chunk{i:03d}"
            chunk_map[key] = [chosen.wnids[j] for j in span]
            values[key] = {"class_list": "\n".join(f"- {chosen.names[j]}" for j in span)}
    check_counts(n, rounds, min_labels, temperature)
    need = n if min_labels is None else min_labels
    reqs = [make_request(template, key, r, n, v, need) for r in range(rounds) for key, v in values.items()]
    keys = list(values)
    identity = base_identity(f"eoe_{mode}", model, template, n, temperature, need)
    identity["chunk_size"] = classes_per_request if mode != "near" else None  # the journal key keeps its name (resume)
    folder = run_folder(run_dir, f"eoe-{mode}", model, identity)
    return LLMRun(
        f"eoe_{mode}",
        model,
        template,
        reqs,
        identity,
        folder,
        keys,
        rounds,
        chunk_map,
        selection_record(classes, chosen),
        None if prompt_path is None else str(Path(prompt_path).resolve()),
        id_classes=id_classes,
    )


def vocabulary_from_journal(
    run_dir: str | os.PathLike[str],
    *,
    rounds_used: int | None = None,
    synonym_filter: SynonymFilter | bool | None = None,
    id_classes: IdClasses | None = None,
) -> Vocabulary:
    """The vocabulary of a run folder's journal, without sending anything (e.g. first ``r`` rounds).

    Rebuilds the run from its manifest (same classes, prompt and settings; a label space of its own,
    such as CUB-200's mapped names, as the run kept it unless ``id_classes`` is given) and checks that
    the prompt file still has the journaled hash.

    Parameters
    ----------
    run_dir : str or PathLike
        The run folder, with its journal and manifest.
    rounds_used : int, optional
        Build from the first ``r`` rounds only (default: all).
    synonym_filter : SynonymFilter or bool, optional
        As in :func:`build_gpt_vocabulary`.
    id_classes : IdClasses, optional
        The label space to rebuild the run with (default: the one the run kept).
    """
    journal = Journal.open_existing(run_dir)
    run = _rebuild(run_dir, journal, id_classes)
    results = {q.custom_id: rec for q in run.requests if (rec := journal.answer(q.custom_id, q.sha256))}
    return vocabulary_from_results(run, results, rounds_used=rounds_used, synonym_filter=synonym_filter)


def _rebuild(run_dir: str | os.PathLike[str], journal: Journal, id_classes: IdClasses | None) -> LLMRun:
    ident = journal.identity
    settings = last_settings(journal) or {}
    rounds = settings.get("rounds") or 1
    task = ident["task"]
    if id_classes is None and settings.get("id_classes") is not None:  # the run's own label space (CUB-200, ...)
        id_classes = label_space_from_record(settings["id_classes"], f"{run_dir}: the run's settings")
    common: dict[str, Any] = {
        "run_dir": run_dir,
        "temperature": ident.get("temperature"),
        "min_labels": ident.get("min_labels"),
        "id_classes": id_classes,
        "classes": settings.get("classes"),
        "prompt_path": settings.get("prompt_path"),
    }
    if task == "gpt_siblings":
        run = gpt_run(ident["model"], per_class=ident["n"], rounds=rounds, **common)
    else:
        mode = task.removeprefix("eoe_")
        run = eoe_run(
            ident["model"],
            mode=mode,
            per_request=ident["n"],
            classes_per_request=ident.get("chunk_size") or 100,
            rounds=rounds,
            **common,
        )
    if identity_hash(ident) != run.identity_sha256:
        why = "it was written by an older negvocab" if "rounds" in ident else "its prompt file changed since it ran"
        raise InputError(f"{run_dir}: cannot rebuild the run ({why})")
    return run


# -- public builders ----------------------------------------------------------------------------
def build_gpt_vocabulary(
    model: str,
    *,
    per_class: int = 20,
    rounds: int = 10,
    rounds_used: int | None = None,
    classes: ClassesSpec = None,
    run_dir: str | os.PathLike[str] | None = None,
    prompt_path: str | os.PathLike[str] | None = None,
    temperature: float | None = 1.0,
    min_labels: int | None = None,
    synonym_filter: SynonymFilter | bool | None = None,
    id_classes: IdClasses | None = None,
    settings: LLMSettings | None = None,
    **overrides: object,
) -> Vocabulary:
    """The GPT-sibling vocabulary (paper: 20 per class, 10 rounds); resumable, see the module docstring.

    Parameters
    ----------
    model : str
        Chat model name (OpenAI or any OpenAI-compatible server).
    per_class, rounds : int
        Labels asked per request; rounds over all classes.
    rounds_used : int, optional
        Build from the first ``r`` rounds only; requests of later rounds are not sent, and
        journaled ones are not repeated (the paper's ablation over merged generations).
    classes : int, path or list, optional
        First ``K`` ImageNet-1k classes, a file of wnids/names, or a list (default: all 1000).
    run_dir : path, optional
        Run folder (default: a folder in the cache named after the run's identity).
    prompt_path : path, optional
        Your own prompt template (default: the packaged ``prompts/gpt_siblings.txt``).
    temperature : float, optional
        Sampling temperature; with the model, prompt and ``per_class`` part of the run's identity.
    min_labels : int, optional
        Fewest distinct labels an answer may have before it is retried (default: ``per_class``).
    synonym_filter : SynonymFilter, optional
        Default: against the ID label space, ``id_classes`` (all of ImageNet-1k by default, also when
        ``classes`` selects a few), as ``negvocab build gpt --classes`` filters.
    id_classes : IdClasses, optional
        The ID label space ``classes`` selects from (default: ImageNet-1k).
    settings : LLMSettings, optional
        How to reach the server and run the requests: ``base_url``, ``api_key``, ``concurrency``,
        ``batch`` (the Batch API), ``response_format``, ``request_timeout``, ``retry_failed``,
        ``poll_interval``, ``max_submissions``, ``prices``, ``client_options``, ``on_progress``
        (default ``LLMSettings()``; see :class:`~negvocab.llm.settings.LLMSettings`).
    **overrides
        Any field of :class:`~negvocab.llm.settings.LLMSettings` by name (``base_url=...``,
        ``concurrency=64``); a keyword wins over the same field of ``settings``. Any other keyword
        is an :class:`InputError` that lists the accepted ones.

    Returns
    -------
    Vocabulary
        Source ``gpt``; ``views[wnid]`` is each class's filtered labels; ``meta[label]`` records
        the classes and rounds that proposed it and the prompt hash; the settings hold per-class
        counts, filter removals, failures, tokens and cost, and the provenance: ``endpoints``
        (public URLs), ``served_models`` (as the server named them), ``response_formats``.
    """
    how = resolve_settings(settings, overrides, build_gpt_vocabulary)
    run = gpt_run(
        model,
        per_class=per_class,
        rounds=rounds,
        classes=classes,
        run_dir=run_dir,
        prompt_path=prompt_path,
        temperature=temperature,
        min_labels=min_labels,
        id_classes=id_classes,
    )
    return run.build(how, rounds_used=rounds_used, synonym_filter=synonym_filter)


@renamed_kwargs(chunk_size="classes_per_request")
def build_eoe_vocabulary(
    model: str,
    *,
    mode: EoeMode = "near",
    per_request: int | None = None,
    size: int | None = None,
    classes_per_request: int = 100,
    rounds: int = 1,
    rounds_used: int | None = None,
    classes: ClassesSpec = None,
    run_dir: str | os.PathLike[str] | None = None,
    prompt_path: str | os.PathLike[str] | None = None,
    temperature: float | None = 1.0,
    min_labels: int | None = None,
    synonym_filter: SynonymFilter | bool | None = None,
    id_classes: IdClasses | None = None,
    settings: LLMSettings | None = None,
    **overrides: object,
) -> Vocabulary:
    """The EOE envisioned-outlier vocabulary (``near``, ``far`` or ``fine``); labels lower-cased,
    de-duplicated and synonym-filtered. ``per_request``, ``size`` and ``classes_per_request`` as in
    :func:`eoe_run`; the other parameters, ``settings`` and the keywords that override its fields,
    the run folder, resume and Batch API behaviour as in :func:`build_gpt_vocabulary`.
    ``views[wnid]`` per class for ``near``, ``settings["chunks"]`` lists each chunk's classes for
    ``far``/``fine``. With ``size`` more rounds are asked until the size is reached or the model
    stops producing new labels (:func:`negvocab.builders.llm_size.build_to_size`);
    ``settings["size"]`` states the size reached against the size asked.

    Parameters
    ----------
    model : str
        Chat model name (OpenAI or any OpenAI-compatible server).
    mode : {"near", "far", "fine"}, default "near"
        EOE's prompt: one request per class (near) or per chunk of classes (far, fine).
    per_request : int, optional
        Labels asked per request (default 5 for near, 50 otherwise).
    size : int, optional
        The vocabulary size wanted (far/fine; not with ``per_request``).
    classes_per_request : int, default 100
        Classes in each far/fine request.
    rounds : int, default 1
        Rounds over all requests (more are asked with ``size``, until it is reached).
    rounds_used : int, optional
        Build from the first ``r`` rounds only, as in :func:`build_gpt_vocabulary`.
    classes : int, path or list, optional
        First ``K`` classes of ``id_classes``, a file of wnids/names, or a list (default: all).
    run_dir : path, optional
        Run folder (default: a folder in the cache named after the run's identity).
    prompt_path : path, optional
        Your own prompt template (default: the packaged one of the task).
    temperature : float, optional, default 1.0
        Sampling temperature.
    min_labels : int, optional
        Fewest distinct labels an answer may have before it is retried (default: the labels asked).
    synonym_filter : SynonymFilter or bool, optional
        As in :func:`build_gpt_vocabulary`.
    id_classes : IdClasses, optional
        The ID label space ``classes`` selects from (default: ImageNet-1k).
    settings : LLMSettings, optional
        How to reach the server and run the requests, as in :func:`build_gpt_vocabulary`.
    **overrides
        Any field of :class:`~negvocab.llm.settings.LLMSettings` by name; a keyword wins over the
        same field of ``settings``.
    """
    how = resolve_settings(settings, overrides, build_eoe_vocabulary)

    def make(r: int) -> LLMRun:
        return eoe_run(
            model,
            mode=mode,
            per_request=per_request,
            size=size,
            classes_per_request=classes_per_request,
            rounds=r,
            classes=classes,
            run_dir=run_dir,
            prompt_path=prompt_path,
            temperature=temperature,
            min_labels=min_labels,
            id_classes=id_classes,
        )

    return build_to_size(make, rounds, size, how, rounds_used=rounds_used, synonym_filter=synonym_filter)
