"""Batch API mode: one JSONL batch file, uploaded, run within 24 h at half the synchronous price.

:func:`run_batch` writes the pending requests as batch lines (``custom_id`` = ``"<class>/r<round>"``),
uploads the file, creates the batch, polls it (progress through a callback), downloads the output
and error files, journals every line and submits a new batch holding only the lines that failed,
up to ``max_submissions`` batches per request. Every step is journaled before the next one:

- ``batch_input``: the uploaded file id and its custom ids (before the batch is created);
- ``batch``: the batch id (right after creation);
- ``result`` / ``attempt_failed``: one per line of the output and error files;
- ``batch_done``: the batch's final status.

A re-run after a crash polls the journaled batch instead of creating another, and if the crash
fell between upload and the ``batch`` line, it looks the batch up by its input file before
creating one, so no request is paid for twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from negvocab.core.atomic import write_bytes
from negvocab.core.errors import ResourceError
from negvocab.core.extras import require
from negvocab.llm.client import Answer, BadAnswer, LLMClient, add_usage, read_answer
from negvocab.llm.formats import VERBATIM, messages_for, request_format, snippet
from negvocab.llm.journal import Journal
from negvocab.llm.prompts import PromptTemplate
from negvocab.llm.run import Progress, Request, answered, pending, result_record

__all__ = ["ENDPOINT", "TERMINAL", "batch_line", "held_by", "in_open_batch", "interpret_line", "run_batch"]

log = logging.getLogger(__name__)

TERMINAL = ("completed", "expired", "cancelled", "failed")
ENDPOINT = "/v1/chat/completions"


def batch_line(req: Request, model: str, temperature: float | None, mode: str = "json_schema") -> dict[str, Any]:
    """The Batch API input line of one request, asked in response format ``mode``
    (:mod:`negvocab.llm.formats`; ``auto`` is ``json_schema`` here: the Batch API honours it)."""
    mode = "json_schema" if mode == "auto" else mode
    fmt = request_format(mode)
    body: dict[str, Any] = {
        "model": model,
        "messages": messages_for(mode, req.chat()),
        **({"response_format": fmt} if fmt else {}),
    }
    if temperature is not None:
        body["temperature"] = temperature
    return {"custom_id": req.custom_id, "method": "POST", "url": ENDPOINT, "body": body}


def interpret_line(line: dict[str, Any], req: Request, mode: str = "json_schema") -> tuple[Answer | None, str]:
    """One output/error-file line -> (answer or None for a transport-type failure, error text)."""
    response = line.get("response") or {}
    error = line.get("error")
    status_code = response.get("status_code")
    if error or status_code != 200:
        msg = (error or {}).get("message") if isinstance(error, dict) else None
        return None, f"batch line failed (HTTP {status_code}): {msg or error or 'no response'}"
    body = response.get("body") or {}
    usage: dict[str, int] = {}
    add_usage(usage, body.get("usage"))
    choices = body.get("choices") or []
    message = (choices[0] or {}).get("message") or {} if choices else {}
    try:
        if choices and choices[0].get("finish_reason") == "length" and mode != VERBATIM:
            raise BadAnswer("answer cut off at the token limit", "invalid")
        labels, raw = read_answer(message.get("content"), message.get("refusal"), None, req.n, req.min_labels, mode)
    except BadAnswer as e:
        text = snippet(e.text) if e.text else None  # the caller masks secrets (LLMClient.scrub)
        bad = Answer(
            e.status,
            e.labels,
            usage,
            response.get("request_id"),
            body.get("model"),
            error=str(e),
            mode=mode,
            snippet=text,
            raw_labels=e.raw,
        )
        return bad, str(e)
    return Answer("ok", labels, usage, response.get("request_id"), body.get("model"), mode=mode, raw_labels=raw), ""


def _failures(journal: Journal) -> Counter[str]:
    failed = journal.of_kind("attempt_failed")
    return Counter(
        c for r in failed if "batch_id" in r and isinstance(c := r.get("custom_id"), str)
    )  # batch lines only


#: attempts at a Batch/Files call at least: a batch is polled for hours, and a blip of a few seconds
#: must not end the wait (a chat request's 3 attempts would: 1 + 2 s of backoff)
BATCH_CALL_ATTEMPTS = 6


async def _retrying(client: LLMClient, what: str, factory: Any) -> Any:
    """Call a Batch/Files endpoint, retrying transport errors with backoff (:data:`BATCH_CALL_ATTEMPTS` at least)."""
    t = require("tenacity")
    AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential = (
        t.AsyncRetrying,
        t.retry_if_exception,
        t.stop_after_attempt,
        t.wait_exponential,
    )

    oa = client.sdk

    def transient(e: BaseException) -> bool:
        if isinstance(e, (oa.APIConnectionError, oa.APITimeoutError)):
            return True
        return isinstance(e, oa.APIStatusError) and (e.status_code == 429 or e.status_code >= 500)

    try:
        async for attempt in AsyncRetrying(
            retry=retry_if_exception(transient),
            stop=stop_after_attempt(max(client.transport_attempts, BATCH_CALL_ATTEMPTS)),
            wait=wait_exponential(multiplier=client.wait_base, max=client.wait_max),
            reraise=True,
        ):
            with attempt:
                return await factory()
    except oa.APIStatusError as e:
        raise client.fatal_error(e) from e
    except (oa.APIConnectionError, oa.APITimeoutError) as e:
        raise ResourceError(f"{client.base_url}: cannot {what} ({type(e).__name__}); re-run to resume") from e


async def _find_batch_for_file(client: LLMClient, file_id: str, *, max_scan: int = 2000) -> str | None:
    """The batch created from ``file_id``, if any: newest first, following pages (up to ``max_scan``)."""

    async def scan() -> str | None:
        seen = 0
        async for b in client.client.batches.list(limit=100):
            if b.input_file_id == file_id and b.status not in ("failed",):
                return b.id
            seen += 1
            if seen >= max_scan:
                break
        return None

    return await _retrying(client, "list batches", scan)


async def _submit(client: LLMClient, journal: Journal, todo: Sequence[Request], number: int) -> str:
    lines = [batch_line(r, client.model, client.temperature, client.mode) for r in todo]
    data = b"".join(json.dumps(x, ensure_ascii=False).encode("utf-8") + b"\n" for x in lines)
    name = f"batch-input-{number:03d}.jsonl"
    write_bytes(journal.run_dir / name, data)
    uploaded = await _retrying(
        client,
        "upload the batch file",
        lambda: client.client.files.create(file=(name, data, "application/jsonl"), purpose="batch"),
    )
    journal.append(
        [
            {
                "kind": "batch_input",
                "file_id": uploaded.id,
                "file": name,
                "custom_ids": [r.custom_id for r in todo],
                "request_sha256": {r.custom_id: r.sha256 for r in todo},  # which question each line asks
            }
        ]
    )
    return await _create(client, journal, uploaded.id, [r.custom_id for r in todo])


async def _create(client: LLMClient, journal: Journal, file_id: str, cids: list[str]) -> str:
    batch = await _retrying(
        client,
        "create the batch",
        lambda: client.client.batches.create(
            input_file_id=file_id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={"negvocab_run": journal.identity_sha256[:16]},
        ),
    )
    journal.append([{"kind": "batch", "batch_id": batch.id, "input_file_id": file_id, "custom_ids": cids}])
    log.info("created batch %s with %d requests", batch.id, len(cids))
    return batch.id


def in_open_batch(journal: Journal) -> tuple[str, set[tuple[str, str | None]]] | None:
    """(batch id or uploaded file id, the questions it holds that are still unanswered) of a batch
    that was created or uploaded but never collected; ``None`` when there is none.

    A question is (custom id, request hash); the hash is None in journals that did not record it.
    Those requests are paid for once the batch runs: a synchronous run must not send them again.
    """
    found = _open_batch(journal) or _orphan_input(journal)
    if found is None:
        return None
    file_id = found.get("input_file_id") or found["file_id"]
    inputs = [r for r in journal.of_kind("batch_input") if r["file_id"] == file_id]
    shas = inputs[-1].get("request_sha256", {}) if inputs else {}
    held = set()
    for cid in found["custom_ids"]:
        sha = shas.get(cid)
        if (journal.answer(cid, sha) if sha else journal.results.get(cid)) is None:
            held.add((cid, sha))
    return found.get("batch_id") or found["file_id"], held


def held_by(held: set[tuple[str, str | None]], requests: Iterable[Request]) -> list[Request]:
    """The ``requests`` that a batch's ``held`` questions already ask."""
    return [q for q in requests if (q.custom_id, q.sha256) in held or (q.custom_id, None) in held]


