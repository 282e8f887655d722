"""``negvocab methods`` and ``negvocab models``: the methods document shipped in the package, and the
open_clip models negvocab can load (with a preset of eight VLMs for a paper-sized study)."""

from __future__ import annotations

import re
from importlib import resources
from typing import Annotated

import typer

from negvocab.cli.app import app
from negvocab.cli.common_options import PrintedOutputOpt
from negvocab.cli.options import OverwriteOpt
from negvocab.cli.outputs import check_output, writing
from negvocab.core.atomic import is_stdout, write_text
from negvocab.core.errors import InputError

__all__ = ["METHODS_FILE", "PRESETS", "PRESET_NOTES", "methods_cmd", "methods_document", "models_cmd", "section"]

METHODS_FILE = "methods.md"  # negvocab/methods.md: the one source; docs/methods.md is a copy of it

# Eight open_clip VLMs (CLIP, EVA, DFN and SigLIP2 families, small to giant) for a study of the
# paper's size: tags that open_clip.list_pretrained() names, so each loads by name. Not the paper's
# own list, which its methods document does not hold; SigLIP2-g, the one VLM it names, is here
# (negvocab/methods.md, "The benchmark and reference numbers").
#: what a preset is, said on stderr beside its list (the models go to stdout)
PRESET_NOTES: dict[str, str] = {
    "paper8": (
        "eight VLMs of the paper's size and families, SigLIP2-g "
        "(the one it names) among them; not the paper's own list, "
        "which its methods document does not hold (negvocab methods -s 'The benchmark and reference numbers')"
    ),
}
PRESETS: dict[str, list[tuple[str, str]]] = {
    "paper8": [
        ("RN50", "openai"),
        ("ViT-B-16", "openai"),
        ("ViT-L-14", "openai"),
        ("ViT-L-14", "datacomp_xl_s13b_b90k"),
        ("EVA02-L-14-336", "merged2b_s6b_b61k"),
        ("ViT-H-14-quickgelu", "dfn5b"),
        ("ViT-SO400M-14-SigLIP2", "webli"),
        ("ViT-gopt-16-SigLIP2-384", "webli"),
    ],
}


def methods_document() -> str:
    """The methods document as the installed package holds it (works from a wheel)."""
    return (resources.files("negvocab") / METHODS_FILE).read_text(encoding="utf-8")


def section(text: str, name: str) -> str:
    """The Markdown section whose heading starts with (else contains) ``name``, case-insensitive, with
    its subsections."""
    lines = text.splitlines(keepends=True)
    heads = [
        (i, len(m.group(1)), m.group(2)) for i, ln in enumerate(lines) if (m := re.match(r"(#{1,6})\s+(.+?)\s*$", ln))
    ]
    hits = [k for k, (_, _, title) in enumerate(heads) if name.lower() in title.lower()]
    hits.sort(key=lambda k: not heads[k][2].lower().startswith(name.lower()))  # a heading that starts with it first
    if hits:
        i, level, _ = heads[hits[0]]
        end = next((j for j, lv, _ in heads[hits[0] + 1 :] if lv <= level), len(lines))
        return "".join(lines[i:end])
    titles = "; ".join(t for _, lv, t in heads if lv == 2)
    raise InputError(f"--section {name!r}: no heading of the methods document contains it; its sections: {titles}")


@app.command("methods")
def methods_cmd(
    section_name: Annotated[
        str | None,
        typer.Option("--section", "-s", help="Only the section whose heading contains this text, e.g. 'Conventions'."),
    ] = None,
    output: PrintedOutputOpt = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """The methods document: how every score, metric and convention is computed (results cite it)."""
    if output is not None:
        check_output(output, overwrite=overwrite)
    text = methods_document()
    if section_name is not None:
        text = section(text, section_name)
    if output is None or is_stdout(output):
        typer.echo(text, nl=False)
    else:
        with writing(output):
            write_text(output, text)
        typer.echo(f"wrote {output}")


@app.command("models")
def models_cmd(
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help=(
                "Only a preset's models: paper8 (eight VLMs of CLIP, EVA, DFN "
                "and SigLIP2, SigLIP2-g among them; not the paper's own list)."
            ),
        ),
    ] = None,
    grep: Annotated[
        str | None, typer.Option("--grep", help="Only models whose name or tag contains this text (case-insensitive).")
    ] = None,
) -> None:
    """The open_clip models with pretrained weights (name and tag, as --model and --pretrained take them)."""
    import open_clip

    known = [(str(n), str(t)) for n, t in open_clip.list_pretrained()]
    if preset is not None:
        if preset not in PRESETS:
            raise InputError(f"--preset {preset!r}: unknown preset; choose one of {', '.join(PRESETS)}")
        missing = [m for m in PRESETS[preset] if m not in known]
        if missing:
            raise InputError(f"--preset {preset}: this open_clip ({open_clip.__version__}) does not name {missing}")
        known = PRESETS[preset]
        typer.echo(f"{preset}: {PRESET_NOTES[preset]}", err=True)
    if grep is not None:
        known = [(n, t) for n, t in known if grep.lower() in f"{n} {t}".lower()]
    width = max((len(n) for n, _ in known), default=0)
    for name, tag in known:
        typer.echo(f"{name:<{width}}  {tag}")
