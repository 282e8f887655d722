"""A local OpenAI-compatible HTTP server for tests and benchmarks (stdlib only).

It speaks real HTTP on 127.0.0.1 (an ephemeral port) so the official SDK is exercised end to end:

- ``POST /v1/chat/completions``: structured output; the answer is :func:`labels_for` (key, round),
  ``n`` labels derived deterministically from the request's class/chunk key and round. The key
  and round come from the ``X-Client-Request-Id`` header (``negvocab:<run>:<key>/r<round>:<try>``)
  that negvocab sends for tracing; ``n`` from "exactly N" in the prompt.
- ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``;
- ``POST /v1/batches``, ``GET /v1/batches``, ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``:
  a batch answers every line at creation and reports ``in_progress`` on the first poll(s),
  then ``completed`` with an output file and, for failed lines, an error file.

Server kinds (``FakeState.kind``), as real servers behave:

- ``structured`` (default, OpenAI, recent vLLM): honours ``json_schema`` and ``json_object``; without
  a ``response_format`` it answers free text;
- ``free``: ignores ``response_format`` (older llama.cpp / Ollama / vLLM builds, many proxies) and
  answers free text as real models write it (:func:`free_text`: numbered lists, bullets, bold,
  fenced JSON, a preamble and a closing remark);
- ``reject_schema``: HTTP 400 naming ``response_format`` for ``json_schema``, JSON for
  ``json_object``, free text without a format;
- ``garbage``: every answer is text with no list in it; ``no_choices``: every answer has an empty
  ``choices`` list; ``babble``: every answer is short nonsense lines (``babble_lines``), as a small
  model writes them;
- ``llamacpp``, ``llamacpp_small_ctx``, ``llamacpp_broadcast``, ``litellm``, ``litellm_small_ctx``,
  ``litellm_broadcast``, ``litellm_unknown_model``, ``litellm_no_db``: llama-cpp-python's server and a
  LiteLLM proxy in front of it, with their documented error statuses and bodies
  (:mod:`tests.llm.server_bodies`);
- ``llama_server`` (upstream llama.cpp: json_schema honoured; ``500 Context size has been exceeded.`` to
  every request while more than ``slots`` are in flight), ``llama_server_samplers`` (400 ``Failed to
  initialize samplers`` for any grammar), ``llama_server_tiny_ctx``, ``llama_server_too_long``,
  ``llama_server_key``, ``ollama`` (Ollama's ``/v1``: both JSON formats honoured), ``ollama_unknown_model``,
  ``litellm_backend_down``: bodies from the servers' source (:mod:`tests.llm.server_bodies`).

Load (:attr:`FakeState.flaky`, :attr:`FakeState.tpm`): a share of requests fails at random (429 with
``Retry-After``, 500, malformed JSON; seeded), and a tokens-per-``tpm_window`` budget answers 429 with the
wait until it refills, as a rate-limited account does.

Faults on demand, per custom id (``"<key>/r<round>"``), consumed one per attempt:
``429`` (with ``Retry-After``), ``quota`` (429 ``insufficient_quota``), ``500`` (OpenAI's, a new request id
each time), ``500same`` (the same body every time, a deterministic fault), ``html`` (a 200
HTML page), ``error200`` (an error body with status 200), ``drop`` (the connection closed without an
answer), ``malformed`` (content not JSON), ``schema`` (JSON of the wrong shape), ``odd_key`` (one name
short, under an odd key), ``garbage`` (text with no list), ``refusal``, ``short`` (half the labels),
``length`` (cut off), ``slow`` (extra delay); in
batches ``error`` (an error-file line), ``500`` and the content faults. Every chat request and every
batch line is counted per custom id (``chat_counts``, ``batch_counts``), so a test can assert that
nothing was asked twice.
"""

from __future__ import annotations

import argparse
import email.parser
import itertools
import json
import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.llm.server_bodies import openai_500, server_error, upstream_error