def _open_batch(journal: Journal) -> dict[str, Any] | None:
    done = {r["batch_id"] for r in journal.of_kind("batch_done")}
    for r in reversed(journal.of_kind("batch")):
        if r["batch_id"] not in done:
            return r
    return None


def _orphan_input(journal: Journal) -> dict[str, Any] | None:
    batched = {r["input_file_id"] for r in journal.of_kind("batch")}
    inputs = journal.of_kind("batch_input")
    if inputs and inputs[-1]["file_id"] not in batched:
        return inputs[-1]
    return None


async def _poll(client: LLMClient, batch_id: str, poll_interval: float, on_progress: Progress | None) -> Any:
    while True:
        batch = await _retrying(client, "poll the batch", lambda: client.client.batches.retrieve(batch_id))
        counts = batch.request_counts
        if counts is not None and on_progress is not None:
            on_progress(counts.completed + counts.failed, counts.total)
        if batch.status in TERMINAL:
            return batch
        log.info("batch %s: %s", batch_id, batch.status)
        await asyncio.sleep(poll_interval)


async def _download(client: LLMClient, file_id: str | None) -> list[dict[str, Any]]:
    if not file_id:
        return []
    content = await _retrying(client, "download batch results", lambda: client.client.files.content(file_id))
    out = []
    for i, raw in enumerate(content.text.splitlines()):
        if raw.strip():
            try:
                out.append(json.loads(raw))
            except ValueError:
                log.warning("batch file %s: line %d is not JSON; its request will be resubmitted", file_id, i + 1)
    return out


