"""The command table: each command's name, module and one-line help, known without importing it.

``negvocab --help`` lists the commands from :data:`COMMANDS` and ``negvocab --version`` needs none of
them, so neither imports numpy, pydantic or torch; a command's module is imported when the command
runs (:class:`negvocab.cli.app.CommandGroup`). Unknown ``--method`` and ``--convention`` values are
refused from :data:`METHODS` and :data:`CONVENTIONS` before the command's module (and numpy) is
imported, with the same line the registry gives (:func:`refuse_unknown_choices`). The build commands
are the builder registry's own table (:data:`negvocab.builders.BUILTIN_BUILDERS`, which imports
nothing); the other tables copy the built-ins: ``tests/cli/test_commands.py`` compares them with the
real commands and registries, so they cannot drift. A plug-in's entries are read from the registries
themselves: once a registry is imported (a plug-in registered into it) the tables stand aside.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from negvocab.builders import BUILTIN_BUILDERS
from negvocab.core.errors import InputError
from negvocab.core.plugins import loaded_plugins, plugin_modules
from negvocab.core.registry import Registry

__all__ = [
    "BUILD_COMMANDS",
    "BUILD_HELP",
    "BUILD_MODULES",
    "COMMANDS",
    "CONVENTIONS",
    "METHODS",
    "LazyCommand",
    "builders_known",
    "refuse_unknown_choices",
]


@dataclass(frozen=True)
class LazyCommand:
    """A command of the ``negvocab`` group: the module that registers it and its help's first paragraph."""

    module: str
    help: str


def _cmd(module: str, help: str) -> LazyCommand:
    return LazyCommand(f"negvocab.cli.{module}", help)


#: the built-in builders' ``build`` commands (hand-written and generated), in registry order
BUILD_COMMANDS = BUILTIN_BUILDERS
#: the ``build`` group's help with the built-in builders (negvocab.cli.build_generic.build_help)
BUILD_HELP = f"Build a vocabulary ({', '.join(BUILD_COMMANDS)})."

#: the ``negvocab`` group's commands in the order ``--help`` lists them (``build`` is made in app.py)
COMMANDS: dict[str, LazyCommand] = {
    "benchmarks": _cmd(
        "benchmarks",
        "List the named OOD benchmarks (--ood BENCHMARK=ROOT; then --id may be left out: the benchmark's\n"
        "own ID set is used) with each set's group and the files it expects under ROOT; --root ROOT checks\n"
        "which are there.",
    ),
    "map-classes": _cmd(
        "labelspace",
        "Map a label space's class names to WordNet 3.0 noun synsets; say how each was chosen and which\n"
        "names resolve to none (they stay, matched by name only).",
    ),
    "cache": _cmd(
        "cache",
        "List the embedding stores (model, weights fingerprint, activation, kind, precision, image\n"
        "preprocessing, templates, rows, size); --clear deletes them.",
    ),
    "coverage": _cmd(
        "coverage", "Which OOD classes the vocabulary misses, what they pass for, and which labels would help most."
    ),
    "demo": _cmd(
        "demo", "Run WordNet vocabulary -> filtering -> NegLabel and MCM -> metrics -> plot on a toy image set."
    ),
    "methods": _cmd(
        "discover", "The methods document: how every score, metric and convention is computed (results cite it)."
    ),
    "models": _cmd(
        "discover",
        "The open_clip models with pretrained weights (name and tag, as --model and --pretrained take them).",
    ),
    "embed": _cmd(
        "embed", "Export embeddings for your own analysis (float32, L2-normalised, rows aligned with rows.csv)."
    ),
    "classes": _cmd(
        "labels", "Print or export the ImageNet-1k label space: wnid, CLIP clean name, WordNet 3.0 synonyms."
    ),
    "candidates": _cmd("labels", "Export the WordNet 3.0 candidate pool of the WordNet vocabulary (unranked)."),
    "filter": _cmd(
        "labels",
        "Remove the ID class names (ImageNet-1k) and their WordNet synonyms from a vocabulary; say why\n"
        "(a count and a few examples per rule; -v: every removed label; -q, before or after 'filter': only the\n"
        "summary line). Class names of --id-classes are mapped to WordNet synsets first (see 'negvocab\n"
        "map-classes'): their synonyms and hyponyms go too.",
    ),
    "merge": _cmd("labels", "Union of vocabularies: labels in order of first occurrence, provenance merged."),
    "drop": _cmd(
        "labels",
        "Remove labels from a vocabulary; the output records what was removed, and keeps its order,\n"
        "provenance and caveats (the way to edit a vocabulary file by hand).",
    ),
    "info": _cmd("labels", "Size, source, deployability, per-source counts, hash and settings of a vocabulary file."),
    "published": _cmd(
        "published",
        "The anchors' published figures (FPR@95 and AUROC in percent, as published) with their exact\n"
        "settings, benchmark and ID split, kind, source and how each was checked; tables mark them published,\n"
        "beside negvocab's own rows of the same benchmark and ID split only.",
    ),
    "report": _cmd(
        "report",
        "One self-contained HTML page: results with CIs, score distributions and ROC, sweep plots,\n"
        "evading OOD images, coverage; one section per results folder, with a table of contents.",
    ),
    "score": _cmd(
        "score", "Score a VLM with one or more vocabularies on an ID and an OOD set; write a results folder."
    ),
    "sweep": _cmd(
        "score", "FPR@95 and AUROC against the vocabulary size M from one ranked vocabulary: a table and a plot."
    ),
    "subsample": _cmd(
        "subsample",
        "Mean and SD of FPR@95 over random subsets of n OOD images, the analytical FPC SD and the\n"
        "detectors' rank stability (the paper's Appendix C), for each OOD set on its own.",
    ),
    "table": _cmd(
        "table", "A table as in the paper from results folders: any rows x columns, means, intervals, captions."
    ),
    "build": _cmd("app", BUILD_HELP),
    "grid": _cmd("grid", "Experiment grids: models x vocabularies x OOD sets x methods (TOML)."),
}