_N_RE = re.compile(r"exactly (\d+)")


def labels_for(key: str, round_: int, n: int) -> list[str]:
    """The server's answer for (key, round): ``n`` distinct labels.

    Round r takes indices ``r*n//2 .. r*n//2+n-1`` of the key's pool, so consecutive rounds
    share half their labels; indices 0 and 1 are the same for every key (shared labels across
    classes). Labels come in Title Case (negvocab lower-cases them).
    """
    out = []
    start = round_ * max(1, n // 2)
    for i in range(start, start + n):
        idx = i % (4 * n)
        if idx < 2:
            out.append(f"Common Thing {idx}")
        else:
            out.append(f"{key} Sibling {idx}")
    return out


def expected_merge(keys: list[str], rounds: int, n: int, extra: list[str] | None = None) -> dict[str, list[str]]:
    """Independent recomputation of negvocab's per-key merge of the server's answers (lower case)."""
    out: dict[str, list[str]] = {}
    for key in keys:
        seen: dict[str, None] = {}
        for r in range(rounds):
            for lab in labels_for(key, r, n) + list(extra or []):
                seen.setdefault(lab.lower(), None)
        out[key] = list(seen)
    return out


FREE_FORMS = ("numbered", "bullets", "bold", "fenced", "preamble")
GARBAGE = (
    "I am a large language model and my backend returned an unexpected internal "
    "state; request failed. Contact your administrator for assistance today."
)


def free_text(labels: list[str], form: str) -> str:
    """``labels`` written as a model without structured output writes a list, in ``form``."""
    if form == "numbered":
        return "\n".join(f"{i}. {lab}" for i, lab in enumerate(labels, 1))
    if form == "bullets":
        return "\n".join(f"- {lab}" for lab in labels)
    if form == "bold":
        return "\n".join(f"{i}. **{lab}**" for i, lab in enumerate(labels, 1))
    if form == "fenced":
        return "```json\n" + json.dumps({"labels": labels}, indent=2) + "\n```"
    body = "\n".join(f"{i}) {lab}" for i, lab in enumerate(labels, 1))
    return (
        f"Here are {len(labels)} categories that fit:\n\n{body}\n\nThese names are "
        "all visually similar but lie just outside the class boundary as requested."
    )


class FakeState:
    """Server state shared by the handler threads."""

    def __init__(self, latency: float = 0.0, retry_after: str = "1", batch_polls: int = 1) -> None:
        self.latency = latency
        self.retry_after = retry_after
        self.batch_polls = batch_polls
        self.slow_delay = 0.5
        self.lock = threading.Lock()
        self.faults: dict[str, list[str]] = defaultdict(list)
        self.extra_labels: list[str] = []
        self.chat_counts: Counter[str] = Counter()
        self.chat_log: list[tuple[str, float, int]] = []  # (custom id, time, status)
        self.batch_counts: Counter[str] = Counter()
        self.batch_inputs: list[list[str]] = []
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.auth_headers: set[str] = set()
        #: when set, requests without ``Authorization: Bearer <api_key>`` get a 401, as OpenAI answers
        self.api_key: str | None = None
        #: when set, chat requests must carry ``?key=<query_key>`` (a gateway that takes the key as a query
        #: parameter, as Google's APIs do): without it a 403, with another value a 400, in Google's words
        self.query_key: str | None = None
        #: largest page the batch list returns (a small cap makes the client follow pages)
        self.list_page_cap = 100
        self.ids = itertools.count(1)
        #: the server's kind (see the module docstring): structured, free, reject_schema, garbage, no_choices
        self.kind = "structured"  # see the module docstring
        self.garbage_text = GARBAGE  # every answer of a ``garbage`` server (and of the ``garbage`` fault)
        self.formats: list[str | None] = []  # the response_format type of every chat request
        self.queries: list[str] = []  # the query string of every chat request
        self.paths: list[str] = []  # the path of every chat request
        self.max_tokens: list[int | None] = []  # the max_tokens of every chat request
        self.babble_lines: list[str] = []  # every answer of a ``babble`` server, one line each
        #: recorded answers to questions that are no list (NegRefine's Yes/No): the last user message's
        #: text -> the answer's text; ``answer_default`` for a question not in it (None: the label list)
        self.answers: dict[str, str] = {}
        self.answer_default: str | None = None
        #: answers to questions sent with images: (image data URLs, the message's text) -> the answer's text
        self.image_answer: Callable[[list[str], str], str | None] | None = None
        self.images_seen: list[str] = []  # the image data URLs of every chat request, in order
        self.always_fault: str | None = None  # the fault of every request without a queued one
        self.fixed_round: int | None = None  # answer every round as this one
        self.poll_failures = 0  # the next polls of a batch (GET /v1/batches/{id}) that answer OpenAI's 500
        self.slots = 4  # requests an upstream llama-server holds at once before its shared context is full
        self.in_flight = 0  # chat requests being answered now
        self.max_in_flight = 0  # the most at once
        self.flaky = 0.0  # share of chat requests that fail at random (429 with Retry-After, 500, malformed JSON)
        self.rng = random.Random(0)
        self.tpm: int | None = None  # tokens per tpm_window (a rate-limited account): 429 beyond it
        self.tpm_window = 60.0
        self.spent: list[tuple[float, int]] = []  # (time, tokens) of the answers within the window

    def fault(self, cid: str) -> str | None:
        """The next fault queued for ``cid``, else :attr:`always_fault` (a server broken for every request),
        else one drawn at random with probability :attr:`flaky`."""
        with self.lock:
            queue = self.faults.get(cid)
            if queue:
                return queue.pop(0)
            if self.always_fault is None and self.flaky and self.rng.random() < self.flaky:
                return self.rng.choice(("429", "500", "malformed"))
            return self.always_fault

    def tokens_wait(self, tokens: int) -> float:
        """Seconds until ``tokens`` fit the :attr:`tpm` budget (0: spent now), as a rate-limited account."""
        with self.lock:
            now = time.monotonic()
            self.spent = [(t, k) for t, k in self.spent if t > now - self.tpm_window]
            if self.tpm is None or sum(k for _, k in self.spent) + tokens <= self.tpm:
                self.spent.append((now, tokens))
                return 0.0
            return max(0.001, self.spent[0][0] + self.tpm_window - now)

    def add_faults(self, cid: str, *kinds: str) -> None:
        with self.lock:
            self.faults[cid].extend(kinds)


def _recorded(state: FakeState, body: dict[str, Any]) -> str | None:
    """The recorded answer to the request's last user message, if the test recorded answers; a message
    of content parts (text and ``image_url`` parts, as a vision request sends) is answered by
    ``state.image_answer(image urls, text)`` where the test set one."""
    users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
    prompt = users[-1] if users else ""
    if isinstance(prompt, list):  # OpenAI's content parts
        text = _text_of(prompt)
        urls = [p["image_url"]["url"] for p in prompt if p.get("type") == "image_url"]
        with state.lock:
            state.images_seen.extend(urls)
        if state.image_answer is not None:
            return state.image_answer(urls, text)
        prompt = text
    return state.answers.get(prompt, state.answer_default)


def _completion(
    state: FakeState,
    model: str,
    key: str,
    round_: int,
    n: int,
    fault: str | None,
    fmt: str | None = "json_schema",
    text: str | None = None,
) -> dict[str, Any]:
    if state.fixed_round is not None:  # a model that answers every round alike (stopped producing new labels)
        round_ = state.fixed_round
    labels = labels_for(key, round_, n) + state.extra_labels
    finish = "stop"
    refusal = None
    if fault == "short":
        labels = labels[: max(1, n // 2)]
    content: str | None = json.dumps({"labels": labels})
    free = state.kind == "free" or fmt not in ("json_schema", "json_object")
    if free:  # the form depends on the question, so every form turns up in a run
        content = free_text(labels, FREE_FORMS[sum(map(ord, f"{key}{round_}")) % len(FREE_FORMS)])
    if text is not None:  # a recorded answer to a question that is no list
        content, labels = text, text.split()
    if state.kind == "garbage" or fault == "garbage":
        content = state.garbage_text
    if state.kind == "babble":
        content = "\n".join(state.babble_lines)
    if fault == "malformed":
        content = '{"labels": ["unterminated'
    elif fault == "schema":
        content = json.dumps({"items": labels})
    elif fault == "odd_key":  # one name short, under a key named after a label (a small model's JSON mode)
        content = json.dumps({" yellow cloud": labels[:-1]})
    elif fault == "refusal":
        content, refusal = None, "I can't help with that."
    elif fault == "length":
        content, finish = content[: len(content) // 2], "length"
    rid = next(state.ids)
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content, "refusal": refusal},
        "finish_reason": finish,
        "logprobs": None,
    }
    return {
        "id": f"chatcmpl-{rid}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"{model}-fake",
        "choices": [] if state.kind == "no_choices" else [choice],
        "usage": {
            "prompt_tokens": 50 + n,
            "completion_tokens": 6 * len(labels),
            "total_tokens": 50 + n + 6 * len(labels),
        },
    }


def _key_round(header: str | None, body: dict[str, Any]) -> tuple[str, int]:
    if header:
        parts = header.split(":")
        if len(parts) >= 3 and "/r" in parts[2]:
            key, r = parts[2].rsplit("/r", 1)
            return key, int(r)
    text = json.dumps(body.get("messages", []))
    return f"anon{abs(hash(text)) % 10_000}", 0


def _text_of(content: Any) -> str:
    """A message's text: its content, or the text parts of a list of content parts."""
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


def _n_of(body: dict[str, Any]) -> int:
    for m in body.get("messages", []):
        found = _N_RE.search(_text_of(m.get("content")))
        if found:
            return int(found.group(1))
    return 20


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    # -- plumbing ----------------------------------------------------------------------------------
    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(
        self,
        code: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        ctype: str | None = None,
    ) -> None:
        data = raw if raw is not None else json.dumps(payload).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", ctype or ("application/json" if raw is None else "application/octet-stream"))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_{next(self.server.state.ids)}")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(code, {"error": {"message": message, "type": "fake", "code": code}}, headers)

    # -- routes ------------------------------------------------------------------------------------
    def do_POST(self) -> None:
        state = self.server.state
        state.auth_headers.add(self.headers.get("Authorization", ""))
        body = self._body()
        if not self._authorized():
            return None
        path, _, query = self.path.partition("?")
        if path.endswith("/v1/chat/completions"):  # a gateway may put a key in the path before /v1
            state.queries.append(query)
            state.paths.append(path)
            if state.query_key is not None and not self._query_key_ok(query):
                return None
            return self._chat(json.loads(body))
        if self.path == "/v1/files":
            return self._upload(body)
        if self.path == "/v1/batches":
            return self._create_batch(json.loads(body))
        m = re.fullmatch(r"/v1/batches/([^/]+)/cancel", self.path)
        if m and m.group(1) in state.batches:
            with state.lock:
                b = state.batches[m.group(1)]
                b["status"] = "cancelled"
            return self._send(200, self._batch_view(b))
        self._error(404, f"no route POST {self.path}")

    def _authorized(self) -> bool:
        """False (after a 401 that echoes part of the key, as OpenAI does) for a wrong key."""
        want = self.server.state.api_key
        got = self.headers.get("Authorization", "").removeprefix("Bearer ")
        if want is None or got == want:
            return True
        self._error(401, f"Incorrect API key provided: {got[:3]}***{got[-4:]}. You can find your API key at ...")
        return False

    def _query_key_ok(self, query: str) -> bool:
        """False (after Google's 403 or 400) unless ``query`` carries ``key=<state.query_key>``."""
        from urllib.parse import parse_qs

        got = parse_qs(query).get("key")
        if got == [self.server.state.query_key]:
            return True
        if got is None:
            msg = (
                "Method doesn't allow unregistered callers (callers "
                "without established identity). Please use API Key or "
                "other form of API consumer identity to call this API."
            )
            self._send(403, {"error": {"code": 403, "message": msg, "status": "PERMISSION_DENIED"}})
        else:
            msg = "API key not valid. Please pass a valid API key."
            self._send(
                400,
                {
                    "error": {
                        "code": 400,
                        "message": msg,
                        "status": "INVALID_ARGUMENT",
                        "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}],
                    }
                },
            )
        return False

    def do_GET(self) -> None:
        state = self.server.state
        if not self._authorized():
            return
        m = re.fullmatch(r"/v1/files/([^/]+)(/content)?", self.path)
        if m and m.group(1) in state.files:
            f = state.files[m.group(1)]
            if m.group(2):
                return self._send(200, None, raw=f["data"])
            return self._send(200, f["object"])
        m = re.fullmatch(r"/v1/batches/([^/?]+)", self.path)
        if m and m.group(1) in state.batches:
            with state.lock:
                blip = state.poll_failures > 0
                state.poll_failures -= blip
            if blip:  # a blip while the batch is polled: the next polls answer
                return self._send(*openai_500(f"req_{next(state.ids):032x}"))
            with state.lock:
                b = state.batches[m.group(1)]
                if b["status"] == "in_progress":
                    b["polls"] += 1
                    if b["polls"] > state.batch_polls:
                        b["status"] = "completed"
            return self._send(200, self._batch_view(b))
        if self.path.split("?")[0] == "/v1/batches":  # newest first, pages of ?limit= after ?after=
            from urllib.parse import parse_qs, urlsplit

            query = parse_qs(urlsplit(self.path).query)
            limit = min(int(query.get("limit", ["20"])[0]), state.list_page_cap)
            ids = list(reversed(list(state.batches)))
            start = ids.index(query["after"][0]) + 1 if "after" in query and query["after"][0] in ids else 0
            page = ids[start : start + limit]
            data = [self._batch_view(state.batches[i]) for i in page]
            more = start + limit < len(ids)
            return self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "has_more": more,
                    "first_id": page[0] if page else None,
                    "last_id": page[-1] if page else None,
                },
            )
        self._error(404, f"no route GET {self.path}")

    def _chat(self, body: dict[str, Any]) -> None:
        state = self.server.state
        key, r = _key_round(self.headers.get("X-Client-Request-Id"), body)
        cid = f"{key}/r{r}"
        fault = state.fault(cid)
        with state.lock:
            state.chat_counts[cid] += 1
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
            in_flight = state.in_flight
        self._answer(state, body, key, r, cid, fault, in_flight)

    def _answer(self, state: FakeState, body: dict[str, Any], key: str, r: int, cid: str, fault: str | None,
                in_flight: int) -> None:  # fmt: skip
        delay = state.latency + (state.slow_delay if fault == "slow" else 0.0)
        try:
            if delay:
                time.sleep(delay)
        finally:  # done before the answer is written: a client that has its answer sees the slot free
            with state.lock:
                in_flight = max(in_flight, state.in_flight)  # the most at once while it was processed
                state.in_flight -= 1
        fmt = (body.get("response_format") or {}).get("type")
        if fault not in ("429", "quota", "500", "500same", "drop", "html", "error200"):  # the request was read
            with state.lock:
                state.formats.append(fmt)
                state.max_tokens.append(body.get("max_tokens"))
        err = upstream_error(state.kind, fmt, body.get("model", "?"), in_flight, state.slots)
        if err is not None:
            with state.lock:
                state.chat_log.append((cid, time.monotonic(), err[0]))
            return self._send(*err)
        wait = state.tokens_wait(50 + 6 * _n_of(body)) if state.tpm is not None else 0.0
        if wait:
            with state.lock:
                state.chat_log.append((cid, time.monotonic(), 429))
            return self._error(
                429, "Rate limit reached for tokens per min (TPM)", {"retry-after-ms": f"{wait * 1000:.0f}"}
            )
        code = 429 if fault in ("429", "quota") else 500 if fault in ("500", "500same") else 200
        with state.lock:
            state.chat_log.append((cid, time.monotonic(), code))
        if fault == "quota":  # OpenAI's answer when the account has no credit left
            body = {
                "error": {
                    "message": "You exceeded your current quota, please check your plan.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            }
            return self._send(429, body)
        if code == 429:
            return self._error(429, "rate limited", {"Retry-After": state.retry_after})
        if fault == "drop":  # the connection closed with no answer (a crashed server, a proxy whose upstream died)
            self.close_connection = True
            return None
        if fault == "500same":
            return self._error(500, "internal error")
        if code == 500:
            return self._send(*openai_500(f"req_{next(state.ids):032x}"))
        if fault == "html":  # a proxy's page with status 200
            return self._send(200, None, raw=b"<html><body>Welcome to nginx!</body></html>", ctype="text/html")
        if fault == "error200":  # an error body with status 200
            return self._send(200, {"error": {"message": "upstream failed"}})
        prompt_chars = sum(len(_text_of(m.get("content"))) for m in body.get("messages", []))
        err = server_error(state.kind, fmt, body.get("model", "?"), prompt_chars)
        if err is not None:
            return self._send(*err)
        if state.kind == "reject_schema" and fmt == "json_schema":  # as vLLM / llama.cpp builds without it answer
            return self._error(400, "response_format type 'json_schema' is not supported by this server")
        if fmt == "json_object" and "json" not in json.dumps(body.get("messages", [])).lower():
            return self._error(
                400,
                "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
            )
        self._send(
            200, _completion(state, body.get("model", "?"), key, r, _n_of(body), fault, fmt, _recorded(state, body))
        )

    def _upload(self, body: bytes) -> None:
        state = self.server.state
        ctype = self.headers.get("Content-Type", "")
        msg = email.parser.BytesParser().parsebytes(b"Content-Type: " + ctype.encode() + b"\r\n\r\n" + body)
        data, purpose, name = b"", "", "upload"
        for part in msg.get_payload():
            field = part.get_param("name", header="content-disposition")
            if field == "file":
                data = part.get_payload(decode=True)
                name = part.get_filename() or name
            elif field == "purpose":
                purpose = part.get_payload(decode=True).decode()
        fid = f"file-{next(state.ids)}"
        obj = {
            "id": fid,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": purpose,
            "status": "processed",
        }
        state.files[fid] = {"object": obj, "data": data}
        self._send(200, obj)

    def _new_file(self, lines: list[dict[str, Any]], purpose: str) -> str | None:
        if not lines:
            return None
        state = self.server.state
        data = b"".join(json.dumps(x).encode() + b"\n" for x in lines)
        fid = f"file-{next(state.ids)}"
        state.files[fid] = {
            "object": {
                "id": fid,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": f"{purpose}.jsonl",
                "purpose": purpose,
                "status": "processed",
            },
            "data": data,
        }
        return fid

    def _create_batch(self, req: dict[str, Any]) -> None:
        state = self.server.state
        f = state.files.get(req.get("input_file_id", ""))
        if f is None:
            return self._error(404, "no such input file")
        out, err, cids = [], [], []
        for raw in f["data"].decode().splitlines():
            line = json.loads(raw)
            cid = line["custom_id"]
            cids.append(cid)
            with state.lock:
                state.batch_counts[cid] += 1
            key, r = cid.rsplit("/r", 1)
            fault = state.fault(cid)
            rid = f"req_{next(state.ids)}"
            if fault == "error":
                err.append(
                    {
                        "id": rid,
                        "custom_id": cid,
                        "response": None,
                        "error": {"code": "server_error", "message": "line failed"},
                    }
                )
            elif fault == "500":
                err.append(
                    {
                        "id": rid,
                        "custom_id": cid,
                        "response": {"status_code": 500, "request_id": rid, "body": {"error": {"message": "internal"}}},
                        "error": None,
                    }
                )
            else:
                fmt = (line["body"].get("response_format") or {}).get("type")
                body = _completion(
                    state,
                    line["body"]["model"],
                    key,
                    int(r),
                    _n_of(line["body"]),
                    fault,
                    fmt,
                    _recorded(state, line["body"]),
                )
                out.append(
                    {
                        "id": rid,
                        "custom_id": cid,
                        "response": {"status_code": 200, "request_id": rid, "body": body},
                        "error": None,
                    }
                )
        state.batch_inputs.append(cids)
        bid = f"batch_{next(state.ids)}"
        b = {
            "id": bid,
            "object": "batch",
            "endpoint": req.get("endpoint"),
            "completion_window": req.get("completion_window"),
            "input_file_id": req["input_file_id"],
            "created_at": int(time.time()),
            "status": "in_progress",
            "metadata": req.get("metadata"),
            "polls": 0,
            "n": len(cids),
            "n_failed": len(err),
            "output_file_id": self._new_file(out, "batch_output"),
            "error_file_id": self._new_file(err, "batch_error"),
        }
        state.batches[bid] = b
        self._send(200, self._batch_view(b))

    @staticmethod
    def _batch_view(b: dict[str, Any]) -> dict[str, Any]:
        done = b["status"] == "completed"
        view = {k: v for k, v in b.items() if k not in ("polls", "n", "n_failed", "output_file_id", "error_file_id")}
        view["request_counts"] = {
            "total": b["n"],
            "completed": (b["n"] - b["n_failed"]) if done else 0,
            "failed": b["n_failed"] if done else 0,
        }
        view["output_file_id"] = b["output_file_id"] if done else None
        view["error_file_id"] = b["error_file_id"] if done else None
        return view


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, state: FakeState) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):  # a killed client is expected
            super().handle_error(request, client_address)


