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
the journal without new requests (``rounds_used=r``).

How to reach the server and run the requests (endpoint, key, concurrency, Batch API, response
format, timeouts, prices) is one :class:`~negvocab.llm.settings.LLMSettings`, the same for both
builders; what is asked (classes, rounds, labels per request, prompt, temperature) is given to
each builder itself.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from negvocab.builders.llm_classes import (
    ClassesSpec,
    chunks_of,
    label_space_from_record,
    label_space_record,
    own_label_space,
    select_classes,
    selection_record,
)
from negvocab.builders.llm_identity import base_identity, check_counts, check_model, run_folder
from negvocab.builders.llm_merge import check_rounds_used, merge_rounds, vocabulary_from_results
from negvocab.builders.llm_size import build_to_size
from negvocab.deprecation import renamed_kwargs
from negvocab.errors import InputError, ResourceError
from negvocab.labels.imagenet import imagenet1k
from negvocab.llm.batch import held_by, in_open_batch, run_batch
from negvocab.llm.client import LLMClient, check_base_url, public_url
from negvocab.llm.cost import CostEstimate, cost_usd, estimate, priced_here
from negvocab.llm.formats import MODES, VERBATIM
from negvocab.llm.journal import MANIFEST, Journal, identity_hash, read_manifest
from negvocab.llm.loop import run_coro
from negvocab.llm.prompts import PromptTemplate, load_prompt
from negvocab.llm.run import RETRYABLE, Request, failed_before, make_request, pending, run_sync
from negvocab.llm.settings import LLMSettings, resolve_settings
from negvocab.provenance import negvocab_version
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

log = logging.getLogger(__name__)

EoeMode = Literal["near", "far", "fine"]
EOE_MODES: tuple[str, ...] = ("near", "far", "fine")