#: the modules of the hand-written ``build`` commands, in the order their commands are listed; the
#: other builders get a generated command (negvocab.cli.build_generic) after them
BUILD_MODULES = ("negvocab.cli.build_llm", "negvocab.cli.build_offline", "negvocab.cli.build_wordnet")

#: the built-in scoring methods and their aliases, in registry order (negvocab/scoring/catalog.py)
METHODS: dict[str, tuple[str, ...]] = {
    "mcm": (),
    "glmcm": ("gl-mcm", "gl_mcm"),
    "neglabel": (),
    "eoe": (),
    "neglabel_eoe": ("neglabel+eoe", "neglabel-eoe"),
    "msp": ("maxsoftmax",),
    "maxlogit": ("max-logit", "max_logit"),
    "energy": (),
    "gen": (),
    "adaneg": (),
    "negrefine": (),
    "tanl": (),
    "oodd": (),
    "ants": (),
}

#: the FPR conventions (negvocab.scoring.metrics.CONVENTIONS)
CONVENTIONS = ("paper", "hendrycks", "openood")

#: the commands whose --method and --convention are checked before they are imported: whether their
#: --method may be repeated
CHOICE_OPTIONS: dict[str, bool] = {"score": True, "sweep": False, "coverage": False}

METHODS_MODULE = "negvocab.scoring.methods"
BUILDERS_MODULE = "negvocab.builders.registry"
HELP_FLAGS = ("--help", "-h")


def builders_known() -> bool:
    """Whether :data:`BUILD_COMMANDS` are all the builders: no code has read or added to the builder
    registry yet (a plug-in's builder is registered through it, so it is imported then)."""
    return BUILDERS_MODULE not in sys.modules


def _values(args: list[str], flag: str) -> list[str] | None:
    """The values of ``flag`` in ``args`` (``--flag V`` or ``--flag=V``), up to ``--``; None where a
    value is missing (click says so, as before)."""
    found = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == flag:
            if i + 1 == len(args):
                return None
            found.append(args[i + 1])
        elif arg.startswith(flag + "="):
            found.append(arg.partition("=")[2])
    return found


def refuse_unknown_choices(command: str, args: list[str]) -> None:
    """Raise the registry's :class:`InputError` for an unknown ``--method`` or ``--convention`` of
    ``command`` (its ``args``), from the built-in tables, so that it comes before any heavy import.

    Checked only where the tables are the whole truth: the method registry not imported yet (so no
    plug-in added to it), no plug-in named in ``$NEGVOCAB_PLUGINS`` still to load, and no help asked
    for. A value given twice to an option that takes one is left to the command, which refuses the
    repeat first."""
    if command not in CHOICE_OPTIONS or METHODS_MODULE in sys.modules or any(a in HELP_FLAGS for a in args):
        return
    if set(plugin_modules()) - set(loaded_plugins()):  # a plug-in still to load may add methods
        return
    methods = _values(args, "--method") or []
    if CHOICE_OPTIONS[command] or len(methods) == 1:
        registry: Registry[bool] = Registry("method", plugins=False)  # the built-ins' copy: no plug-in here
        for name, aliases in METHODS.items():
            registry.register(name, True, aliases=aliases)
        for value in methods:
            registry.canonical(value)  # the registry's own line for an unknown name
    conventions = _values(args, "--convention") or []
    if len(conventions) == 1 and conventions[0] not in CONVENTIONS:
        raise InputError(f"unknown --convention {conventions[0]!r}; choose one of {', '.join(CONVENTIONS)}")
