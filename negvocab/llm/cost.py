"""Token and cost estimates for a run, before it starts (dry run) and after it ends (real usage).

Prompt tokens are estimated at 4 characters a token plus a few per message (no tokenizer is
needed); answer tokens at ``TOKENS_PER_LABEL`` per asked label plus the JSON frame. Prices are US
dollars per million tokens (input, output) from OpenAI's price list as of 2025, shipped as data
(``negvocab/resources/llm_prices.tsv``); the Batch API costs half. A model not in the table has no
price unless one is given (``--price-in/--price-out``). Reasoning models also bill hidden reasoning
tokens, which no estimate here includes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources

from negvocab.core.errors import InputError
from negvocab.llm.endpoint import is_official
from negvocab.llm.run import Request

__all__ = [
    "ANSWER_FRAME",
    "IMAGE_TOKENS",
    "BATCH_DISCOUNT",
    "CHARS_PER_TOKEN",
    "CostEstimate",
    "MESSAGE_OVERHEAD",
    "PRICES",
    "SNAPSHOT_PRICES",
    "TOKENS_PER_LABEL",
    "cost_usd",
    "estimate",
    "estimate_request_tokens",
    "price_of",
    "priced_here",
]

PRICES_FILE = "resources/llm_prices.tsv"


def _read_prices(text: str, where: str = PRICES_FILE) -> dict[str, dict[str, tuple[float, float]]]:
    """The price table's rows by kind (``alias``, ``snapshot``): model -> (input, output) USD per 1M
    tokens; a malformed row is :class:`InputError` naming the file, the line and what is allowed."""
    table: dict[str, dict[str, tuple[float, float]]] = {"alias": {}, "snapshot": {}}
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        try:
            model, usd_in, usd_out, kind = cells
            price = (float(usd_in), float(usd_out))
        except ValueError:
            raise InputError(f"{where}:{i}: expected model<TAB>input<TAB>output<TAB>kind with prices in USD") from None
        if kind not in table or min(price) < 0:
            raise InputError(f"{where}:{i}: kind must be alias or snapshot and prices >= 0, got {line!r}")
        table[kind][model] = price
    return table


_TABLE = _read_prices(resources.files("negvocab").joinpath(PRICES_FILE).read_text(encoding="utf-8"))
#: model -> (USD per 1M input tokens, USD per 1M output tokens), standard (synchronous) tier
PRICES: dict[str, tuple[float, float]] = _TABLE["alias"]
#: dated snapshots priced unlike their alias (the alias moved on)
SNAPSHOT_PRICES: dict[str, tuple[float, float]] = _TABLE["snapshot"]
#: what may follow a known name and still be the same model: a date or "latest"
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{4}|latest)$")
BATCH_DISCOUNT = 0.5
TOKENS_PER_LABEL = 6
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
#: prompt tokens of one image sent with a request (OpenAI's charge for a low-detail image; a local
#: server's vision encoder may take more or fewer)
IMAGE_TOKENS = 85
ANSWER_FRAME = 12


def price_of(model: str, prices: Mapping[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """(input, output) USD per 1M tokens of ``model``: the exact name, or a known name with a date
    or ``-latest`` after it (``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``); ``None`` otherwise.

    Other suffixes name other models at other prices (``gpt-5-pro``, ``o3-deep-research``): unknown.
    """
    table = {**PRICES, **SNAPSHOT_PRICES, **(prices or {})}
    base = model.split("/")[-1]
    for name in (model, base, _SNAPSHOT.sub("", base)):
        if name in table:
            return table[name]
    return None


def priced_here(endpoint: str | None, model: str, prices: Mapping[str, tuple[float, float]] | None = None) -> bool:
    """Whether a run at ``endpoint`` gets a price: at OpenAI's own endpoint from the table, elsewhere
    (a local server or proxy, which may echo an OpenAI model name) only from ``prices`` (``--price-in/--price-out``)."""
    return is_official(endpoint or "https://api.openai.com/v1") or bool(prices and model in prices)


def cost_usd(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    *,
    batch: bool = False,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> float | None:
    """Dollars for the given tokens (``None`` for a model without a price)."""
    p = price_of(model, prices)
    if p is None:
        return None
    usd = (prompt_tokens * p[0] + completion_tokens * p[1]) / 1e6
    return usd * BATCH_DISCOUNT if batch else usd


def estimate_request_tokens(req: Request) -> tuple[int, int]:
    """(prompt, completion) token estimate of one request."""
    prompt = sum(MESSAGE_OVERHEAD + math.ceil(len(content) / CHARS_PER_TOKEN) for _, content in req.messages)
    prompt += IMAGE_TOKENS * len(req.images)
    return prompt, ANSWER_FRAME + TOKENS_PER_LABEL * req.n


@dataclass(frozen=True)
class CostEstimate:
    """What a run will send: request count, estimated tokens, estimated dollars (or ``None``).

    Parameters
    ----------
    model : str
        The chat model.
    requests : int
        Requests to send.
    already_done : int
        Requests already answered in the journal.
    prompt_tokens : int
        Estimated prompt tokens.
    completion_tokens : int
        Estimated completion tokens.
    usd : float or None
        Estimated dollars; None without a price.
    batch : bool
        Sent through the Batch API.
    held_by_batch : int, default 0
        Requests in an uncollected batch.
    failed_again : int, default 0
        Of ``requests``, those whose earlier answer failed and are asked again.
    failed_kept : int, default 0
        Recorded failures that this mode does not ask again.
    unpriced : str, optional
        Why there is no price, when it is not the model's lack of one.
    """

    model: str
    requests: int
    already_done: int
    prompt_tokens: int
    completion_tokens: int
    usd: float | None
    batch: bool
    held_by_batch: int = 0
    #: of ``requests``, those whose earlier answer failed (no usable list) and are asked again
    failed_again: int = 0
    #: recorded failures that this mode does not ask again (the Batch API; a synchronous run does)
    failed_kept: int = 0
    #: why there is no price, when it is not the model's lack of one
    unpriced: str | None = None

    def summary(self) -> str:
        why = self.unpriced or "no price for this model; pass --price-in/--price-out"
        cost = (
            (f"${self.usd:,.2f}" if self.usd >= 1 else f"${self.usd:.4f}")
            if self.usd is not None
            else f"unknown ({why})"
        )
        mode = "Batch API" if self.batch else "synchronous API"
        held = (
            f"; {self.held_by_batch} of them are in an uncollected batch: re-run with --batch"
            if self.held_by_batch
            else ""
        )
        again = f"{self.failed_again} failed before and asked again, " if self.failed_again else ""
        kept = (
            f", {self.failed_kept} of them failed (a run without --batch asks them again)" if self.failed_kept else ""
        )
        return (
            f"{self.requests} requests to send ({again}{self.already_done} already in the journal{kept}{held}), "
            f"~{self.prompt_tokens:,} prompt + ~{self.completion_tokens:,} completion tokens, "
            f"estimated cost {cost} ({self.model}, {mode})"
        )


def estimate(
    requests: Iterable[Request],
    model: str,
    *,
    batch: bool = False,
    already_done: int = 0,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> CostEstimate:
    """Token and cost estimate of sending ``requests``."""
    n = p_tok = c_tok = 0
    for req in requests:
        p, c = estimate_request_tokens(req)
        n, p_tok, c_tok = n + 1, p_tok + p, c_tok + c
    return CostEstimate(
        model, n, already_done, p_tok, c_tok, cost_usd(model, p_tok, c_tok, batch=batch, prices=prices), batch
    )
