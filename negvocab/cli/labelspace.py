"""``negvocab map-classes``: an ID label space's class names mapped to WordNet synsets, and the names that are not.

The work is in :mod:`negvocab.labels.labelspace` (the rules) and :mod:`negvocab.data.label_space`
(a file, a benchmark's class list or a shipped one); here the options are parsed and the report printed.
``filter`` and the builders take the same ``--id-classes``, ``--map-classes`` and ``--hint``
(:func:`id_label_space`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from negvocab.builders.llm_classes import select_classes
from negvocab.cli.app import app
from negvocab.cli.common_options import PrintedOutputOpt
from negvocab.cli.options import HintOpt, LabelSpaceOpt, MapClassesOpt, OverwriteOpt
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout, write_text
from negvocab.core.errors import InputError
from negvocab.data.label_space import label_space_file, open_label_space
from negvocab.labels.imagenet import IdClasses
from negvocab.labels.labelspace import LabelSpaceMap, class_file_hints, class_file_pins, map_label_space

__all__ = [
    "MAP_FORMATS",
    "LabelSpace",
    "LabelSpaceOptions",
    "id_label_space",
    "llm_label_space",
    "map_classes",
    "mapping_text",
    "say_mapping",
]

#: ``pinned``: NAME<TAB>WNID lines (a class file that pins every sense); ``tsv``: the whole table; ``json``
MAP_FORMATS = ("pinned", "tsv", "json")
_COLUMNS = ["name", "wnid", "synset", "rule", "choice", "n_senses", "hypernyms"]


def id_label_space(
    id_classes: Path | None, map_wordnet: bool, hints: list[str] | None, **reader: Callable[[Path], IdClasses]
) -> tuple[IdClasses, str]:
    """``--id-classes`` of ``filter`` and the builders, mapped to WordNet unless ``--no-map-classes``,
    and the mapping's one-line summary (with every unresolved name; "" when not mapped): the command
    says it (:func:`say_mapping`) once every input is checked, so a bad input is still one line.
    ``reader=``: how the file is read (:func:`~negvocab.data.label_space.open_label_space`)."""
    opened = open_label_space(id_classes, map_wordnet=map_wordnet, hints=hints or (), **reader)
    if opened.mapping is None and hints:
        raise InputError("--hint goes with --map-classes and an --id-classes file of class names")
    return opened.classes, opened.mapping.summary() if opened.mapping is not None else ""


@dataclass(frozen=True)
class LabelSpaceOptions:
    """``--id-classes``, ``--map-classes`` and ``--hint`` of ``filter`` and the builders (a group of
    :func:`~negvocab.cli.options.option_group`); :meth:`open` opens them (:func:`id_label_space`)."""

    id_classes: LabelSpaceOpt = None
    map_classes: MapClassesOpt = True
    hint: HintOpt = None

    def open(self, **reader: Callable[[Path], IdClasses]) -> tuple[IdClasses, str]:
        """The label space and its mapping's one-line summary (:func:`id_label_space`)."""
        return id_label_space(self.id_classes, self.map_classes, self.hint, **reader)


@dataclass(frozen=True)
class LabelSpace:
    """The label space of an LLM builder's ``--classes`` when it is one of its own (not ImageNet-1k's
    classes): the classes asked about and filtered against, and the mapping's summary ("" unmapped)."""

    classes: IdClasses
    summary: str

    def settings(self) -> dict[str, Any]:
        """What a vocabulary built on it records (only such vocabularies: ImageNet-1k runs are unchanged)."""
        out: dict[str, Any] = {"id_classes": self.classes.dataset, "id_class_list": self.classes.to_record()}
        return {**out, "label_space_mapping": self.summary} if self.summary else out


