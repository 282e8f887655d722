"""``negvocab score`` and ``negvocab sweep``.

Each command parses options, builds the image sets and vocabularies, and calls the library
(:mod:`negvocab.evaluation.evaluate`); nothing here computes a score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import typer

from negvocab.builders.authors import authors_score, authors_setting, score_methods
from negvocab.cli.app import app
from negvocab.cli.method_options import check_scoring_options, refuse_unused_params, scoring_options
from negvocab.cli.options import (
    IdClassesOpt,
    ImageOptions,
    ModelOptions,
    OverwriteOpt,
    ReportOpt,
    TemplatesOpt,
    image_sets,
    load_vlm,
    load_vocabs,
    on_command_line,
    option_group,
    path_value,
)
from negvocab.cli.outputs import claim_results_folder, warn_random, write_folder_report, writing
from negvocab.core.errors import InputError
from negvocab.data.benchmarks import OpenedSets
from negvocab.data.images import ImageSet
from negvocab.data.validation import open_validation, validation_splits
from negvocab.evaluation.kinds import caveat_kinds
from negvocab.labels.imagenet import read_id_classes
from negvocab.report.plots import check_plot_formats
from negvocab.report.results import (
    RESULT_FILES,
    SWEEP_FILES,
    accuracy_lines,
    format_table,
    write_results,
    write_sweep,
)
from negvocab.scoring.methods import PARAMS, Method, batch_method, get_method, list_methods, needs_negatives
from negvocab.scoring.stream import STREAM_ORDERS, STREAM_PHASES, check_ratio
from negvocab.vlm.model import VLM
from negvocab.vocab import Vocabulary

__all__ = ["score_cmd", "sweep_cmd"]


def _batch(m: Method) -> bool:
    return m.kind == "batch"


def _scored(m: Method) -> bool:
    """What ``negvocab score`` serves: batch methods and test-time (stream) methods."""
    return m.kind in ("batch", "stream")


def _stream_seeds(text: str) -> list[int]:
    """``--stream-seeds 0,1,2`` as integers >= 0, else one line naming the flag."""
    try:
        seeds = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        seeds = []
    if not seeds or any(x < 0 for x in seeds) or len(set(seeds)) < len(seeds):
        raise InputError(f"--stream-seeds takes distinct integers >= 0 separated by commas, got {text!r}")
    return seeds


def _tune_grid(items: list[str]) -> dict[str, list[Any]]:
    """``--tune-grid NAME=V1,V2`` as parameter -> values, each value read as its parameter's type."""
    grid: dict[str, list[Any]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        spec = PARAMS.get(name.strip())
        if not sep or spec is None or not text.strip():
            known = ", ".join(sorted(PARAMS))
            raise InputError(f"--tune-grid takes NAME=V1,V2,... with a method parameter's name ({known}), got {item!r}")
        values = [v.strip() for v in text.split(",") if v.strip()]
        try:
            grid[spec.name] = [
                spec.kind(v) if spec.kind is not bool else v.lower() in ("1", "true", "yes") for v in values
            ]
        except ValueError:
            raise InputError(
                f"--tune-grid {spec.name}: values must be of type {spec.kind.__name__}, got {text!r}"
            ) from None
    return grid


def _tuning_sets(
    tune_id: Path | None, tune_ood: list[str] | None, image_root: Path | None, allow_outside_root: bool
) -> tuple[Any, dict[str, Any]] | None:
    """The tuning split the options name: ``--tune-id`` with ``--tune-ood`` sets (opened as ``--id``/``--ood``),
    or a benchmark's validation split (``--tune-ood BENCHMARK=ROOT`` alone); None without ``--tune-ood``."""
    if not tune_ood:
        return None
    if tune_id is not None:
        id_set, sets = image_sets(tune_id, tune_ood, None, None, None, image_root, allow_outside_root)
        return id_set, dict(sets)
    name, sep, root = tune_ood[0].partition("=")
    if len(tune_ood) > 1 or not sep or name.strip() not in validation_splits():
        raise InputError(
            "--tune-ood without --tune-id takes one BENCHMARK=ROOT of a benchmark with a validation split "
            f"({', '.join(sorted(validation_splits()))}); else give --tune-id too"
        )
    return open_validation(name.strip(), root)


def _swept(m: Method) -> bool:
    return m.needs_negatives and m.kind == "batch"


@dataclass(frozen=True)
class StreamOptions:
    """The test-time (stream) methods' options of ``negvocab score`` (a group of :func:`option_group`)."""

    panel: ClassVar[str] = "Test-time stream"  # the --help panel of its options

    stream_order: Annotated[
        str,
        typer.Option(
            "--stream-order",
            help="Test-time (stream) methods: the order of each ID + OOD stream (shuffled by --stream-seeds; "
            "id_first / ood_first: one whole part, then the other, each shuffled; given: as read).",
        ),
    ] = "shuffled"
    stream_batch: Annotated[
        int, typer.Option("--stream-batch", min=1, help="Test-time methods: images per stream batch (AdaNeg's 256).")
    ] = 256
    stream_seeds: Annotated[
        str,
        typer.Option(
            "--stream-seeds",
            help="Test-time methods: stream seeds (each seeds a stream's order and ID:OOD mix), e.g. 0,1,2 "
            "(several: the rows report the spread).",
        ),
    ] = "0"
    id_ood_ratio: Annotated[
        float | None,
        typer.Option(
            "--id-ood-ratio",
            help="Test-time methods: ID images per OOD image in each stream (the larger side subsampled, seeded "
            "by the stream seed; default: every image).",
        ),
    ] = None
    stream_phases: Annotated[
        str | None,
        typer.Option(
            "--stream-phases",
            help="Test-time methods: a temporal-shift phase order (ptis, spti, tisp: OpenOOD-VLM's): the OOD "
            "sets Places, Textures, iNaturalist, SUN streamed in that order, the state carried from one to the next.",
        ),
    ] = None

    def settings(self) -> dict[str, Any]:
        """The streams' settings for the library, checked before any model."""
        seeds = _stream_seeds(self.stream_seeds)
        if self.stream_order not in STREAM_ORDERS:
            raise InputError(f"unknown --stream-order {self.stream_order!r}; choose one of {', '.join(STREAM_ORDERS)}")
        if self.id_ood_ratio is not None:
            check_ratio(self.id_ood_ratio)
        if self.stream_phases is not None and self.stream_phases not in STREAM_PHASES:
            raise InputError(
                f"unknown --stream-phases {self.stream_phases!r}; choose one of {', '.join(STREAM_PHASES)}"
            )
        return {
            "stream_batch": self.stream_batch,
            "order": self.stream_order,
            "stream_seed": seeds,
            "id_ood_ratio": self.id_ood_ratio,
            "phases": self.stream_phases,
        }


@dataclass(frozen=True)
class TuningOptions:
    """The tuning split of ``negvocab score`` (OpenOOD's automatic parameter search; a group of
    :func:`option_group`)."""

    panel: ClassVar[str] = "Tuning split"  # the --help panel of its options

    tune_id: Annotated[
        Path | None,
        typer.Option(
            "--tune-id",
            parser=path_value,
            help="Tuning split (OpenOOD's automatic parameter search): ID images, a folder or an image list as "
            "--id, on which the methods with knobs choose their parameters before the test sets are scored; "
            "needs --tune-ood. Never the test images (a shared image is refused).",
        ),
    ] = None
    tune_ood: Annotated[
        list[str] | None,
        typer.Option(
            "--tune-ood",
            help="Tuning split: OOD images, NAME=PATH as --ood (repeatable); or, without --tune-id, one "
            "BENCHMARK=ROOT: the benchmark's validation lists (OpenOOD v1.5's val_*.txt).",
        ),
    ] = None
    tune_grid: Annotated[
        list[str] | None,
        typer.Option(
            "--tune-grid",
            help="NAME=V1,V2,...: the values tuned for a method parameter, e.g. tau=0.005,0.01 (default: each "
            "method's search grid around its value); repeatable.",
        ),
    ] = None
    tune_criterion: Annotated[
        str,
        typer.Option(
            "--tune-criterion",
            help="What tuning optimises: auroc (OpenOOD's), aupr_in, aupr_out (maximised) or fpr (minimised); "
            "several, comma-separated, break ties in turn (fpr,auroc: the lowest FPR, then the highest AUROC).",
        ),
    ] = "auroc"
    tune_on: Annotated[
        str,
        typer.Option(
            "--tune-on",
            help="validation: the split of --tune-id/--tune-ood; test: tune on the test sets themselves (a "
            "flattering upper estimate; only when named here, and every table marks its rows [tuned on test]).",
        ),
    ] = "validation"

    def grid(self, methods: list[str]) -> dict[str, list[Any]]:
        """``--tune-grid`` as parameter -> values, the options checked together (each knob one of ``methods``',
        each value in its declared range) before any image is read or model loaded."""
        from negvocab.evaluation.tuning import check_criterion, check_tuning

        grid = _tune_grid(self.tune_grid or [])
        check_criterion(self.tune_criterion)
        if self.tune_on not in ("validation", "test"):
            raise InputError(f"--tune-on must be validation or test, got {self.tune_on!r}")
        if self.tune_on == "test" and (self.tune_id is not None or self.tune_ood):
            raise InputError("--tune-on test tunes on the test sets: drop --tune-id/--tune-ood (or --tune-on)")
        if (self.tune_id is not None or grid) and not self.tune_ood and self.tune_on != "test":
            raise InputError(
                "a tuning split needs --tune-ood (with --tune-id, or one BENCHMARK=ROOT alone); tuning on the "
                "test sets is refused unless asked for by name (--tune-on test)"
            )
        if self.tune_ood or self.tune_on == "test":
            check_tuning(methods, grid, self.tune_criterion)
        return grid

    def sets(self, images: ImageOptions, test_sets: tuple[Any, dict[str, Any]]) -> tuple[Any, dict[str, Any]] | None:
        """The tuning split's ID set and OOD sets (None without one): the test sets under ``--tune-on test``,
        else the split of ``--tune-ood``, refused where it shares an image with the test sets (before the
        model: the test sets never tune unless asked for by name)."""
        from negvocab.evaluation.tuning import check_disjoint

        if self.tune_on == "test":
            return test_sets
        tune_sets = _tuning_sets(self.tune_id, self.tune_ood, images.image_root, images.allow_outside_root)
        if tune_sets is not None:
            check_disjoint([tune_sets[0], *tune_sets[1].values()], [test_sets[0], *test_sets[1].values()])
        return tune_sets


@app.command("score")
@scoring_options("seed", methods=_scored, evaluation=("convention", "tpr", "n_boot"))  # seed: also the bootstrap's
@option_group("images", ImageOptions)
@option_group("vlm", ModelOptions)
@option_group("streaming", StreamOptions)
@option_group("tuning", TuningOptions)
def score_cmd(
    *,
    images: ImageOptions,
    vocab: Annotated[
        list[Path] | None, typer.Option("--vocab", "-V", help="Vocabulary JSON/TXT; repeat for a comparison table.")
    ] = None,
    method: Annotated[
        list[str] | None,
        typer.Option("--method", help="{methods}; repeatable (default neglabel)."),  # filled from the registry
    ] = None,
    authors: Annotated[
        str | None,
        typer.Option(
            "--authors",
            help=f"The authors' scoring setting of {', '.join(score_methods())} (method, grouping, groups, seed, "
            "templates; docs/methods.md): fills those options, refuses one given with another value, and "
            "records the setting in the rows.",
        ),
    ] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Results folder.")] = Path("results"),
    overwrite: OverwriteOpt = False,
    vlm: ModelOptions,
    templates: TemplatesOpt = "paper8",
    id_classes: IdClassesOpt = None,
    explain: Annotated[
        int, typer.Option("--explain", help="Top negatives / ID classes listed per OOD image (0: none).")
    ] = 5,
    report: ReportOpt = True,
    streaming: StreamOptions,
    tuning: TuningOptions,
    ctx: typer.Context,
    params: dict[str, Any] | None = None,  # the registry options above, from @scoring_options
    metrics: dict[str, Any] | None = None,
) -> None:
    """Score a VLM with one or more vocabularies on an ID and an OOD set; write a results folder.

    Test-time (stream) methods (adaneg, ...) score one stream per OOD set, set by the --stream-* options
    and recorded in every row; their rows are marked test-time. With --tune-id/--tune-ood (or a benchmark's
    validation lists, --tune-ood BENCHMARK=ROOT) the methods with knobs first choose their parameters on that
    split, over each one's search grid or --tune-grid (a test-time method's must be named), by
    --tune-criterion; their rows say so (tuned, tuned_on, tuning_space). --tune-on test tunes on the test
    sets instead, only when named so, and marks the rows [tuned on test]."""
    assert params is not None and metrics is not None  # given by @scoring_options
    fields: dict[str, Any] = {}
    if authors is not None:  # the authors' setting, before anything else is read
        method, templates, fields = _authors(ctx, authors, method, templates, params)
    evaluation = {**metrics, "seed": params["seed"]}  # convention, tpr, n_boot; the seed is the bootstrap's too
    chosen = [get_method(m) for m in (method or ["neglabel"])]  # before any model
    streamed = list(dict.fromkeys(m.name for m in chosen if m.kind == "stream"))
    methods = [batch_method(m.name, "negvocab score").name for m in chosen if m.kind != "stream"]
    stream = streaming.settings()
    claim_results_folder(output, RESULT_FILES, overwrite=overwrite)  # held until the command ends
    check_scoring_options(params, **evaluation)
    refuse_unused_params(params, list(dict.fromkeys(m.name for m in chosen)), own=("seed",))  # seed: the bootstrap's
    if explain < 0:
        raise InputError(f"--explain must be >= 0, got {explain}")
    need_vocab = [m for m in [*methods, *streamed] if needs_negatives(m)]
    if need_vocab and not vocab:
        without = " / ".join(list_methods(needs_negatives=False, kind="batch"))
        raise InputError(
            f"--method {', '.join(need_vocab)} needs a vocabulary: pass --vocab FILE (or use --method {without})"
        )
    grid = tuning.grid([*methods, *streamed])
    id_set, ood_set = images.open()
    tune_sets = tuning.sets(images, (id_set, dict(ood_set)))
    vocabs = load_vocabs(list(vocab or []))
    classes = None if id_classes is None else read_id_classes(id_classes)  # None: the benchmark's, else ImageNet-1k
    shared = {"id_classes": classes, "templates": templates, "params": params, "progress": True, **evaluation}
    model, sets = load_vlm(**asdict(vlm)), (id_set, ood_set, vocabs)
    how = (tune_sets, grid, tuning.tune_criterion, tuning.tune_on == "test")
    ev = _evaluate(model, sets, methods, streamed, stream, how, explain, shared).with_fields(fields)
    with writing(output):
        out = write_results(ev, output, overwrite=overwrite)
    warn_random(ev.random_weights)
    typer.echo(format_table(ev.rows, ev.meta))
    typer.echo(f"wrote {out}/results.json, results.csv, scores.npz, scores.csv, explanations.json")
    if report:
        write_folder_report(out)


def _authors(
    ctx: typer.Context, name: str, method: list[str] | None, templates: str, params: dict[str, Any]
) -> tuple[list[str] | None, str, dict[str, Any]]:
    """``--authors NAME``: the methods, templates and scorer parameters of the authors' setting (``params``
    updated), a flag given with another value refused in one line; what it set is printed, and returned as
    the fields every row records."""
    given = {"method": method or ["neglabel"], "templates": templates, **params}
    setting = authors_score(name, given, {k for k in given if on_command_line(ctx, k)})
    params.update({k: v for k, v in setting.items() if k not in ("method", "templates")})
    preset = authors_setting(name)
    assert preset is not None  # authors_score refused an unknown name
    typer.echo(f"--authors {name}: {preset.score_flags} ({preset.source})", err=True)
    fields = {"authors": name, "authors_setting": preset.score_flags}
    return setting.get("method", method), setting.get("templates", templates), fields


def _evaluate(
    vlm: VLM,
    sets: tuple[ImageSet, OpenedSets, dict[str, Vocabulary]],
    methods: list[str],
    streamed: list[str],
    stream: dict[str, Any],
    tuning: tuple[tuple[Any, dict[str, Any]] | None, dict[str, list[Any]], str, bool],
    explain: int,
    shared: dict[str, Any],
) -> Any:
    """The library's evaluation of ``sets`` (ID set, OOD sets, vocabularies): the batch and the test-time
    methods in one call, each tuned first where ``tuning`` has a split (its sets, grid, criterion and whether
    they are the test sets)."""
    from negvocab.evaluation.evaluate import evaluate_vocabularies
    from negvocab.evaluation.tuning import tune_methods

    (id_set, ood_set, vocabs), (tune_sets, grid, criterion, on_test) = sets, tuning
    tuned = []
    if tune_sets is not None:
        how = {k: shared[k] for k in ("id_classes", "templates", "params", "convention", "tpr")}
        tuned = tune_methods(
            vlm, tune_sets[0], tune_sets[1], vocabs, [*methods, *streamed], grid=grid, criterion=criterion,
            stream=stream, on_test=on_test, **how,
        )  # fmt: skip
    return evaluate_vocabularies(
        vlm, id_set, ood_set, vocabs, [*methods, *streamed], stream=stream if streamed else None,
        explain_k=explain, tuned=tuned, **shared,
    )  # fmt: skip


@app.command("sweep")
@scoring_options(
    "seed",  # also the bootstrap's
    methods=_swept,
    exclude=("topk",),  # a sweep scores every negative of each size
    evaluation=("convention", "tpr", "n_boot"),
)
@option_group("images", ImageOptions)
@option_group("vlm", ModelOptions)
def sweep_cmd(
    *,
    vocab: Annotated[
        Path, typer.Option("--vocab", "-V", help="A ranked (WordNet) vocabulary; M takes its first M labels.")
    ],
    sizes: Annotated[str, typer.Option("--sizes", help="Vocabulary sizes M, e.g. 1000,2000,5000,10000.")],
    images: ImageOptions,
    reference: Annotated[
        list[Path] | None,
        typer.Option(
            "--reference", "-R", help="Vocabularies drawn as horizontal references (GPT, oracle); repeatable."
        ),
    ] = None,
    method: Annotated[
        str,
        typer.Option(
            "--method", help="{methods} (one pass over the ranking where the method has a one-pass form)."
        ),  # filled from the registry
    ] = "neglabel",
    order: Annotated[
        str,
        typer.Option(
            "--order",
            help="ranked: the vocabulary's farthest-first ranking (a union, which has none, is refused); "
            "given: the file order of any vocabulary.",
        ),
    ] = "ranked",
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Output folder (sweep.csv, sweep.json, sweep.png).")
    ] = Path("sweep"),
    plot_format: Annotated[
        str,
        typer.Option(
            "--plot-format",
            help=(
                "The figure's formats, comma-separated: png, pdf, svg "
                "(sweep.png is always written; the report shows it)."
            ),
        ),
    ] = "png",
    overwrite: OverwriteOpt = False,
    vlm: ModelOptions,
    templates: TemplatesOpt = "paper8",
    id_classes: IdClassesOpt = None,
    report: ReportOpt = True,
    params: dict[str, Any] | None = None,  # the registry options above, from @scoring_options
    metrics: dict[str, Any] | None = None,
) -> None:
    """FPR@95 and AUROC against the vocabulary size M from one ranked vocabulary: a table and a plot."""
    assert params is not None and metrics is not None  # given by @scoring_options
    from negvocab.evaluation.sweeps import sweep_vocabulary

    evaluation = {**metrics, "seed": params["seed"]}  # convention, tpr, n_boot; the seed is the bootstrap's too
    # fail on bad options before loading a model or reading images
    key = batch_method(method, "negvocab sweep").name
    formats = check_plot_formats([f for f in plot_format.split(",") if f.strip()], "--plot-format")
    claim_results_folder(output, SWEEP_FILES, overwrite=overwrite)  # held until the command ends
    if not _swept(get_method(key)):
        raise InputError(
            f"--method {key} does not use negative labels; "
            f"a vocabulary-size sweep needs {', '.join(list_methods(_swept))}"
        )
    check_scoring_options(params, **evaluation)
    refuse_unused_params(params, [key], own=("seed",))  # seed: the bootstrap's too
    ranked = _ranked_vocabulary(vocab, order, sizes)
    id_set, ood_set = images.open()
    refs = load_vocabs(list(reference or []))
    classes = None if id_classes is None else read_id_classes(id_classes)  # None: the benchmark's, else ImageNet-1k
    how = {"id_classes": classes, "templates": templates, "params": params, "progress": True, **evaluation}
    model = load_vlm(**asdict(vlm))
    res = sweep_vocabulary(
        model, id_set, ood_set, ranked, sizes, method=method, references=refs, name=vocab.stem, order=order, **how
    )
    with writing(output):
        out = write_sweep(res, output, overwrite=overwrite, plot_formats=formats)
    warn_random(res.random_weights)
    for line in _sweep_lines(res, metrics["convention"], metrics["tpr"]):
        typer.echo(line)
    typer.echo(f"wrote {out}/sweep.csv, sweep.json, sweep.png")
    if report:
        write_folder_report(out)


