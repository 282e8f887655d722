"""``negvocab build gpt`` and ``negvocab build eoe``: vocabularies proposed by a language model.

Both run through a journaled run folder: running the same command again resumes where it stopped
and never sends a journaled request twice. The endpoint and key come from ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY`` (or ``--base-url`` / ``--api-key-env``); the key is never printed or written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from negvocab.builders.llm import eoe_run, gpt_run
from negvocab.builders.llm_size import build_to_size
from negvocab.builders.registry import get_builder
from negvocab.cli.app import build_app
from negvocab.cli.common_options import OutOpt
from negvocab.cli.labelspace import LabelSpace, llm_label_space, say_mapping
from negvocab.cli.options import HintOpt, MapClassesOpt, OverwriteOpt, option_group
from negvocab.cli.outputs import check_output, messages_to_stderr, writing
from negvocab.core.errors import InputError, ResourceError
from negvocab.labels.synonyms import SynonymFilter
from negvocab.llm.settings import LLMSettings

__all__ = [
    "BaseUrlOpt",
    "BatchOpt",
    "ClassesOpt",
    "ConcurrencyOpt",
    "DryRunOpt",
    "KeyEnvOpt",
    "LLMOptions",
    "MinLabelsOpt",
    "ModelOpt",
    "OutOpt",
    "PollOpt",
    "PriceInOpt",
    "PriceOutOpt",
    "PromptOpt",
    "RequestTimeoutOpt",
    "ResponseFormatOpt",
    "RetryFailedOpt",
    "RetryWaitOpt",
    "RoundsOpt",
    "RoundsUsedOpt",
    "RunDirOpt",
    "TemperatureOpt",
    "build_eoe",
    "build_gpt",
]

ModelOpt = Annotated[
    str,
    typer.Option("--model", "-m", help="Chat model name, e.g. gpt-4o-mini (or the name a vLLM/Ollama server knows)."),
]
RoundsOpt = Annotated[int, typer.Option("--rounds", min=1, help="Rounds of requests over all classes (or chunks).")]
ClassesOpt = Annotated[
    str | None,
    typer.Option(
        "--classes",
        help=(
            "First K ImageNet-1k classes (a number), a file of ImageNet-1k wnids or names (a subset), or a label "
            "space of its own: a file of other class names, a benchmark's name or a shipped list (cifar100), "
            "asked about and filtered against. Default: all 1000."
        ),
    ),
]
RunDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--run-dir",
        help="Run folder (journal + manifest). Default: a folder in the negvocab cache named after the run.",
    ),
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", "-j", min=1, help="Requests in flight at most.")]
BatchOpt = Annotated[
    bool,
    typer.Option("--batch", help="Use the Batch API (24 h window, half price); resumable like the synchronous mode."),
]
RetryFailedOpt = Annotated[
    bool,
    typer.Option(
        "--retry-failed",
        help=(
            "Also ask again the requests recorded as short (refused and "
            "invalid ones are asked again by every run without --batch)."
        ),
    ),
]
ResponseFormatOpt = Annotated[
    str,
    typer.Option(
        "--response-format",
        help=(
            "auto (structured output where the server honours it, "
            "else JSON mode, else free text; settled once per run), "
            "json_schema, json_object or text (for servers and proxies without structured output)."
        ),
        metavar="auto|json_schema|json_object|text",
    ),
]
RequestTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--request-timeout",
        min=0.001,
        help="Total seconds one request may take, retries included; a server that hangs or drips bytes is given up on.",
        metavar="SECONDS",
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the request count, estimated tokens and cost; send nothing.")
]
BaseUrlOpt = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (default: $OPENAI_BASE_URL, else OpenAI).",
    ),
]
KeyEnvOpt = Annotated[
    str, typer.Option("--api-key-env", help="Name of the environment variable that holds the API key.")
]
RoundsUsedOpt = Annotated[
    int | None,
    typer.Option(
        "--max-rounds-used",
        min=1,
        help="Build from the first r rounds only (from the journal; later rounds are not requested).",
    ),
]
PromptOpt = Annotated[
    Path | None,
    typer.Option("--prompt", help="Your own prompt template file (same placeholders as the packaged one in prompts/)."),
]
TemperatureOpt = Annotated[
    float, typer.Option("--temperature", min=0.0, help="Sampling temperature (part of the run's identity).")
]
MinLabelsOpt = Annotated[
    int | None,
    typer.Option(
        "--min-labels",
        min=1,
        help="Fewest distinct labels an answer may have before it is retried (default: the number asked).",
    ),
]
RetryWaitOpt = Annotated[
    float,
    typer.Option(
        "--retry-wait",
        min=0.0,
        help="Base of the exponential backoff between retries, seconds (a request whose retries run out is "
        "deferred and asked again later in the run, waiting this x 2^(attempts + k), at most 60 s).",
    ),
]
PollOpt = Annotated[float, typer.Option("--poll-interval", min=0.0, help="Seconds between Batch API status checks.")]
PriceInOpt = Annotated[
    float | None,
    typer.Option("--price-in", min=0.0, help="USD per 1M prompt tokens, for a model not in the price table."),
]
PriceOutOpt = Annotated[
    float | None,
    typer.Option("--price-out", min=0.0, help="USD per 1M completion tokens, for a model not in the price table."),
]
MaxTokensOpt = Annotated[
    int | None,
    typer.Option(
        "--max-tokens",
        min=1,
        help="max_tokens of each request (default: sized from the labels asked; none at OpenAI's own endpoint).",
    ),
]


@dataclass(frozen=True)
class LLMOptions:
    """The options ``build gpt`` and ``build eoe`` share after their own (a group of
    :func:`~negvocab.cli.options.option_group`): the label space, the run folder, the question's
    settings and how the requests are sent."""

    classes: ClassesOpt = None
    map_classes: MapClassesOpt = True
    hint: HintOpt = None
    run_dir: RunDirOpt = None
    concurrency: ConcurrencyOpt = 16
    batch: BatchOpt = False
    dry_run: DryRunOpt = False
    retry_failed: RetryFailedOpt = False
    base_url: BaseUrlOpt = None
    api_key_env: KeyEnvOpt = "OPENAI_API_KEY"
    max_rounds_used: RoundsUsedOpt = None
    prompt: PromptOpt = None
    temperature: TemperatureOpt = 1.0
    min_labels: MinLabelsOpt = None
    retry_wait: RetryWaitOpt = 1.0
    poll_interval: PollOpt = 30.0
    price_in: PriceInOpt = None
    price_out: PriceOutOpt = None
    response_format: ResponseFormatOpt = "auto"
    request_timeout: RequestTimeoutOpt = 300.0
    max_tokens: MaxTokensOpt = None

    def run_options(self, space: LabelSpace | None) -> dict[str, Any]:
        """What the run is asked with (:func:`~negvocab.builders.llm.gpt_run`, ``eoe_run``) besides the
        command's own: the classes (``space``: a label space of its own), run folder and prompt settings."""
        return {
            "classes": self.classes if space is None else None,
            "id_classes": None if space is None else space.classes,
            "run_dir": self.run_dir,
            "prompt_path": self.prompt,
            "temperature": self.temperature,
            "min_labels": self.min_labels,
        }

    def settings(self, model: str) -> LLMSettings:
        """How the requests to ``model`` are sent."""
        return LLMSettings(
            prices=_prices(model, self.price_in, self.price_out),  # its error before a missing key's, as before
            base_url=None if self.dry_run else self.base_url,  # a dry run sends nothing: no endpoint, no key
            api_key=None if self.dry_run else _api_key(self.api_key_env),
            concurrency=self.concurrency,
            batch=self.batch,
            retry_failed=self.retry_failed,
            client_options={
                "wait_base": self.retry_wait,
                "key_name": self.api_key_env,
                **({"max_tokens": self.max_tokens} if self.max_tokens is not None else {}),
            },
            poll_interval=self.poll_interval,
            response_format=self.response_format,
            request_timeout=self.request_timeout,
        )


