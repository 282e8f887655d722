"""Response formats: how the answer is asked for and read, and how ``auto`` settles on one.

- ``json_schema``: structured output, the strict JSON schema of
  :class:`~negvocab.llm.client.LabelList`; the answer must be that JSON;
- ``json_object``: JSON mode (``{"type": "json_object"}``), the messages say which JSON to write;
  the answer text is read with :func:`negvocab.labels.clean.parse_label_list`;
- ``text``: no ``response_format`` at all (servers and proxies that reject or ignore it); the
  messages ask for one name a line and the answer is read with ``parse_label_list``;
- ``verbatim``: a question that is no list (NegRefine's Yes/No questions): no ``response_format``,
  the messages sent as the prompt file says, the answer's text kept as the model wrote it (one item,
  uncleaned; the task reads it). Not offered to the label builders (not in :data:`MODES`).

``auto`` (the default) starts with ``json_schema`` and moves down this list once, at the start of a
run, when the server rejects the format with an HTTP 400 that names it, or when its first answers
are not the schema's JSON (it ignores ``response_format``). The mode is not part of a run's
identity: each journaled result records the mode it was asked in, so a run resumes under any mode.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from pydantic import BaseModel, ValidationError

from negvocab.core.errors import InputError
from negvocab.labels.clean import clean_labels, keep_names, raw_items
from negvocab.labels.lexicon import judge_answer
from negvocab.llm.server_errors import FORMAT, classify

__all__ = [
    "BadAnswer",
    "JSON_HINT",
    "LabelList",
    "MODES",
    "NEXT",
    "RESPONSE_FORMAT",
    "TEXT_HINT",
    "VERBATIM",
    "broken_json",
    "check_mode",
    "default_max_tokens",
    "labels_from_message",
    "not_language",
    "likely_fix",
    "messages_for",
    "raw_answer",
    "read_answer",
    "rejects_format",
    "request_format",
    "snippet",
]


class LabelList(BaseModel):
    """The structured answer: a list of label strings."""

    labels: list[str]


#: the ``response_format`` the SDK derives from :class:`LabelList` (a strict JSON schema), spelled
#: out for Batch API request bodies (the tests compare it with the SDK's own)
RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "LabelList",
        "strict": True,
        "schema": {**LabelList.model_json_schema(), "additionalProperties": False},
    },
}

MODES: tuple[str, ...] = ("auto", "json_schema", "json_object", "text")
#: the mode of questions whose answer is read by the task itself, not as a list of labels
VERBATIM = "verbatim"
#: where ``auto`` goes when a mode does not work
NEXT: dict[str, str] = {"json_schema": "json_object", "json_object": "text"}

JSON_HINT = 'Answer with a JSON object of the form {"labels": ["name", "name", ...]} and nothing else.'
TEXT_HINT = "Answer with the names only, one name a line, nothing else."


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`MODES`, else a one-line :class:`InputError`."""
    if mode not in MODES and mode != VERBATIM:
        raise InputError(f"unknown response format {mode!r}; choose one of {', '.join(MODES)}")
    return mode