async def run_batch(
    requests: Sequence[Request],
    client: LLMClient,
    journal: Journal,
    template: PromptTemplate,
    *,
    poll_interval: float = 30.0,
    max_submissions: int = 3,
    on_progress: Progress | None = None,
) -> list[str]:
    """Run ``requests`` through the Batch API (see the module docstring); returns the ids left undone.

    A line that fails (error file, non-200 status, unusable answer) is resubmitted in the next batch
    until it has failed ``max_submissions`` times; then an unusable answer is journaled as a failure
    (``invalid`` / ``short``) and a transport-type failure is left undone for a later run.
    """
    run = _BatchRun(client, journal, {r.custom_id: r for r in requests}, template, max_submissions)
    number = len(journal.of_kind("batch_input"))
    while True:
        open_batch = _open_batch(journal)
        if open_batch is not None:
            await run.collect(open_batch, await _poll(client, open_batch["batch_id"], poll_interval, on_progress))
            continue
        orphan = _orphan_input(journal)
        if orphan is not None:
            await _adopt(client, journal, orphan)
            continue
        fails = _failures(journal)
        left = pending(requests, journal, failed=False)
        todo = [r for r in left if fails[r.custom_id] < max_submissions]
        if not todo:
            return [r.custom_id for r in left if fails[r.custom_id] >= max_submissions]
        number += 1
        await _submit(client, journal, todo, number)


