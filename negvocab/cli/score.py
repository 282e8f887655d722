"""``negvocab score``, ``negvocab sweep`` and ``negvocab build oracle``.

Each command parses options, builds the image sets and vocabularies, and calls the library
(:mod:`negvocab.scoring.run`); nothing here computes a score.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from negvocab.atomic import is_stdout
from negvocab.cli.app import app, build_app
from negvocab.cli.files import check_output, claim_results_folder, writing
from negvocab.cli.options import (
    BatchSizeOpt,
    CacheDirOpt,
    DeviceOpt,
    IdClassesOpt,
    ModelOpt,
    NumWorkersOpt,
    OverwriteOpt,
    PrecisionOpt,
    PresetTagOpt,
    PretrainedOpt,
    RandomWeightsOpt,
    TemplatesOpt,
    load_vlm,
)
from negvocab.errors import InputError

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet

# -- options shared by score and sweep ---------------------------------------------------------
IdOpt = Annotated[
    Path,
    typer.Option(
        "--id",
        help="ID images: a folder (ImageNet-1k val in class-folder or flat layout, class folders, or any "
        "images) or an image list (.csv with a path column, or one 'path label' a line, the label optional). With --fi-ood: "
        "the ImageNet-1k validation folder.",
    ),
]
OodOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--ood",
        help="OOD images: a folder of images, class folders (NINCO layout) or an image list; NAME=PATH names "
        "the set (a bare path is named after its folder). Repeat for several OOD sets: each is scored "
        "against the same ID set, and their mean is reported too.",
    ),
]
ImageRootOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--image-root", help="Folder that relative paths in image lists start from (default: the list's folder)."),
]
AllowOutsideOpt = Annotated[
    bool,
    typer.Option("--allow-outside-root", help="Let image-list paths leave the list's root (absolute paths elsewhere, ../..)."),
]
FiOodOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--fi-ood",
        help="Fi-ImageNet-1k OOD list (ids ILSVRC2012_val_XXXXXXXX, optional label column): the OOD images "
        "are taken from the --id validation folder and the ID set is the rest.",
    ),
]
FiAmbOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--fi-ambiguous", help="Fi-ImageNet-1k ambiguous list (excluded from ID and OOD)."),
]
GroundTruthOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--ground-truth", help="Labels of a flat ImageNet val folder (LOC_val_solution.csv or one index a line)."),
]
TauOpt = Annotated[float, typer.Option("--tau", help="NegLabel temperature on cosines.")]
GroupsOpt = Annotated[int, typer.Option("--groups", "-G", help="NegLabel groups G (clamped to the vocabulary size).")]
GroupingOpt = Annotated[str, typer.Option("--grouping", help="NegLabel grouping: stratified (rank r -> group r mod G), random, or neglabel (NegLabel's released code exactly: drops the last M mod G labels, torch permutation seeded with --seed on the scoring device).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap CIs and of the random/neglabel grouping (NegLabel's code uses 0; recorded in the results).")]
BetaOpt = Annotated[float, typer.Option("--beta", help="EOE penalty weight.")]
TempOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option(
        "--temperature",
        "-T",
        help="Softmax temperature T on cosines of mcm, glmcm and eoe (default 1).",
    ),
]
PenaltyTempOpt = Annotated[
    Optional[float],  # noqa: UP045
    typer.Option("--penalty-temperature", help="Temperature of neglabel_eoe's EOE penalty (default: --tau)."),
]
ConventionOpt = Annotated[str, typer.Option("--convention", help="FPR convention: paper (ID-anchored), hendrycks or openood.")]
TprOpt = Annotated[float, typer.Option("--tpr", help="TPR of the FPR metric (0.95 = FPR@95).")]
MAX_BOOT = 100_000  # 1,000 is the usual; more only costs time
BootOpt = Annotated[int, typer.Option("--n-boot", help="Bootstrap resamples of OOD images for the CIs (0: none).")]
ReportOpt = Annotated[bool, typer.Option("--report/--no-report", help="Write report.html (one self-contained HTML file) into the output folder.")]


def ood_paths(values: list[str] | None) -> dict[str, Path]:
    """``--ood`` values by set name: ``NAME=PATH``, or a bare path named after its folder (a list
    file: after its stem). Names must be unique and not ``mean``."""
    out: dict[str, Path] = {}
    for value in values or []:
        name, eq, rest = value.partition("=")
        named = bool(eq) and name.strip() and "/" not in name and "\\" not in name and not Path(value).exists()
        path = Path(rest if named else value).expanduser()
        if named:
            name = name.strip()
        else:
            name = (path.stem if path.is_file() else path.name) or str(path)
        if name == "mean":
            raise InputError(f"--ood {value}: 'mean' names the average over the OOD sets; give the set another name (NAME=PATH)")
        if name in out:
            raise InputError(f"--ood: two OOD sets are named {name!r} ({out[name]} and {path}); name them: --ood NAME=PATH")
        out[name] = path
    return out


def image_sets(
    id_path: Path,
    ood: list[str] | None,
    fi_ood: Path | None,
    fi_ambiguous: Path | None,
    ground_truth: Path | None,
    image_root: Path | None = None,
    allow_outside_root: bool = False,
) -> tuple[ImageSet, dict[str, ImageSet]]:
    """The ID image set and the OOD image sets by name that the options describe."""
    from negvocab.data import fi_imagenet, imagenet_val, open_image_set

    oods = ood_paths(ood)
    if image_root is not None and not any(p is not None and p.is_file() for p in (id_path, *oods.values())):
        raise InputError("--image-root applies to image lists only: give --id or --ood as a list file")
    if fi_ood is not None:
        if oods:
            raise InputError("give --ood or --fi-ood, not both")
        fi = fi_imagenet(id_path, fi_ood, fi_ambiguous, ground_truth=ground_truth)
        if fi.not_found:
            typer.echo(f"warning: {len(fi.not_found)} listed ids are not in {id_path} (e.g. {fi.not_found[0]})", err=True)
        return fi.id, {"fi-imagenet-1k": fi.ood}
    if not oods:
        raise InputError("no OOD images: pass --ood FOLDER (repeatable, NAME=FOLDER) or --fi-ood LIST")
    if fi_ambiguous is not None:
        raise InputError("--fi-ambiguous needs --fi-ood")
    if ground_truth:
        id_set = imagenet_val(id_path, ground_truth=ground_truth)
    else:
        id_set = open_image_set(id_path, image_root=image_root, allow_outside_root=allow_outside_root)
    return id_set, {name: open_image_set(path, image_root=image_root, allow_outside_root=allow_outside_root) for name, path in oods.items()}


def check_scoring_options(
    *,
    tau: float,
    groups: int,
    grouping: str,
    convention: str,
    tpr: float,
    n_boot: int,
    topk: int | None = None,
    temperature: float | None = None,
    penalty_temperature: float | None = None,
    seed: int = 0,
) -> None:
    """Reject bad scoring options before a model is loaded or an image is read."""
    from negvocab.scoring.metrics import CONVENTIONS
    from negvocab.scoring.scores import GROUPINGS

    if convention not in CONVENTIONS:
        raise InputError(f"unknown --convention {convention!r}; choose one of {', '.join(CONVENTIONS)}")

    if not (math.isfinite(tau) and tau > 0):
        raise InputError(f"--tau must be a positive number, got {tau}")
    if groups < 1:
        raise InputError(f"--groups must be >= 1, got {groups}")
    if grouping not in GROUPINGS:
        raise InputError(f"unknown --grouping {grouping!r}; choose one of {', '.join(GROUPINGS)}")
    if not 0 < tpr <= 1:
        raise InputError(f"--tpr must be in (0, 1], got {tpr}")
    if not 0 <= n_boot <= MAX_BOOT:
        raise InputError(f"--n-boot must be between 0 and {MAX_BOOT:,}, got {n_boot}")
    if seed < 0:
        raise InputError(f"--seed must be >= 0, got {seed}")
    if topk is not None and topk < 1:
        raise InputError(f"--topk must be >= 1, got {topk}")
    for flag, value in (("--temperature", temperature), ("--penalty-temperature", penalty_temperature)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{flag} must be a positive number, got {value}")


def _load_vocabs(paths: list[Path]) -> dict[str, object]:
    from negvocab.vocab import Vocabulary

    out: dict[str, object] = {}
    for p in paths:
        name = p.stem
        while name in out:
            name += "'"
        out[name] = Vocabulary.load(p)
    return out


def _warn_random(random_weights: bool) -> None:
    if random_weights:
        from negvocab.scoring.run import RANDOM_WEIGHTS_WARNING

        typer.secho(f"WARNING: {RANDOM_WEIGHTS_WARNING}", fg="red", bold=True)  # once, with the results


@app.command("score")
def score_cmd(
    id_path: IdOpt,
    vocab: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option("--vocab", "-V", help="Vocabulary JSON/TXT; repeat for a comparison table."),
    ] = None,
    method: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--method", help="mcm, glmcm, neglabel, eoe, neglabel_eoe; repeatable (default neglabel)."),
    ] = None,
    ood: OodOpt = None,
    fi_ood: FiOodOpt = None,
    fi_ambiguous: FiAmbOpt = None,
    ground_truth: GroundTruthOpt = None,
    image_root: ImageRootOpt = None,
    allow_outside_root: AllowOutsideOpt = False,
    output: Annotated[Path, typer.Option("--output", "-o", help="Results folder.")] = Path("results"),
    overwrite: OverwriteOpt = False,
    model: ModelOpt = "ViT-B-32",
    pretrained: PretrainedOpt = None,
    tag: PresetTagOpt = None,
    random_weights: RandomWeightsOpt = False,
    templates: TemplatesOpt = "paper8",
    id_classes: IdClassesOpt = None,
    tau: TauOpt = 0.01,
    groups: GroupsOpt = 100,
    grouping: GroupingOpt = "stratified",
    seed: SeedOpt = 0,
    beta: BetaOpt = 0.25,
    temperature: TempOpt = None,
    penalty_temperature: PenaltyTempOpt = None,
    topk: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--topk", help="NegLabel from each image's k nearest negatives (FAISS), with certified bounds."),
    ] = None,
    lam: Annotated[float, typer.Option("--lambda", help="GL-MCM weight of the local term.")] = 1.0,
    convention: ConventionOpt = "paper",
    tpr: TprOpt = 0.95,
    n_boot: BootOpt = 1000,
    explain: Annotated[int, typer.Option("--explain", help="Top negatives / ID classes listed per OOD image (0: none).")] = 5,
    report: ReportOpt = True,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = None,
    cache_dir: CacheDirOpt = None,
    batch_size: BatchSizeOpt = None,
    num_workers: NumWorkersOpt = None,
) -> None:
    """Score a VLM with one or more vocabularies on an ID and an OOD set; write a results folder."""
    from negvocab.labels.imagenet import read_id_classes
    from negvocab.scoring.run import RESULT_FILES, evaluate_vocabularies, format_table, write_results
    from negvocab.scoring.scores import NEEDS_NEGATIVES, canonical_method

    methods = [canonical_method(m) for m in (method or ["neglabel"])]  # fail before loading a model
    claim_results_folder(output, RESULT_FILES, overwrite=overwrite)  # held until the command ends
    check_scoring_options(tau=tau, groups=groups, grouping=grouping, convention=convention, tpr=tpr, n_boot=n_boot, topk=topk, temperature=temperature, penalty_temperature=penalty_temperature, seed=seed)
    if not (math.isfinite(lam) and lam >= 0):
        raise InputError(f"--lambda must be a number >= 0, got {lam}")
    if explain < 0:
        raise InputError(f"--explain must be >= 0, got {explain}")
    need_vocab = [m for m in methods if m in NEEDS_NEGATIVES]
    if need_vocab and not vocab:
        raise InputError(f"--method {', '.join(need_vocab)} needs a vocabulary: pass --vocab FILE (or use --method mcm / glmcm)")
    id_set, ood_set = image_sets(id_path, ood, fi_ood, fi_ambiguous, ground_truth, image_root, allow_outside_root)
    vocabs = _load_vocabs(list(vocab or []))
    classes = read_id_classes(id_classes)
    vlm = load_vlm(model, pretrained, device, precision, cache_dir, random_weights, tag=tag, batch_size=batch_size, num_workers=num_workers)
    ev = evaluate_vocabularies(
        vlm,
        id_set,
        ood_set,
        vocabs,  # type: ignore[arg-type]
        methods,
        id_classes=classes,
        templates=templates,
        params={"tau": tau, "groups": groups, "grouping": grouping, "seed": seed, "beta": beta, "T": temperature, "penalty_T": penalty_temperature, "topk": topk, "lam": lam},
        convention=convention,
        tpr=tpr,
        n_boot=n_boot,
        seed=seed,
        explain_k=explain,
        progress=True,
    )
    with writing(output):
        out = write_results(ev, output, overwrite=overwrite)
    _warn_random(ev.random_weights)
    typer.echo(format_table(ev.rows, ev.meta))
    typer.echo(f"wrote {out}/results.json, results.csv, scores.npz, scores.csv, explanations.json")
    if report:
        from negvocab.cli.report import write_folder_report

        write_folder_report(out)


@app.command("sweep")
def sweep_cmd(
    id_path: IdOpt,
    vocab: Annotated[Path, typer.Option("--vocab", "-V", help="A ranked (WordNet) vocabulary; M takes its first M labels.")],
    sizes: Annotated[str, typer.Option("--sizes", help="Pool sizes, e.g. 1000,2000,5000,10000.")],
    reference: Annotated[
        Optional[list[Path]],  # noqa: UP045
        typer.Option("--reference", "-R", help="Vocabularies drawn as horizontal references (GPT, oracle); repeatable."),
    ] = None,
    method: Annotated[str, typer.Option("--method", help="neglabel, eoe or neglabel_eoe (each one pass over the ranking).")] = "neglabel",
    order: Annotated[
        str,
        typer.Option(
            "--order",
            help="ranked: the vocabulary's farthest-first ranking (a union, which has none, is refused); "
            "given: the file order of any vocabulary.",
        ),
    ] = "ranked",
    ood: OodOpt = None,
    fi_ood: FiOodOpt = None,
    fi_ambiguous: FiAmbOpt = None,
    ground_truth: GroundTruthOpt = None,
    image_root: ImageRootOpt = None,
    allow_outside_root: AllowOutsideOpt = False,
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder (sweep.csv, sweep.json, sweep.png).")] = Path("sweep"),
    overwrite: OverwriteOpt = False,
    model: ModelOpt = "ViT-B-32",
    pretrained: PretrainedOpt = None,
    tag: PresetTagOpt = None,
    random_weights: RandomWeightsOpt = False,
    templates: TemplatesOpt = "paper8",
    id_classes: IdClassesOpt = None,
    tau: TauOpt = 0.01,
    groups: GroupsOpt = 100,
    grouping: GroupingOpt = "stratified",
    seed: SeedOpt = 0,
    beta: BetaOpt = 0.25,
    temperature: TempOpt = None,
    penalty_temperature: PenaltyTempOpt = None,
    convention: ConventionOpt = "paper",
    tpr: TprOpt = 0.95,
    n_boot: BootOpt = 1000,
    report: ReportOpt = True,
    device: DeviceOpt = "auto",
    precision: PrecisionOpt = None,
    cache_dir: CacheDirOpt = None,
    batch_size: BatchSizeOpt = None,
    num_workers: NumWorkersOpt = None,
) -> None:
    """FPR@95 and AUROC against pool size M from one ranked vocabulary: a table and a plot."""
    from negvocab.labels.imagenet import read_id_classes
    from negvocab.scoring.run import SWEEP_FILES, is_ranked, sweep_vocabulary, write_sweep
    from negvocab.scoring.scores import NEEDS_NEGATIVES, canonical_method
    from negvocab.scoring.sweep import parse_sizes
    from negvocab.vocab import Vocabulary

    # fail on bad options before loading a model or reading images
    key = canonical_method(method)
    claim_results_folder(output, SWEEP_FILES, overwrite=overwrite)  # held until the command ends
    if key not in NEEDS_NEGATIVES:
        raise InputError(f"--method {key} does not use negative labels; a pool-size sweep needs neglabel, eoe or neglabel_eoe")
    check_scoring_options(tau=tau, groups=groups, grouping=grouping, convention=convention, tpr=tpr, n_boot=n_boot, temperature=temperature, penalty_temperature=penalty_temperature, seed=seed)
    if order not in ("ranked", "given"):
        raise InputError(f"--order must be ranked or given, got {order!r}")
    ranked = Vocabulary.load(vocab)
    if order == "ranked" and ranked.source == "union" and not is_ranked(ranked):
        raise InputError(
            f"{vocab} is a union: it has no farthest-first order, so its first M labels are no pool of size M; "
            "sweep a ranked (WordNet) vocabulary, or pass --order given to sweep the file order"
        )
    parse_sizes(sizes, len(ranked))
    id_set, ood_set = image_sets(id_path, ood, fi_ood, fi_ambiguous, ground_truth, image_root, allow_outside_root)
    refs = _load_vocabs(list(reference or []))
    classes = read_id_classes(id_classes)
    vlm = load_vlm(model, pretrained, device, precision, cache_dir, random_weights, tag=tag, batch_size=batch_size, num_workers=num_workers)
    res = sweep_vocabulary(
        vlm,
        id_set,
        ood_set,
        ranked,
        sizes,
        method=method,
        references=refs,  # type: ignore[arg-type]
        id_classes=classes,
        templates=templates,
        params={"tau": tau, "groups": groups, "grouping": grouping, "seed": seed, "beta": beta, "T": temperature, "penalty_T": penalty_temperature},
        convention=convention,
        tpr=tpr,
        n_boot=n_boot,
        seed=seed,
        name=vocab.stem,
        order=order,
        progress=True,
    )
    with writing(output):
        out = write_sweep(res, output, overwrite=overwrite)
    _warn_random(res.random_weights)
    pct = int(round(100 * tpr))
    several = len({r["ood_set"] for r in res.rows}) > 1
    typer.echo(f"{'M':>8}  " + (f"{'OOD set':<14}" if several else "") + f"FPR@{pct} ({convention})  AUROC")
    for r in res.rows:
        where = f"{r['ood_set'][:13]:<14}" if several else ""
        typer.echo(f"{r['M']:>8}  {where}{100 * r['fpr']:>14.2f}%  {100 * r['auroc']:.2f}")
    for r in res.references:
        where = f"{r['ood_set'][:13]:<14}" if several else ""
        mark = "" if r["deployable"] else f"; NOT DEPLOYABLE: {r['caveats']}"
        typer.echo(f"{r['name']:>8}  {where}{100 * r['fpr']:>14.2f}%  {100 * r['auroc']:.2f}  (reference, M={r['M']}{mark})")
    typer.echo(f"wrote {out}/sweep.csv, sweep.json, sweep.png")
    if report:
        from negvocab.cli.report import write_folder_report

        write_folder_report(out)


@build_app.command("oracle")
def build_oracle(
    output: Annotated[Path, typer.Option("--output", "-o", help="Vocabulary JSON to write.")],
    labels: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--labels", help="OOD labels: one a line, or a Fi-ImageNet-1k list with a label column."),
    ] = None,
    ood: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--ood", help="OOD class folders (NINCO layout): labels from folder names."),
    ] = None,
    synonym_filter: Annotated[
        bool, typer.Option("--synonym-filter/--no-synonym-filter", help="Drop labels naming an ImageNet-1k class.")
    ] = True,
    overwrite: OverwriteOpt = False,
) -> None:
    """The oracle vocabulary: the OOD set's own labels (a lower bound on FPR@95, NOT deployable)."""
    from negvocab.build.oracle import build_oracle_vocabulary

    if (labels is None) == (ood is None):
        raise InputError("give exactly one of --labels FILE and --ood DIR")
    if labels is not None and labels.is_dir():
        raise InputError(f"--labels {labels} is a folder; for class folders (NINCO layout) use --ood")
    if ood is not None and ood.exists() and not ood.is_dir():
        raise InputError(f"--ood {ood} is a file; for a labels file or an image list use --labels")
    check_output(output, inputs=[labels], overwrite=overwrite)
    vocab = build_oracle_vocabulary(labels if labels is not None else ood, synonym_filter=synonym_filter)
    with writing(output):
        vocab.save(output)
    removed = vocab.settings.get("synonym_filter", {}).get("removed_count", 0)
    typer.echo(f"wrote {output}: {len(vocab)} oracle labels ({removed} removed as ImageNet-1k names/synonyms); not a deployable vocabulary", err=is_stdout(output))