# -- a run: requests + identity + folder --------------------------------------------------------
@dataclass
class LLMRun:
    """The requests of one vocabulary build, their identity and their run folder.

    Build one with :func:`gpt_run` or :func:`eoe_run`; :meth:`estimate` prices what is left to do
    (the dry run, nothing is sent), :meth:`execute` sends it and returns the journaled results.
    """

    task: str
    model: str
    template: PromptTemplate
    requests: list[Request]
    identity: dict[str, Any]
    run_dir: Path
    keys: list[str]
    rounds: int
    chunks: dict[str, list[str]] = field(default_factory=dict)
    selection: int | list[str] | None = None  # the class selection as JSON (None: all)
    prompt_path: str | None = None
    #: the task reads each answer's text itself (NegRefine's Yes/No): asked in the ``verbatim`` format only
    reads_text: bool = False
    #: the ID label space asked about and filtered against (None: ImageNet-1k); one of its own is kept in the
    #: settings (:func:`label_space_record`), so that the run rebuilds from its folder
    id_classes: IdClasses | None = None

    @property
    def identity_sha256(self) -> str:
        return identity_hash(self.identity)

    def needed(self, rounds_used: int | None = None) -> list[Request]:
        """The requests of the first ``rounds_used`` rounds (all rounds by default)."""
        r = self.rounds if rounds_used is None else check_rounds_used(rounds_used, self.rounds)
        return [q for q in self.requests if q.round < r]

    def estimate(
        self, settings: LLMSettings | None = None, *, rounds_used: int | None = None, **overrides: object
    ) -> CostEstimate:
        """Requests still to send, tokens and dollars (reads the journal if any; sends nothing).

        Of ``settings`` (see :meth:`execute`) only ``batch``, ``prices`` and ``retry_failed`` count here.
        """
        s = resolve_settings(settings, overrides, self.estimate)
        need = self.needed(rounds_used)
        journal = Journal(self.run_dir, self.identity, readonly=True)
        todo = pending(need, journal, retry_failed=s.retry_failed, failed=not s.batch)
        est = estimate(todo, self.model, batch=s.batch, already_done=len(need) - len(todo), prices=s.prices)
        if not priced_here(public_url(s.base_url or os.environ.get("OPENAI_BASE_URL")), self.model, s.prices):
            est = replace(
                est,
                usd=None,
                unpriced="the server is not OpenAI's own endpoint: no price unless --price-in/--price-out say so",
            )
        est = replace(
            est,
            failed_again=failed_before(todo, journal, RETRYABLE),
            failed_kept=failed_before(need, journal) if s.batch else 0,
        )
        held = in_open_batch(journal)
        return replace(est, held_by_batch=len(held_by(held[1], todo))) if held else est

    def execute(
        self, settings: LLMSettings | None = None, *, rounds_used: int | None = None, **overrides: object
    ) -> RunOutcome:
        """Send what the journal lacks (synchronously, or through the Batch API) and return all results.

        ``settings`` says how (:class:`LLMSettings`, default ``LLMSettings()``); each of its fields may
        also be given as a keyword (``batch=True``), which wins over ``settings``. Requests whose
        recorded answer failed with no usable list (refused, invalid) are asked again (synchronous
        API); ``retry_failed`` also asks again the short ones. The new answer counts when it is better
        (:mod:`negvocab.llm.journal`). With ``response_format="auto"`` a run resumes in the format an
        earlier session settled on.

        Raises :class:`ResourceError` if some requests could not be completed (server errors
        outlasting the retries); everything finished is journaled, so the same call resumes.
        """
        # long: the run in order (settings, sync or batch, journal, outcome and cost)
        s = resolve_settings(settings, overrides, self.execute)
        if (s.response_format == VERBATIM) != self.reads_text:
            raise InputError(
                f"response_format {s.response_format!r} does not suit {self.task}: "
                + (
                    "its answers are read as text (verbatim)"
                    if self.reads_text
                    else f"choose one of {', '.join(MODES)}"
                ),
                param="response_format",
            )
        check_base_url(s.base_url)  # $OPENAI_BASE_URL too, before the run folder is made
        if s.retry_failed and s.batch:
            raise InputError(
                "retrying recorded failures works with the synchronous API: re-run without batch", param="batch"
            )
        need = self.needed(rounds_used)
        extra = {
            "task": self.task,
            "endpoint": public_url(s.base_url or os.environ.get("OPENAI_BASE_URL")),
            "negvocab": negvocab_version(),
            "run_settings": self._settings(),
        }
        with Journal(self.run_dir, self.identity, extra=extra) as journal:
            if not journal.readonly and _last_settings(journal) != self._settings():
                journal.append([{"kind": "run", **self._settings()}])  # what vocabulary_from_journal rebuilds
            before = journal.usage()
            todo = pending(need, journal, retry_failed=s.retry_failed, failed=not s.batch)
            if todo and not s.batch:
                _refuse_if_batch_open(journal, todo)
            undone: list[str] = []
            http_requests = 0
            if todo:
                again = failed_before(todo, journal, RETRYABLE)
                log.info(
                    "%s: %d of %d requests to send (%s%s)",
                    self.run_dir,
                    len(todo),
                    len(need),
                    "batch" if s.batch else "sync",
                    f"; {again} failed before and are asked again" if again else "",
                )
                options = {
                    "temperature": self.identity.get("temperature"),
                    "response_format": s.response_format,
                    "start_mode": _settled_format(journal),
                    "content_retry_budget": max(10, len(todo) // 10),  # retries of unusable answers in this run
                    **({"request_timeout": s.request_timeout} if s.request_timeout is not None else {}),
                    **dict(s.client_options or {}),
                }
                client = LLMClient(
                    self.model, base_url=s.base_url, api_key=s.api_key, concurrency=s.concurrency, **options
                )
                try:
                    undone = run_coro(self._send(client, journal, todo, s))
                finally:
                    http_requests = client.http_requests
                    if client.switches and not journal.readonly:
                        journal.update_manifest(
                            {
                                "response_format": {
                                    "requested": client.requested,
                                    "used": client.mode,
                                    "switches": client.switches,
                                }
                            }
                        )
            else:
                log.info("%s: all %d requests are in the journal; nothing to send", self.run_dir, len(need))
            after = journal.usage()
            by_mode = {m: journal.usage(m) for m in ("sync", "batch")}
            results = {q.custom_id: rec for q in need if (rec := journal.answer(q.custom_id, q.sha256))}
        session = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        priced = priced_here(
            extra["endpoint"], self.model, s.prices
        )  # a local server echoing "gpt-4o-mini" costs nothing
        price = lambda u, b: (  # noqa: E731
            cost_usd(self.model, u.get("prompt_tokens", 0), u.get("completion_tokens", 0), batch=b, prices=s.prices)
            if priced
            else None
        )
        outcome = RunOutcome(
            results=results,
            sent=len(todo) - len(undone),
            undone=undone,
            usage_session=session,
            usage_total=after,
            cost_session_usd=price(session, s.batch),
            run_dir=self.run_dir,
            cost_total_usd=_sum_costs(price(by_mode["sync"], False), price(by_mode["batch"], True)),
            http_requests=http_requests,
        )
        if undone:
            raise ResourceError(
                f"{len(undone)} of {len(need)} requests could not be completed (server "
                f"or connection errors outlasted the retries, e.g. {undone[0]}); "
                f"the rest is journaled in {self.run_dir}: re-run the same command to resume"
            )
        return outcome

    def build(
        self,
        settings: LLMSettings | None = None,
        *,
        rounds_used: int | None = None,
        synonym_filter: SynonymFilter | bool | None = None,
        **overrides: object,
    ) -> Vocabulary:
        """:meth:`execute` (resume, send what is missing), then merge and filter into a vocabulary
        whose settings also hold the run's tokens and cost and this session's share. ``settings`` and
        the keywords that override its fields as in :meth:`execute`."""
        s = resolve_settings(settings, overrides, self.build)
        outcome = self.execute(s, rounds_used=rounds_used)
        usage = outcome.usage_total
        extra = {
            "usage": usage,
            "cost_usd": outcome.cost_total_usd,
            "session": {
                "sent": outcome.sent,
                "http_requests": outcome.http_requests,
                "usage": outcome.usage_session,
                "cost_usd": outcome.cost_session_usd,
                "batch": s.batch,
            },
        }
        log.info(
            "%s: %s prompt + %s completion tokens in the run (this session %s requests), cost %s",
            self.run_dir,
            usage.get("prompt_tokens", 0),
            usage.get("completion_tokens", 0),
            outcome.sent,
            "unknown" if extra["cost_usd"] is None else f"${extra['cost_usd']:.4f}",
        )
        vocab = vocabulary_from_results(
            self, outcome.results, rounds_used=rounds_used, synonym_filter=synonym_filter, extra_settings=extra
        )
        names, short = vocab.settings["names"], len(vocab.settings["failures"].get("short", []))
        log.info("%s: the answers held %d of the %d names asked%s", self.run_dir, names["got"], names["asked"],
                 f" ({short} shorter lists than asked, kept)" if short else "")  # fmt: skip
        return vocab

    def _settings(self) -> dict[str, Any]:
        record = label_space_record(self.id_classes)
        space = {} if record is None else {"id_classes": record}
        return {"classes": self.selection, "rounds": self.rounds, "prompt_path": self.prompt_path, **space}

    async def _send(self, client: Any, journal: Journal, todo: list[Request], s: LLMSettings) -> list[str]:
        async with client:
            if s.batch:
                return await run_batch(
                    todo,
                    client,
                    journal,
                    self.template,
                    poll_interval=s.poll_interval,
                    max_submissions=s.max_submissions,
                    on_progress=s.on_progress,
                )
            return await run_sync(todo, client, journal, self.template, on_progress=s.on_progress)


def _settled_format(journal: Journal) -> str | None:
    """The response format an earlier session of the run settled on (``auto`` resumes there)."""
    notes = journal.of_kind("response_format")
    return notes[-1].get("used") if notes else None


def _refuse_if_batch_open(journal: Journal, todo: list[Request]) -> None:
    """A synchronous run would pay again for questions that an uncollected batch holds: refuse."""
    held = in_open_batch(journal)
    overlap = held_by(held[1], todo) if held is not None else []
    if held is not None and overlap:
        raise ResourceError(
            f"{journal.run_dir}: batch {held[0]} holds {len(overlap)} of the requests and was never collected; "
            "re-run with batch=True to collect it (it is paid for), then without batch for anything left",
            param="batch",
        )


@dataclass
class RunOutcome:
    """Results (custom id -> journal record) of the needed requests, and what this session spent."""

    results: dict[str, dict[str, Any]]
    sent: int
    undone: list[str]
    usage_session: dict[str, int]
    usage_total: dict[str, int]
    cost_session_usd: float | None
    run_dir: Path
    cost_total_usd: float | None = None
    #: HTTP requests sent in this session, retries and format switches included (synchronous API)
    http_requests: int = 0


def _sum_costs(*costs: float | None) -> float | None:
    """Sum of costs; ``None`` when the model has no price."""
    return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


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
    """The GPT-sibling run: one request per (class, round), round by round (see the module docstring)."""
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
    """
    journal = Journal.open_existing(run_dir)
    run = _rebuild(run_dir, journal, id_classes)
    results = {q.custom_id: rec for q in run.requests if (rec := journal.answer(q.custom_id, q.sha256))}
    return vocabulary_from_results(run, results, rounds_used=rounds_used, synonym_filter=synonym_filter)


def _last_settings(journal: Journal) -> dict[str, Any] | None:
    """Classes, rounds and prompt file of the latest session of a run folder (None before any)."""
    runs = journal.of_kind("run")
    if runs:
        return {k: v for k, v in runs[-1].items() if k != "kind"}
    if (journal.run_dir / MANIFEST).exists():
        return read_manifest(journal.run_dir).get("run_settings")
    return None


def _rebuild(run_dir: str | os.PathLike[str], journal: Journal, id_classes: IdClasses | None) -> LLMRun:
    ident = journal.identity
    settings = _last_settings(journal) or {}
    rounds = settings.get("rounds") or 1
    task = ident["task"]
    if id_classes is None and settings.get("id_classes") is not None:  # the run's own label space (CUB-200, ...)
        id_classes = label_space_from_record(settings["id_classes"], f"{run_dir}: the run's settings")
    common = {
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
        )  # type: ignore[arg-type]
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