async def _adopt(client: LLMClient, journal: Journal, orphan: dict[str, Any]) -> None:
    """Journal the batch made from an uploaded input file that no batch record names (found at the
    server), or create one from it."""
    found = await _find_batch_for_file(client, orphan["file_id"])
    if found is None:
        await _create(client, journal, orphan["file_id"], orphan["custom_ids"])
        return
    journal.append(
        [{"kind": "batch", "batch_id": found, "input_file_id": orphan["file_id"], "custom_ids": orphan["custom_ids"]}]
    )


@dataclass
class _BatchRun:
    """One :func:`run_batch`'s client, journal, requests (by custom id), template and submission limit."""

    client: LLMClient
    journal: Journal
    by_id: dict[str, Request]
    template: PromptTemplate
    max_submissions: int

    async def collect(self, open_batch: dict[str, Any], batch: Any) -> None:
        """Journal the lines of the open batch, now ended: results, failed attempts (lines that failed
        or never came back) and the batch's end. A batch that failed validation is an error."""
        client, journal, by_id = self.client, self.journal, self.by_id
        batch_id = open_batch["batch_id"]
        if batch.status == "failed":
            errors = "; ".join(
                f"{e.code}: {e.message}" for e in (batch.errors.data if batch.errors and batch.errors.data else [])
            )
            journal.append([{"kind": "batch_done", "batch_id": batch_id, "status": "failed"}])
            raise ResourceError(f"batch {batch_id} failed validation: {errors or 'no details'}")
        lines = await _download(client, batch.output_file_id) + await _download(client, batch.error_file_id)
        records, seen = self.line_records(lines, batch_id)
        for cid in open_batch["custom_ids"]:
            if cid not in seen and cid in by_id and not answered(by_id[cid], journal):
                records.append(
                    {
                        "kind": "attempt_failed",
                        "custom_id": cid,
                        "batch_id": batch_id,
                        "error": f"no result (batch {batch.status})",
                        "usage": {},
                    }
                )
        records.append({"kind": "batch_done", "batch_id": batch_id, "status": batch.status})
        journal.append(records)
        failed = sum(1 for r in records if r["kind"] == "attempt_failed")
        log.info("batch %s %s: %d results, %d failed lines", batch_id, batch.status, len(records) - failed - 1, failed)

    def line_records(self, lines: list[dict[str, Any]], batch_id: str) -> tuple[list[dict[str, Any]], set[str]]:
        """The journal records of a batch's output and error lines (the first line of each unanswered
        request): a result when usable (or on the last submission), else a failed attempt; and the ids seen."""
        client, journal = self.client, self.journal
        fails = _failures(journal)
        records: list[dict[str, Any]] = []
        seen: set[str] = set()
        for line in lines:
            cid = line.get("custom_id")
            if not isinstance(cid, str):
                continue
            req = self.by_id.get(cid)
            if req is None or cid in seen or answered(req, journal):
                continue
            seen.add(cid)
            answer, error = interpret_line(line, req, client.mode)
            error = client.scrub(error)
            if answer is not None and answer.snippet:
                answer.snippet = client.scrub(answer.snippet)
            if answer is not None:  # an item that echoes the key goes; the others stay as the model wrote them
                answer.labels, answer.raw_labels = (
                    client.without_secrets(answer.labels),
                    client.scrub_items(answer.raw_labels),
                )
            final = fails[cid] + 1 >= self.max_submissions
            if answer is not None and (answer.status in ("ok", "refused") or final):
                answer.attempts = fails[cid] + 1
                records.append(
                    result_record(req, answer, self.template, mode="batch", batch_id=batch_id, endpoint=client.base_url)
                )
            else:
                usage = answer.usage if answer is not None else {}
                records.append(
                    {"kind": "attempt_failed", "custom_id": cid, "batch_id": batch_id, "error": error, "usage": usage}
                )
        return records, seen