def _ranked_vocabulary(vocab: Path, order: str, sizes: str) -> Vocabulary:
    """The vocabulary a sweep takes its first M labels from, checked with ``--order`` and ``--sizes``."""
    from negvocab.evaluation.sweeps import is_ranked
    from negvocab.scoring.prefix_scores import parse_sizes

    if order not in ("ranked", "given"):
        raise InputError(f"--order must be ranked or given, got {order!r}")
    ranked = Vocabulary.load(vocab)
    if order == "ranked" and ranked.source == "union" and not is_ranked(ranked):
        raise InputError(
            f"{vocab} is a union: it has no farthest-first order, so its first M labels are no pool of size M; "
            "sweep a ranked (WordNet) vocabulary, or pass --order given to sweep the file order"
        )
    parse_sizes(sizes, len(ranked))
    return ranked


def _sweep_lines(res: Any, convention: str, tpr: float) -> list[str]:
    """The sweep's table: FPR and AUROC per M (per OOD set where there are several), then the references
    and the ID accuracy where the ID labels allow (CCR per M is in sweep.csv)."""
    several = len({r["ood_set"] for r in res.rows}) > 1
    lines = [
        f"{'M':>8}  " + (f"{'OOD set':<14}" if several else "") + f"FPR@{int(round(100 * tpr))} ({convention})  AUROC"
    ]
    for r in res.rows:
        where = f"{r['ood_set'][:13]:<14}" if several else ""
        lines.append(f"{r['M']:>8}  {where}{100 * r['fpr']:>14.2f}%  {100 * r['auroc']:.2f}")
    for r in res.references:
        where = f"{r['ood_set'][:13]:<14}" if several else ""
        mark = "" if r["deployable"] else f"; NOT DEPLOYABLE: {';'.join(caveat_kinds(r['caveats']))}"
        name, m = r["vocabulary"], r["M"]
        lines.append(f"{name:>8}  {where}{100 * r['fpr']:>14.2f}%  {100 * r['auroc']:.2f}  (reference, M={m}{mark})")
    return lines + list(accuracy_lines(res.meta))