def _prices(model: str, price_in: float | None, price_out: float | None) -> dict[str, tuple[float, float]] | None:
    if price_in is None and price_out is None:
        return None
    if price_in is None or price_out is None:
        raise InputError("give both --price-in and --price-out")
    return {model: (price_in, price_out)}


def _progress(batch: bool) -> Any:
    from tqdm.auto import tqdm

    bar: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if "bar" not in bar:
            bar["bar"] = tqdm(total=total, desc="batch" if batch else "requests", unit="req", disable=None, leave=False)
        b = bar["bar"]
        b.total = total
        b.n = done
        b.refresh()

    update.close = lambda: bar["bar"].close() if "bar" in bar else None  # type: ignore[attr-defined]
    return update


def _api_key(env: str) -> str:
    """The key in ``$env``; a missing one is named by the variable the user chose."""
    key = (os.environ.get(env) or "").strip()
    if not key:
        raise ResourceError(f"no API key: set {env} (any non-empty string for a local server without keys)")
    return key


def _report(vocab: Any, out: Path, what: str) -> None:
    s = vocab.settings
    u, k = s["unique_per_key_stats"], s["kept_per_key_stats"]
    unit = "class" if s["task"] in ("gpt_siblings", "eoe_near") else "chunk"
    typer.echo(
        f"{what}: {len(vocab)} labels from {s['keys']} {unit}{'es' if unit == 'class' else 's'} "
        f"x {s['rounds_used']} of {s['rounds']} rounds -> {out}"
    )
    typer.echo(
        f"unique per {unit}: min {u['min']}, mean {u['mean']}, max {u['max']}; "
        f"after the synonym filter: min {k['min']}, mean {k['mean']}, max {k['max']}"
    )
    sf = s["synonym_filter"]
    examples = ", ".join(list(sf.get("removed") or {})[:5])
    typer.echo(
        f"synonym filter removed {sf['removed_count']} of "
        f"{s['unique_labels']} unique labels as {s.get('id_classes', 'ImageNet-1k')} names/synonyms"
        + (f" (e.g. {examples})" if examples else "")
    )
    names = s.get("names")
    if names:  # partial answers are answers: kept and counted
        typer.echo(f"names in the answers: {names['got']} of {names['asked']} asked")
    failures = s.get("failures") or {}
    if failures:
        again = " (the next run asks the refused and invalid ones again" + (
            ", --retry-failed the short ones too)" if "short" in failures else ")"
        )
        typer.echo(
            "failed requests (recorded in the journal): "
            + ", ".join(f"{st} {len(ids)}" for st, ids in failures.items())
            + again
        )
    formats = s.get("response_formats") or {}
    if formats:
        typer.echo(
            f"answers from {', '.join(s.get('endpoints') or ['?'])} "
            f"({', '.join(s.get('served_models') or [s['model']])}), "
            "response format " + ", ".join(f"{m} {c}" for m, c in formats.items())
        )
    usage, sess = s.get("usage") or {}, s.get("session") or {}
    cost = s.get("cost_usd")
    scost = sess.get("cost_usd")
    fmt = lambda c: f"${c:,.4f}" if c is not None else "unknown (no price for this model or server)"  # noqa: E731
    su = sess.get("usage") or {}
    typer.echo(
        f"tokens: {usage.get('prompt_tokens', 0):,} prompt + "
        f"{usage.get('completion_tokens', 0):,} completion in the run, cost {fmt(cost)}; "
        f"this session: {sess.get('sent', 0)} requests answered "
        f"({sess.get('http_requests', 0)} HTTP requests, retries included), "
        f"{su.get('prompt_tokens', 0):,} + {su.get('completion_tokens', 0):,} tokens, {fmt(scost)}"
    )
    size = s.get("size")
    if size:
        typer.echo(
            f"size: {size['reached']} labels of the {size['asked']} asked (--size)"
            + ("" if size["reached"] >= size["asked"] else f"; {size['why']}")
        )
    typer.echo(f"run folder: {s['run_dir']}")


