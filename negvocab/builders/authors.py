"""The authors' published settings, one table: what replays NegLabel's, CSP's, InterNeg's and NegRefine's code.

``negvocab build csp --authors`` (and ``interneg``) fills every option of :data:`AUTHORS` the command
line leaves unset; ``negvocab score --authors csp`` fills the scoring side of the same setting (NegLabel's
grouping as their code draws it, their group count, templates and reduction), refusing a flag given
beside it with another value (:func:`authors_score`). docs/methods.md and docs/howto/csp_interneg.md say
where each value comes from.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from negvocab.core.errors import InputError

__all__ = ["AUTHORS", "AuthorsSetting", "authors_score", "authors_setting", "score_methods"]


@dataclass(frozen=True)
class AuthorsSetting:
    """One method's published setting: builder options, and the ``negvocab score`` settings that go with
    them (option name -> value: ``method`` a list of methods, ``templates`` a preset, the rest scorer
    parameters).

    Parameters
    ----------
    build : mapping str -> value
        The builder's options (``negvocab build NAME --authors``).
    score : mapping str -> value
        The scoring settings (``negvocab score --authors NAME``).
    source : str
        Where the values were read in the authors' code.
    """

    build: Mapping[str, Any] = field(default_factory=dict)
    score: Mapping[str, Any] = field(default_factory=dict)
    source: str = ""

    @property
    def score_flags(self) -> str:
        """The scoring settings as ``negvocab score`` flags (``--method neglabel --groups 100 ...``)."""
        return " ".join(f"{_flag(k)} {_text(v)}" for k, vs in self.score.items() for v in _many(vs))


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _many(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# the templates presets name the reduction too: "csp" averages the raw prompt embeddings (its code)
_NEGLABEL_GROUPS = {"grouping": "neglabel", "groups": 100, "seed": 0}

AUTHORS: Mapping[str, AuthorsSetting] = {
    "csp": AuthorsSetting(
        build={"ratio": 0.15, "synonym_filter": False, "templates": "csp", "seed": 0, "quantile": 0.95},
        score={"method": ["neglabel"], **_NEGLABEL_GROUPS, "templates": "csp"},
        source="CSP's custom_config (neg_topk 0.15, pencentile 0.95, seed 0) and clip_ood.py (ngroup 100)",
    ),
    "interneg": AuthorsSetting(
        build={"synonym_filter": False, "split": "interneg", "shots": 16, "templates": "interneg"},
        score={"templates": "interneg"},
        source="InterNeg's clip_fixed_ood_prompt.py (exact-name Deduplication only, its split) and 16-shot prototypes",
    ),
    "neglabel": AuthorsSetting(
        score={"method": ["neglabel"], **_NEGLABEL_GROUPS, "templates": "neglabel"},
        source="NegLabel's custom_config/clip.py (ngroup 100, prompt_idx 85: 'the nice {}'), multi_modal.py "
        "('This is a {} photo' for adjectives) and clip_ood.py (torch.randperm, SEED 0); its vocabulary: "
        "negvocab build wordnet --ratio 0.15",
    ),
    "negrefine": AuthorsSetting(
        score={"method": ["negrefine"], **_NEGLABEL_GROUPS, "templates": "csp"},
        source="NegRefine's clip_ood.py (CSP's templates, raw means, NegLabel's grouping); its vocabulary: "
        "negvocab build csp --authors, then negvocab build negrefine",
    ),
}


def authors_setting(method: str) -> AuthorsSetting | None:
    """The published setting of ``method`` (a builder or scoring method name), or None where there is none."""
    return AUTHORS.get(method)


def score_methods() -> list[str]:
    """The methods whose published setting has a scoring side (what ``score --authors`` takes)."""
    return [name for name, s in AUTHORS.items() if s.score]


def authors_score(method: str, given: Mapping[str, Any], explicit: Collection[str]) -> dict[str, Any]:
    """The scoring settings of ``method``'s published setting over ``given`` (option name -> value as
    parsed): each setting of the table replaces its option's value; an option in ``explicit`` (given on
    the command line) with another value is refused in one line, naming both, before anything runs.
    Returns option name -> value for every option the setting fills."""
    setting = authors_setting(method)
    if setting is None or not setting.score:
        raise InputError(
            f"--authors {method!r}: no published scoring setting; choose one of {', '.join(score_methods())}"
        )
    for name, value in setting.score.items():
        if name in explicit and _many(given.get(name)) != _many(value):
            shown = " ".join(f"{_flag(name)} {_text(v)}" for v in _many(given.get(name)))
            wanted = " ".join(f"{_flag(name)} {_text(v)}" for v in _many(value))
            raise InputError(
                f"--authors {method} sets {wanted}, and {shown} was given: drop one of them "
                "(the authors' setting is replayed whole)"
            )
    return {name: list(value) if isinstance(value, (list, tuple)) else value for name, value in setting.score.items()}
