"""``negvocab build NAME`` for every registered builder without a hand-written command.

The command is generated from the builder's options model (:mod:`negvocab.builders.registry`): one
flag per field (``per_class`` -> ``--per-class``; booleans ``--x/--no-x``; lists repeatable), its help
the field's description; the model options (``--model``, ``--pretrained``, ``--random-weights``, ...)
when the builder needs a VLM; ``-o/--output`` and ``--overwrite``. Options are checked by the options
model before any model loads (one line naming the flag). The ``build`` group's help and each command's
examples come from the registry too. :func:`add_builder_commands` loads the plug-ins first.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from negvocab.builders.authors import authors_setting
from negvocab.builders.registry import Builder, annotation_types, get_builder, list_builders
from negvocab.cli.app import build_app
from negvocab.cli.commands import BUILD_MODULES
from negvocab.cli.common_options import OutOpt
from negvocab.cli.examples import EXAMPLES
from negvocab.cli.labelspace import id_label_space, say_mapping
from negvocab.cli.options import (
    HintOpt,
    LabelSpaceOpt,
    MapClassesOpt,
    ModelOptions,
    OverwriteOpt,
    load_vlm,
    on_command_line,
)
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout
from negvocab.core.plugins import load_plugins
from negvocab.labels.imagenet import IdClasses

__all__ = ["add_builder_commands", "builder_command", "build_help"]

_SIMPLE = (bool, int, float, Path, str)  # the CLI types an option may take, in the order they are preferred
#: the model options of a builder that needs a VLM: name -> (annotation, default); no --num-workers (no images)
_VLM_OPTIONS: dict[str, tuple[Any, Any]] = {
    f.name: (typing.get_type_hints(ModelOptions, include_extras=True)[f.name], f.default)
    for f in dataclasses.fields(ModelOptions)
    if f.name != "num_workers"
}

_DRY_RUN = Annotated[
    bool, typer.Option("--dry-run", help="Say how many requests would be sent and their cost; send and write nothing.")
]

_AUTHORS = Annotated[
    bool,
    typer.Option(
        "--authors",
        help="The authors' published setting (ratio, filter, templates, ...; docs/methods.md): fills the "
        "options not given here, and prints the matching negvocab score flags.",
    ),
]


def build_help() -> str:
    """The ``build`` group's help: every registered builder."""
    return f"Build a vocabulary ({', '.join(list_builders())})."


def _cli_type(annotation: Any) -> tuple[type | None, bool]:
    """The flag type of an option (None: not settable from the command line) and whether it repeats."""
    members = annotation_types(annotation)
    lists = [typing.get_args(t)[0] for t in members if typing.get_origin(t) in (list, tuple) and typing.get_args(t)]
    for kind in _SIMPLE:
        if any(t is kind for t in members):
            return kind, False
        if typing.get_origin(members[0]) is typing.Literal and kind is str:
            return str, False
    for kind in _SIMPLE:
        if kind in lists:
            return kind, True
    return None, False


def _flag(name: str, taken: set[str]) -> str:
    flag = "--" + name.replace("_", "-")
    return flag if flag not in taken else f"{flag}-option"


def _example(b: Builder) -> str:
    required = [
        f"{'--' + n.replace('_', '-')} {n.upper()}" for n, f in b.options.model_fields.items() if f.is_required()
    ]
    weights = " --random-weights" if "vlm" in b.needs else ""
    return " ".join([f"negvocab build {b.name}", *required, f"-o {b.name}.json"]) + weights


def _takes_label_space(annotation: Any) -> bool:
    """Whether an ``id_classes`` option takes an :class:`IdClasses` (then ``--id-classes`` opens, and maps,
    the label space as ``build wordnet``'s does; an option that takes a file only keeps its own flag)."""
    for t in annotation_types(annotation):
        if (typing.get_args(t)[0] if typing.get_origin(t) is typing.Annotated else t) is IdClasses:
            return True
    return False


def _label_space_params() -> list[inspect.Parameter]:
    """``--map-classes/--no-map-classes`` and ``--hint`` beside a builder's ``--id-classes``."""
    return [
        inspect.Parameter("ls_map_classes", inspect.Parameter.KEYWORD_ONLY, annotation=MapClassesOpt, default=True),
        inspect.Parameter("ls_hint", inspect.Parameter.KEYWORD_ONLY, annotation=HintOpt, default=None),
    ]