def request_format(mode: str) -> dict[str, Any] | None:
    """The ``response_format`` request field of ``mode`` (``None``: send none)."""
    if mode == "json_schema":
        return RESPONSE_FORMAT
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def messages_for(mode: str, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """The chat messages as sent in ``mode``: JSON mode needs the word JSON and the shape in the
    messages (OpenAI refuses it otherwise), text mode asks for one name a line."""
    hint = JSON_HINT if mode == "json_object" else TEXT_HINT if mode == "text" else None
    if hint is None or not messages:
        return messages
    last = dict(messages[-1])
    last["content"] = f"{last.get('content') or ''}\n\n{hint}"
    return [*messages[:-1], last]


def rejects_format(status_code: int | None, message: str) -> bool:
    """Whether an HTTP error is the server refusing the ``response_format`` asked for: a 400/422, or a
    500 whose body names it (llama-cpp-python, and LiteLLM in front of it; :mod:`negvocab.llm.server_errors`)."""
    return classify(status_code, message).kind == FORMAT


def snippet(text: str | None, limit: int = 160) -> str:
    """``text`` on one line, cut to ``limit`` characters (``...`` marks a cut); ``""`` for none."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class BadAnswer(Exception):
    """An answer that cannot be used as it is (``status``: invalid, short or refused).

    ``kind`` says why, for the diagnosis of a run whose first answers are all unusable (see
    :func:`likely_fix`); ``text`` is what the server answered (may hold secrets: mask before showing).
    """

    def __init__(
        self,
        message: str,
        status: str,
        labels: list[str] | None = None,
        *,
        kind: str = "invalid",
        text: str | None = None,
        raw: list[str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.labels = labels or []
        self.kind = kind
        self.text = text
        self.raw = raw  # the raw items ``labels`` were cleaned from (a short answer)


def labels_from_message(*args: Any, **kwargs: Any) -> list[str]:
    """Deprecated (one release): ``read_answer(...)[0]``, the cleaned labels of one answer (the one reader
    of an answer returns its raw items too)."""
    warnings.warn("labels_from_message is deprecated: use read_answer(...)[0]", DeprecationWarning, stacklevel=2)
    return read_answer(*args, **kwargs)[0]


def read_answer(
    content: str | None,
    refusal: str | None,
    parsed: LabelList | None,
    n: int,
    min_labels: int,
    mode: str = "json_schema",
) -> tuple[list[str], list[str]]:
    """The cleaned labels of one answer read as ``mode`` asks, and the answer's raw items the labels were
    cleaned from (for the journal: the raw strings stay there, so a vocabulary's provenance can list what
    cleaning changed and dropped). Raises :class:`BadAnswer` when the answer is not usable
    (``kind="not_schema"`` when a ``json_schema`` answer is not the schema's JSON)."""
    if refusal:
        raise BadAnswer(f"refused: {refusal[:200]}", "refused", kind="refused", text=refusal)
    if parsed is None and not (content or "").strip():
        raise BadAnswer("empty answer", "invalid", kind="empty", text=content)
    if mode == VERBATIM:  # the task reads the text itself (e.g. NegRefine's startswith("yes"))
        return [content or ""], [content or ""]
    if parsed is not None:
        raw = list(parsed.labels)
    elif mode == "json_schema":
        try:
            raw = LabelList.model_validate_json(content or "").labels
        except ValidationError as e:
            msg = e.errors()[0].get("msg", "invalid")
            raise BadAnswer(f"answer is not a LabelList: {msg}", "invalid", kind="not_schema", text=content) from e
    else:
        raw = raw_items(content or "")
    labels = clean_labels(raw)  # the one label normaliser (negvocab.labels.clean), glued items split
    if labels:  # every item judged, whatever min_labels says: no flag lets an answer that is no language through
        named, bad, babble = judge_answer(labels)
        if babble:
            raise BadAnswer(
                f"the answer is not language: {len(bad)} of {len(labels)} "
                f"items look like no name or hold no known word (e.g. {bad[0][:40]!r})",
                "invalid",
                kind="not_language",
                text=content,
            )
        labels = named  # a stray nonsense item goes, the answer stays
    if not labels and mode != "json_schema" and parsed is None:
        raise BadAnswer(f"no list of names in the answer ({mode} mode)", "invalid", kind="not_list", text=content)
    if len(labels) < min_labels:
        raise BadAnswer(
            f"{len(labels)} distinct labels, asked for {n}", "short", labels, kind="short", text=content, raw=raw
        )
    return labels, raw


def likely_fix(kind: str, mode: str, requested: str, model: str, got: int = 0) -> str:
    """The fix most likely to help when a run's first answers are all unusable for reason ``kind``."""
    other = "" if mode == "text" else "; or try --response-format text"
    return {
        "no_choices": (
            "the server answered with an empty choices list: check "
            f"that it serves model {model!r} (-m) and the base URL"
        ),
        "not_schema": "--response-format text (the server does not follow the JSON schema)"
        if requested != "auto"
        else "check the model (-m); its answers are no JSON list",
        "not_list": f"check the model (-m) and the prompt (--prompt): its answers hold no list of names{other}",
        "short": f"--min-labels {max(1, got)} (the answers hold fewer names than asked), or ask fewer with -n",
        "cut_off": "ask fewer names (-n), or raise the server's output token limit for this model (--max-tokens)",
        "not_language": "the model writes no language (its items look like no name in any language): use a larger or "
        "instruction-tuned model (-m), or check the server's chat template for it; --min-labels cannot help",
        "refused": "the model refuses this prompt: use another model (-m) or your own --prompt",
        "empty": f"the server sends empty answers: check the model (-m) and the server's log{other}",
    }.get(kind, f"check the model (-m) and the server's log{other}")


def not_language(text: str | None) -> bool:
    """Whether an answer's text is mostly nonsense: most of its items look like no name or are bare
    markup (or it holds letters but no item at all), as a model that runs to its token limit without
    writing language."""
    body = (text or "").strip()
    if not body:
        return False
    items = raw_items(body)
    labels = clean_labels(items)
    if not labels:
        return not any(w.isalpha() and len(w) > 2 for w in body.split()[:50])
    _, nonsense = keep_names(labels)
    # an item with no letter or digit ("}} ]] ));") is dropped by cleaning, yet it is one of the answer's
    # items and no name: counted, so that markup lines cannot make the few word-like fragments a majority
    junk = sum(1 for it in items if it.strip() and not any(c.isalnum() for c in it))
    return 2 * (len(nonsense) + junk) > len(labels) + junk


def broken_json(text: str | None) -> bool:
    """Whether ``text`` starts as a JSON object but does not parse (a truncated or malformed answer)."""
    body = (text or "").strip()
    if not body.startswith("{"):
        return False
    try:
        json.loads(body)
    except ValueError:
        return True
    return False


def raw_answer(completion: Any) -> str:
    """An answer as the server sent it (JSON), for a diagnosis."""
    try:
        return completion.model_dump_json(exclude_none=True)
    except Exception:  # any object the SDK returned
        return repr(completion)


def default_max_tokens(n: int) -> int:
    """The ``max_tokens`` sent with a request for ``n`` labels: room for the list in any format with a
    preamble (16 tokens a name plus 256), so that a model that never stops ends within seconds."""
    return 256 + 16 * max(1, n)
