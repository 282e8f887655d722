"""An LLM vocabulary build as a run: its requests, identity and run folder (:class:`LLMRun`), priced
before anything is sent (:meth:`LLMRun.estimate`), sent through the journal (:meth:`LLMRun.execute`:
synchronously or through the Batch API, resumable, never paying twice) and merged into a vocabulary
(:meth:`LLMRun.build`). :func:`negvocab.builders.llm.gpt_run` and :func:`~negvocab.builders.llm.eoe_run`
make one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.builders.llm_classes import label_space_record
from negvocab.builders.llm_merge import check_rounds_used, vocabulary_from_results
from negvocab.core.errors import InputError, ResourceError
from negvocab.core.provenance import negvocab_version
from negvocab.llm.batch import held_by, in_open_batch, run_batch
from negvocab.llm.client import LLMClient, check_base_url, public_url
from negvocab.llm.cost import CostEstimate, cost_usd, estimate, priced_here
from negvocab.llm.formats import MODES, VERBATIM
from negvocab.llm.journal import MANIFEST, Journal, identity_hash, read_manifest
from negvocab.llm.loop import run_coro
from negvocab.llm.prompts import PromptTemplate
from negvocab.llm.run import RETRYABLE, Request, failed_before, pending, run_sync
from negvocab.llm.settings import LLMSettings, resolve_settings
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.labels.synonyms import SynonymFilter

__all__ = ["LLMRun", "RunOutcome", "last_settings"]

log = logging.getLogger(__name__)


@dataclass
class LLMRun:
    """The requests of one vocabulary build, their identity and their run folder.

    Build one with :func:`gpt_run` or :func:`eoe_run`; :meth:`estimate` prices what is left to do
    (the dry run, nothing is sent), :meth:`execute` sends it and returns the journaled results.

    Parameters
    ----------
    task : str
        The task (``gpt_siblings``, ``eoe_near``, ...).
    model : str
        The chat model.
    template : PromptTemplate
        The prompt.
    requests : list of Request
        Every request of every round.
    identity : dict
        The run's identity (journal key).
    run_dir : Path
        The run folder.
    keys : list of str
        The keys asked about each round (wnids, or chunk names).
    rounds : int
        Rounds over the keys.
    chunks : dict, default {}
        Chunk name -> its classes (EOE far/fine).
    selection : int or list of str, optional
        The class selection as JSON (None: all).
    prompt_path : str, optional
        The prompt file given, if any.
    reads_text : bool, default False
        The task reads each answer's text itself: asked in the ``verbatim`` format only.
    id_classes : IdClasses, optional
        The ID label space asked about and filtered against (None: ImageNet-1k).
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
        s = resolve_settings(settings, overrides, self.execute)
        self._check_settings(s)
        need = self.needed(rounds_used)
        extra: dict[str, Any] = {
            "task": self.task,
            "endpoint": public_url(s.base_url or os.environ.get("OPENAI_BASE_URL")),
            "negvocab": negvocab_version(),
            "run_settings": self._settings(),
        }
        with Journal(self.run_dir, self.identity, extra=extra) as journal:
            if not journal.readonly and last_settings(journal) != self._settings():
                journal.append([{"kind": "run", **self._settings()}])  # what vocabulary_from_journal rebuilds
            before = journal.usage()
            todo = pending(need, journal, retry_failed=s.retry_failed, failed=not s.batch)
            if todo and not s.batch:
                _refuse_if_batch_open(journal, todo)
            undone, http_requests = self._send_todo(journal, todo, len(need), s)
            after = journal.usage()
            by_mode = {m: journal.usage(m) for m in ("sync", "batch")}
            results = {q.custom_id: rec for q in need if (rec := journal.answer(q.custom_id, q.sha256))}
        session = {k: after.get(k, 0) - before.get(k, 0) for k in after}
        price = self._pricer(s, extra["endpoint"])
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

    def _check_settings(self, s: LLMSettings) -> None:
        """Refuse settings that do not suit this run: a response format its answers cannot be read in, a
        bad base URL ($OPENAI_BASE_URL too, before the run folder is made), retrying failures in a batch."""
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
        check_base_url(s.base_url)
        if s.retry_failed and s.batch:
            raise InputError(
                "retrying recorded failures works with the synchronous API: re-run without batch", param="batch"
            )

    def _send_todo(self, journal: Journal, todo: list[Request], n_need: int, s: LLMSettings) -> tuple[list[str], int]:
        """Send ``todo`` (of ``n_need`` requests) through a client made from ``s``: the custom ids left
        undone and the HTTP requests sent. A switch of response format is noted in the manifest."""
        if not todo:
            log.info("%s: all %d requests are in the journal; nothing to send", self.run_dir, n_need)
            return [], 0
        again = failed_before(todo, journal, RETRYABLE)
        log.info(
            "%s: %d of %d requests to send (%s%s)",
            self.run_dir,
            len(todo),
            n_need,
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
        client = LLMClient(self.model, base_url=s.base_url, api_key=s.api_key, concurrency=s.concurrency, **options)
        try:
            undone = run_coro(self._send(client, journal, todo, s))
        finally:
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
        return undone, client.http_requests

    def _pricer(self, s: LLMSettings, endpoint: str | None) -> Callable[[Mapping[str, int], bool], float | None]:
        """Dollars of a usage (sync or batch prices); None where the endpoint is not priced (a local server
        echoing "gpt-4o-mini" costs nothing)."""
        priced = priced_here(endpoint, self.model, s.prices)

        def price(usage: Mapping[str, int], batch: bool) -> float | None:
            if not priced:
                return None
            return cost_usd(
                self.model,
                usage.get("prompt_tokens", 0),
                usage.get("completion_tokens", 0),
                batch=batch,
                prices=s.prices,
            )

        return price

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


def last_settings(journal: Journal) -> dict[str, Any] | None:
    """Classes, rounds and prompt file of the latest session of a run folder (None before any)."""
    runs = journal.of_kind("run")
    if runs:
        return {k: v for k, v in runs[-1].items() if k != "kind"}
    if (journal.run_dir / MANIFEST).exists():
        return read_manifest(journal.run_dir).get("run_settings")
    return None
