"""An EOE far/fine vocabulary of the size asked (``size``, L): more rounds until it is reached.

The model may answer far fewer distinct labels than asked (repeats across chunks, short lists, the
synonym filter), so one pass over the chunks can give 9 labels for L = 100. :func:`build_to_size`
asks further rounds of the same chunks (new requests in the same run folder; nothing is asked
twice) until the vocabulary reaches L, a round brings no new label (the model stopped producing
new ones), or :data:`MAX_TOP_UP_ROUNDS` rounds were added. The vocabulary's
``settings["size"]`` and the log state the size reached against the size asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from negvocab.llm.settings import LLMSettings
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.labels.synonyms import SynonymFilter

__all__ = ["MAX_TOP_UP_ROUNDS", "build_to_size"]

log = logging.getLogger(__name__)

#: rounds added at most to reach the size asked
MAX_TOP_UP_ROUNDS = 4


def build_to_size(
    make_run: Callable[[int], Any],
    rounds: int,
    size: int | None,
    settings: LLMSettings,
    *,
    rounds_used: int | None,
    synonym_filter: SynonymFilter | bool | None,
) -> Vocabulary:
    """The vocabulary of ``make_run(rounds)``; with ``size``, rounds added (at most
    :data:`MAX_TOP_UP_ROUNDS`) while it is smaller than ``size`` and a round brings new labels."""
    vocab = make_run(rounds).build(settings, rounds_used=rounds_used, synonym_filter=synonym_filter)
    if size is None:
        return vocab
    added, why = 0, "reached"
    sessions = [vocab.settings.get("session") or {}]
    if rounds_used is None:
        while len(vocab) < size:
            if added >= MAX_TOP_UP_ROUNDS:
                why = f"{MAX_TOP_UP_ROUNDS} rounds added, the most"
                break
            added += 1
            more = make_run(rounds + added).build(settings, synonym_filter=synonym_filter)
            sessions.append(more.settings.get("session") or {})
            grew = len(more) > len(vocab)
            vocab = more
            if not grew:
                why = "a round added brought no new label (the model stopped producing new ones)"
                break
    else:
        why = "--max-rounds-used given: no rounds added" if len(vocab) < size else "reached"
    if len(sessions) > 1:  # this session is all the builds together
        vocab.settings["session"] = _sum_sessions(sessions)
    vocab.settings["size"] = {"asked": size, "reached": len(vocab), "rounds_added": added, "why": why}
    if len(vocab) < size:
        log.warning("%s: %d labels, %d asked (--size); %s", vocab.settings.get("task", "eoe"), len(vocab), size, why)
    else:
        log.info(
            "%s: %d labels, %d asked (--size)%s",
            vocab.settings.get("task", "eoe"),
            len(vocab),
            size,
            f", {added} rounds added" if added else "",
        )
    return vocab


def _sum_sessions(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``settings["session"]`` of several builds of one command, added up (a cost is unknown if one is)."""
    usage: dict[str, int] = {}
    for sess in sessions:
        for k, v in (sess.get("usage") or {}).items():
            usage[k] = usage.get(k, 0) + v
    costs = [sess.get("cost_usd") for sess in sessions]
    return {
        **sessions[-1],
        "sent": sum(sess.get("sent", 0) for sess in sessions),
        "http_requests": sum(sess.get("http_requests", 0) for sess in sessions),
        "usage": usage,
        "cost_usd": None if any(c is None for c in costs) else sum(costs),
    }