def _run(
    run: Any,
    llm: LLMOptions,
    model: str,
    *,
    out: Path,
    what: str,
    overwrite: bool = False,
    grow: tuple[Any, int, int] | None = None,
    space: LabelSpace | None = None,
) -> None:
    """Estimate (dry run) or build and save; ``grow`` = (make_run, rounds, size): rounds are added until
    the size is reached (:func:`negvocab.builders.llm_size.build_to_size`); ``space``: the label space
    of its own that ``--classes`` named (its synonym filter; its mapping said once every input is checked)."""
    settings, rounds_used, inputs = llm.settings(model), llm.max_rounds_used, [llm.classes, llm.prompt]
    filt = SynonymFilter(space.classes) if space is not None else None
    if llm.dry_run:
        say_mapping(space.summary if space is not None else "")
        typer.echo(run.estimate(settings, rounds_used=rounds_used).summary())
        typer.echo(f"run folder: {run.run_dir} (nothing sent, nothing written)")
        return
    # before any request is sent; never over the command's inputs or its run folder's files
    if out.resolve().parent == run.run_dir.resolve():
        raise InputError(f"cannot write {out}: it is in the run folder {run.run_dir}; choose another output file")
    check_output(out, inputs=[Path(x) for x in inputs if x is not None and Path(str(x)).is_file()], overwrite=overwrite)
    say_mapping(space.summary if space is not None else "")
    progress = _progress(settings.batch)
    try:
        if grow is not None:
            vocab = build_to_size(
                grow[0],
                grow[1],
                grow[2],
                replace(settings, on_progress=progress),
                rounds_used=rounds_used,
                synonym_filter=filt,
            )
        else:
            vocab = run.build(settings, rounds_used=rounds_used, on_progress=progress, synonym_filter=filt)
    finally:
        progress.close()
    if space is not None:  # only then: a vocabulary of ImageNet-1k classes records what it did before
        vocab.settings.update(space.settings())
    with writing(out):
        vocab.save(out)
    with messages_to_stderr(out):
        _report(vocab, out, what)