class FakeOpenAI:
    """Start with ``with FakeOpenAI(latency=...) as srv:``; ``srv.url`` is the ``/v1`` base URL."""

    def __init__(self, latency: float = 0.0, retry_after: str = "1", batch_polls: int = 1) -> None:
        self.state = FakeState(latency, retry_after, batch_polls)
        self._server = _Server(self.state)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def main() -> None:
    """``python -m tests.llm.fake_openai --latency 0.3 --kind free``: serve until killed; prints the URL."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.0)
    ap.add_argument(
        "--kind",
        default="structured",
        choices=[
            "structured",
            "free",
            "reject_schema",
            "garbage",
            "no_choices",
            "babble",
            "llamacpp",
            "llamacpp_small_ctx",
            "llamacpp_broadcast",
            "litellm",
            "litellm_small_ctx",
            "litellm_broadcast",
            "litellm_unknown_model",
            "litellm_no_db",
            "llama_server",
            "ollama",
        ],
    )
    ap.add_argument("--flaky", type=float, default=0.0, help="share of requests failing at random (429, 500, bad JSON)")
    ap.add_argument("--retry-after", default="1", help="the Retry-After of a 429, in seconds")
    ap.add_argument("--tpm", type=int, default=None, help="tokens per --tpm-window, then 429 (a rate-limited account)")
    ap.add_argument("--tpm-window", type=float, default=60.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with FakeOpenAI(latency=args.latency, retry_after=args.retry_after) as srv:
        srv.state.kind = args.kind
        srv.state.flaky, srv.state.rng = args.flaky, random.Random(args.seed)
        srv.state.tpm, srv.state.tpm_window = args.tpm, args.tpm_window
        print(srv.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