def llm_label_space(classes: str | None, map_wordnet: bool, hints: list[str] | None) -> LabelSpace | None:
    """``--classes`` of ``build gpt`` and ``build eoe`` as a label space of its own, or None where it
    selects ImageNet-1k classes as before: none given, a number K, or a file whose every line is an
    ImageNet-1k wnid or class name. Else (a file of other class names or ``NAME<TAB>WNID`` lines, a
    benchmark's name or a shipped list) the classes asked about and the synonym filter's label space,
    mapped to WordNet unless ``--no-map-classes``."""
    if classes is not None and not classes.strip().isdigit() and not _selects_imagenet(Path(classes).expanduser()):
        opened = open_label_space(classes, map_wordnet=map_wordnet, hints=hints or ())
        if opened.mapping is None and hints:
            raise InputError(f"--hint goes with --map-classes and class names to map; --classes {classes} has none")
        return LabelSpace(opened.classes, opened.mapping.summary() if opened.mapping is not None else "")
    if hints:
        raise InputError(
            "--hint goes with --map-classes and a --classes file of class names or a benchmark's name "
            "(not K, nor a file of ImageNet-1k wnids or names)"
        )
    return None


def _selects_imagenet(path: Path) -> bool:
    """Whether ``path`` selects ImageNet-1k classes as before: a file whose every line is an ImageNet-1k
    wnid or class name, or a missing file that names no benchmark or shipped list (said as before)."""
    if not path.is_file():
        return label_space_file(path) == path
    try:
        return bool(select_classes(path))
    except InputError:
        return False


def say_mapping(summary: str) -> None:
    """The label-space mapping's summary on standard error (nothing when the classes were not mapped)."""
    if summary:
        typer.echo(summary, err=True)


def mapping_text(mapping: LabelSpaceMap, fmt: str) -> str:
    """The mapping in one of :data:`MAP_FORMATS`."""
    if fmt == "pinned":
        return mapping.pinned_text()
    if fmt == "json":
        return json.dumps(mapping.to_dict(), indent=1, ensure_ascii=False) + "\n"
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(_COLUMNS)
    for s in mapping.senses:
        writer.writerow(
            [s.name, s.wnid or "", s.synset or "", s.rule, s.choice, s.n_senses, " < ".join(s.hypernyms[:4])]
        )
    return buf.getvalue()


@app.command("map-classes")
def map_classes(
    classes: Annotated[
        str,
        typer.Argument(
            help="A class file (names, wnids or NAME<TAB>WNID lines), a benchmark's name or a shipped list (cifar100)."
        ),
    ],
    hint: HintOpt = None,
    context: Annotated[
        bool,
        typer.Option(
            "--context/--first-sense",
            help="An ambiguous name outside the label space's domain takes a sense inside it (else its first sense).",
        ),
    ] = True,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", help="pinned (NAME<TAB>WNID, a class file), tsv or json; default: the --output suffix."
        ),
    ] = None,
    output: PrintedOutputOpt = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Map a label space's class names to WordNet 3.0 noun synsets; say how each was chosen and which
    names resolve to none (they stay, matched by name only)."""
    if fmt is None:
        suffix = "" if output is None or is_stdout(output) else output.suffix.lstrip(".").lower()
        fmt = {"json": "json", "tsv": "tsv", "txt": "pinned"}.get(suffix, "tsv" if not suffix else "")
        if not fmt:
            raise InputError(
                f"--output {output}: the suffix {suffix!r} says no format; give --format pinned, tsv or json"
            )
    fmt = fmt.strip().lower()
    if fmt not in MAP_FORMATS:
        raise InputError(f"--format must be one of {', '.join(MAP_FORMATS)}; got {fmt!r}")
    if output is not None:
        check_output(output, overwrite=overwrite)
    opened = open_label_space(classes)
    file_hints = class_file_hints(opened.file) if opened.file is not None else ()
    pins = class_file_pins(opened.file) if opened.file is not None else {}
    mapping = map_label_space(opened.classes, hints=(*file_hints, *(hint or ())), context=context, pins=pins)
    text = mapping_text(mapping, fmt)
    if output is None:
        typer.echo(text, nl=False)
    else:
        with writing(output):
            write_text(output, text)
    typer.echo(mapping.summary(), err=True)
