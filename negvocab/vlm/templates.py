"""Prompt templates: the presets of docs/methods.md#text-embeddings, custom lists and template files.

A template is a ``str.format`` string with one ``{}`` for the label. A template *set* may depend
on the label's part of speech (NegLabel's preset uses one template for nouns and another for
adjectives); all other presets use the same templates for every label.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeAlias, Union

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text

__all__ = [
    "CSP",
    "DEFAULT_POS",
    "INTERNEG",
    "TemplatesSpec",
    "NEGLABEL",
    "PAPER8",
    "PRESETS",
    "REDUCTIONS",
    "SINGLE",
    "TemplateSet",
    "check_reduce",
    "check_templates",
    "resolve_templates",
]

# paper8: the bare class name plus open_clip's SIMPLE_IMAGENET_TEMPLATES (7 OpenAI templates)
PAPER8: tuple[str, ...] = (
    "{}",
    "itap of a {}.",
    "a bad photo of the {}.",
    "a origami {}.",
    "a photo of the large {}.",
    "a {} in a video game.",
    "art of the {}.",
    "a photo of the small {}.",
)
SINGLE: tuple[str, ...] = ("a photo of a {}.",)
NEGLABEL: Mapping[str, tuple[str, ...]] = {"n": ("the nice {}",), "a": ("This is a {} photo",)}
# csp: CSP's code (class_names.py): preset_noun_prompt_templates for ID names and nouns,
# preset_adj_prompt_templates for conjugated adjectives ("red object")
CSP: Mapping[str, tuple[str, ...]] = {
    "n": (
        "a close-up photo of the nice {}.",
        "a photo with the nice {}.",
        "a good photo with the nice {}.",
        "a photo of the nice {}.",
        "{}",
        "the {}",
        "the good {}",
        "the nice {}",
    ),
    "a": ("{}", "a nice photo of {}", "a good photo of {}", "a close-up photo of {}"),
}
# interneg: InterNeg's code (clip_for_wordnet_prepare.py, text_prompt "nice"): one template per part of speech
INTERNEG: Mapping[str, tuple[str, ...]] = {"n": ("The nice {}.",), "a": ("This is a {} photo.",)}
PRESETS: tuple[str, ...] = ("paper8", "openai80", "neglabel", "single", "csp", "interneg")
DEFAULT_POS = "n"
#: how a label's template embeddings become one: ``unit_mean`` averages the L2-normalised prompt
#: embeddings (CLIP's zero-shot recipe), ``raw_mean`` averages the raw ones (CSP's code); both
#: normalise the mean. They differ as soon as the raw norms differ, as CLIP's do.
REDUCTIONS: tuple[str, ...] = ("unit_mean", "raw_mean")


@dataclass(frozen=True)
class TemplateSet:
    """Templates to ensemble, possibly per part of speech (``"n"``, ``"a"``).

    ``by_pos[pos]`` are the templates for labels with that part of speech; ``default`` is used for
    labels whose part of speech is unknown or has no entry. ``reduce`` (one of :data:`REDUCTIONS`)
    says how a label's template embeddings are averaged.
    """

    name: str
    default: tuple[str, ...]
    by_pos: Mapping[str, tuple[str, ...]] | None = None
    reduce: str = "unit_mean"

    def __post_init__(self) -> None:
        check_reduce(self.reduce)

    def with_reduce(self, reduce: str | None) -> TemplateSet:
        """This set with another template reduction (None: unchanged)."""
        return self if reduce is None or reduce == self.reduce else replace(self, reduce=check_reduce(reduce))

    def for_pos(self, pos: str | None) -> tuple[str, ...]:
        """The templates for a label with part of speech ``pos`` (None: the default)."""
        if self.by_pos and pos:
            p = "a" if pos[:1] == "s" else pos[:1]  # WordNet adjective satellites are adjectives
            return self.by_pos.get(p, self.default)
        return self.default

    def key(self, pos: str | None = None) -> str:
        """A short hash of the templates used for ``pos``: part of an embedding cache key."""
        payload = json.dumps(list(self.for_pos(pos)), ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def describe(self) -> dict[str, object]:
        """JSON-able description for vocabulary settings and manifests."""
        out: dict[str, object] = {"name": self.name, "templates": list(self.default)}
        if self.by_pos:
            out["by_pos"] = {k: list(v) for k, v in self.by_pos.items()}
        out["reduce"] = self.reduce
        return out


def check_reduce(reduce: str) -> str:
    """``reduce`` if it names a template reduction, else a one-line :class:`InputError`."""
    if reduce not in REDUCTIONS:
        raise InputError(f"reduce = {reduce!r}: must be one of {', '.join(REDUCTIONS)}", param="reduce")
    return reduce


def _openai80() -> tuple[str, ...]:
    from open_clip.zero_shot_metadata import OPENAI_IMAGENET_TEMPLATES

    return tuple(t("{}") for t in OPENAI_IMAGENET_TEMPLATES)


def _check(templates: Sequence[str], where: str) -> tuple[str, ...]:
    out = tuple(templates)
    if not out:
        raise InputError(f"{where}: no templates given")
    for t in out:
        if not isinstance(t, str):
            raise InputError(f"{where}: templates must be format strings with '{{}}', got {type(t).__name__}")
        try:
            filled = t.format("\0")
        except (IndexError, KeyError, ValueError) as e:
            raise InputError(f"{where}: template {t!r} is not a format string with one '{{}}' ({e})") from e
        if filled.count("\0") != 1:
            raise InputError(f"{where}: template {t!r} must contain exactly one '{{}}' for the label")
    return out


#: prompt templates as a caller names them: a preset ("paper8", "openai80", "neglabel", "single"), one
#: template with ``{}``, a list of them, a file, or a :class:`TemplateSet`
TemplatesSpec: TypeAlias = Union[str, Sequence[str], TemplateSet, "os.PathLike[str]"]


def resolve_templates(spec: TemplatesSpec = "paper8") -> TemplateSet:
    """A :class:`TemplateSet` from a preset name, a list of format strings, or a file.

    ``spec`` is one of the presets ``"paper8"`` (default), ``"openai80"``, ``"neglabel"``,
    ``"single"``, ``"csp"``, ``"interneg"`` (the last two: those methods' prompts per part of
    speech; ``"csp"`` also averages the raw prompt embeddings, ``reduce="raw_mean"``, as CSP's
    code); a list of format strings such as ``["a photo of a {}."]``; or the path of a text file
    with one template a line (blank lines and ``#`` comments skipped).
    """
    if isinstance(spec, TemplateSet):
        return spec
    if isinstance(spec, os.PathLike):
        return _from_file(Path(spec))
    if isinstance(spec, str):
        if spec == "paper8":
            return TemplateSet("paper8", PAPER8)
        if spec == "openai80":
            return TemplateSet("openai80", _openai80())
        if spec == "single":
            return TemplateSet("single", SINGLE)
        if spec == "neglabel":
            return TemplateSet("neglabel", NEGLABEL[DEFAULT_POS], dict(NEGLABEL))
        if spec == "csp":  # per part of speech, and the mean of the RAW prompt embeddings, as CSP's code
            return TemplateSet(spec, CSP[DEFAULT_POS], dict(CSP), reduce="raw_mean")
        if spec == "interneg":  # per part of speech, one template each, as InterNeg's code prompts
            return TemplateSet(spec, INTERNEG[DEFAULT_POS], dict(INTERNEG))
        if "{}" in spec:
            return TemplateSet("custom", _check([spec], "templates"))
        path = Path(spec).expanduser()
        if path.is_file():
            return _from_file(path)
        if path.is_dir():
            raise InputError(
                f"templates {spec!r} is a folder; give a file with one template (containing '{{}}') a line"
            )
        near = [repr(p) for p in difflib.get_close_matches(spec, PRESETS, n=2)]
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise InputError(
            f"unknown template preset {spec!r}; {hint}choose one of {', '.join(PRESETS)}, "
            "give a template containing '{}', or the path of a file with one template a line"
        )
    return TemplateSet("custom", _check(list(spec), "templates"))


def check_templates(spec: str) -> str:
    """``spec`` if :func:`resolve_templates` takes it (a preset's name is not resolved: no open_clip is
    imported), else its one-line :class:`InputError` (an unknown preset with the closest names), so a
    command refuses ``--templates paper80`` before any model loads."""
    if spec not in PRESETS:
        resolve_templates(spec)
    return spec


def _from_file(path: Path) -> TemplateSet:
    lines = read_text(path, "template file").splitlines()
    templates = [s for s in (line.strip() for line in lines) if s and not s.startswith("#")]
    return TemplateSet(f"file:{path.name}", _check(templates, str(path)))