@build_app.command("gpt", help=get_builder("gpt").summary)
@option_group("llm", LLMOptions)
def build_gpt(
    *,
    model: ModelOpt,
    output: OutOpt,
    overwrite: OverwriteOpt = False,
    per_class: Annotated[int, typer.Option("--per-class", "-n", min=1, help="Labels asked per class and round.")] = 20,
    rounds: RoundsOpt = 10,
    llm: LLMOptions,
) -> None:
    """GPT siblings: per class, N visually confusable non-ImageNet categories, R rounds, merged and synonym-filtered."""
    space = llm_label_space(llm.classes, llm.map_classes, llm.hint)
    run = gpt_run(model, per_class=per_class, rounds=rounds, **llm.run_options(space))
    _run(run, llm, model, out=output, overwrite=overwrite, what="gpt vocabulary", space=space)


@build_app.command("eoe", help=get_builder("eoe").summary)
@option_group("llm", LLMOptions)
def build_eoe(
    *,
    model: ModelOpt,
    output: OutOpt,
    overwrite: OverwriteOpt = False,
    mode: Annotated[str, typer.Option("--mode", help="near (per class), far or fine (per chunk of classes).")] = "near",
    per_request: Annotated[
        int | None,
        typer.Option(
            "--per-request",
            "--per-class",
            "-n",
            min=1,
            help="Labels asked per request (default 5 for near, 50 for far/fine).",
        ),
    ] = None,
    size: Annotated[
        int | None, typer.Option("--size", "-L", min=1, help="far/fine: total labels L wanted, spread over the chunks.")
    ] = None,
    classes_per_request: Annotated[
        int,
        typer.Option(
            "--classes-per-request",
            "--chunk-size",
            min=1,
            help="far/fine: classes listed per request (--chunk-size: old name).",
        ),
    ] = 100,
    rounds: RoundsOpt = 1,
    llm: LLMOptions,
) -> None:
    """EOE envisioned outliers (near, far or fine), lower-cased, de-duplicated and synonym-filtered."""
    space = llm_label_space(llm.classes, llm.map_classes, llm.hint)
    asked: dict[str, Any] = {"mode": mode, "per_request": per_request, "size": size}  # eoe_run checks the mode
    asked |= {"classes_per_request": classes_per_request, **llm.run_options(space)}

    def make(r: int) -> Any:
        return eoe_run(model, rounds=r, **asked)

    grow = (make, rounds, size) if size is not None else None
    _run(
        make(rounds), llm, model, out=output, overwrite=overwrite, what=f"eoe-{mode} vocabulary", grow=grow, space=space
    )