def builder_command(b: Builder) -> Callable[..., None]:
    """The command function of builder ``b``: typer reads its signature (built from the options model)."""
    # long: the signature is assembled field by field; the body is the few steps every build takes
    uses_vlm = "vlm" in b.needs
    taken = {"--output", "--overwrite", *(("--" + k.replace("_", "-")) for k in _VLM_OPTIONS if uses_vlm)}
    flags: dict[str, str] = {}  # option -> flag
    params = [
        inspect.Parameter("output", inspect.Parameter.KEYWORD_ONLY, annotation=OutOpt),
        inspect.Parameter("overwrite", inspect.Parameter.KEYWORD_ONLY, annotation=OverwriteOpt, default=False),
    ]
    preset = authors_setting(b.name)
    if preset is not None and preset.build:  # the authors' published setting in one flag
        taken.add("--authors")
        params.append(inspect.Parameter("authors", inspect.Parameter.KEYWORD_ONLY, annotation=_AUTHORS, default=False))
        params.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))
    if b.estimate is not None:  # an LLM builder: what it would send and cost, nothing sent or written
        taken.add("--dry-run")
        params.append(inspect.Parameter("dry_run", inspect.Parameter.KEYWORD_ONLY, annotation=_DRY_RUN, default=False))
    if uses_vlm:
        params += [
            inspect.Parameter(f"vlm_{k}", inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
            for k, (ann, default) in _VLM_OPTIONS.items()
        ]
    for name, info in b.options.model_fields.items():
        kind, many = _cli_type(info.annotation)
        if kind is None or name == "progress" or (uses_vlm and name == "batch_size"):
            continue  # objects only the API can pass; progress is on; --batch-size is the VLM's
        flag = flags[name] = _flag(name, taken)
        text = (info.description or name.replace("_", " ")).rstrip(".")
        help_text = text[:1].upper() + text[1:] + "."
        required = info.is_required()
        default = None if required or many else info.default
        ann: Any
        if name == "id_classes" and not required and _takes_label_space(info.annotation):  # as build wordnet's
            ann = LabelSpaceOpt
        elif kind is bool and not required and isinstance(default, bool):
            opt = typer.Option(f"{flag}/--no-{flag[2:]}", help=help_text)
            ann = Annotated[bool, opt]
        else:
            opt = typer.Option(flag, help=help_text)
            ann = Annotated[list[kind] if many else kind if required else Optional[kind], opt]  # type: ignore[valid-type]  # noqa: UP045
        params.append(
            inspect.Parameter(
                f"opt_{name}",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=ann,
                **({} if required else {"default": default}),
            )
        )
        if ann is LabelSpaceOpt:
            params += _label_space_params()

    def command(**kw: Any) -> None:
        output, overwrite, dry_run = kw.pop("output"), kw.pop("overwrite"), kw.pop("dry_run", False)
        given = {k.removeprefix("opt_"): v for k, v in kw.items() if k.startswith("opt_")}
        options = {k: v for k, v in given.items() if not (v is None or (isinstance(v, list) and not v))}
        ctx = kw.pop("ctx", None)
        if kw.pop("authors", False) and preset is not None:  # options given on the command line win
            options.update({k: v for k, v in preset.build.items() if not on_command_line(ctx, f"opt_{k}")})
        if "progress" in b.options.model_fields:
            options["progress"] = True
        if uses_vlm and "batch_size" in b.options.model_fields:
            options["batch_size"] = kw["vlm_batch_size"]
        paths = [v for v in options.values() if isinstance(v, Path)]
        mapped = ""
        if "ls_map_classes" in kw:  # the label space opened (and mapped) as build wordnet opens it
            classes, mapped = id_label_space(options.get("id_classes"), kw["ls_map_classes"], kw["ls_hint"])
            if "id_classes" in options:
                options["id_classes"] = classes
        b.validate(options, key=lambda n: flags.get(n, n))  # every option checked before the model loads
        if not dry_run:
            check_output(output, inputs=paths, overwrite=overwrite)
        say_mapping(mapped)  # every input checked: the label space's summary
        vlm = None
        if uses_vlm:
            vlm = load_vlm(**{k.removeprefix("vlm_"): kw[k] for k in kw if k.startswith("vlm_")})
        if dry_run:
            typer.echo(f"dry run, nothing sent: {b.estimate_cost(vlm=vlm, **options).summary()}")
            return
        vocab = b.run(vlm=vlm, **options)
        with writing(output):
            vocab.save(output)
        warn = " (RANDOM weights: not a real vocabulary)" if getattr(vlm, "random_weights", False) else ""
        note = "; not a deployable vocabulary" if not vocab.deployable else ""
        typer.echo(f"wrote {output}: {len(vocab)} {b.source} labels{note}{warn}", err=is_stdout(output))
        if preset is not None and preset.score:
            typer.echo(f"score as the authors' code: negvocab score {preset.score_flags}", err=True)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = b.summary or f"Build a {b.name} vocabulary."
    command.__name__ = f"build_{b.name}"
    return command


def add_builder_commands(*, plugins: bool = True) -> list[str]:
    """Load the plug-ins (with ``plugins``), import the hand-written ``build`` commands, then give every
    registered builder without a command a generated one, with its examples; set the ``build`` help.
    Returns the names added (idempotent)."""
    if plugins:
        load_plugins()
    for module in BUILD_MODULES:  # the hand-written commands first: none of theirs is generated
        importlib.import_module(module)
    have = {c.name for c in build_app.registered_commands}
    added = []
    for name in list_builders():
        if name in have:
            continue
        b = get_builder(name)
        build_app.command(name, help=b.summary or None)(builder_command(b))
        EXAMPLES[f"build {name}"] = list(b.examples) or [_example(b)]
        added.append(name)
    build_app.info.help = build_help()
    return added
