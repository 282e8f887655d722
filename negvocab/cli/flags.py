"""Library parameter names shown as CLI flags in error lines, and the flags of the method parameters.

A method parameter's flag is derived from its name (:func:`param_flag`: ``top_classes`` ->
``--top-classes``), but for a few historic spellings (:data:`HISTORIC_FLAGS`); the commands record
the flags of their own options (:func:`reserve_flags`), which no parameter may take.

The library's errors name its parameters (``need a vocabulary (vocabularies)``, ``raise top_k``,
``order='given'``) and list them in :attr:`negvocab.core.errors.NegvocabError.param`; the CLI shows
each as the flag that sets it (``--vocab``, ``--top-k``, ``--order given``) with
:func:`cli_message`, as :meth:`negvocab.scoring.methods.Param.validate` does with ``cli=True``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from negvocab.core.errors import NegvocabError
from negvocab.scoring import methods

__all__ = ["COMMAND_FLAGS", "HISTORIC_FLAGS", "PARAM_FLAGS", "cli_message", "flag_of", "param_flag", "reserve_flags"]

#: method parameters whose flag is not ``--`` + their name with dashes: the spellings users know
HISTORIC_FLAGS: dict[str, str] = {"T": "--temperature", "penalty_T": "--penalty-temperature", "lam": "--lambda"}

#: flags that commands use for options of their own (flag -> "negvocab score", ...): a parameter's flag
#: may not be one of them, or the command could not offer it. Filled as the commands are built.
COMMAND_FLAGS: dict[str, str] = {}


def reserve_flags(owner: str, flags: Iterable[str]) -> None:
    """Record ``flags`` as options of ``owner`` (a command) that no registered parameter may take."""
    for flag in flags:
        COMMAND_FLAGS.setdefault(flag, owner)


def param_flag(name: str) -> str:
    """The flag of a method, run or metric parameter: the flag its :class:`~negvocab.Param` was given (for
    one release), a historic spelling, or ``--`` and its name with dashes (``top_classes`` -> ``--top-classes``).

    >>> param_flag("top_classes"), param_flag("T")
    ('--top-classes', '--temperature')
    """
    spec = methods.PARAMS.get(name) or methods.RUN_PARAMS.get(name) or methods.EVALUATION_PARAMS.get(name)
    given = spec.flag if spec is not None else None
    return given or HISTORIC_FLAGS.get(name) or "--" + name.replace("_", "-")


#: library parameter -> the CLI flag that sets it (the method parameters come from their registry)
PARAM_FLAGS: dict[str, str] = {
    "vocabularies": "--vocab",
    "vocabulary": "--vocab",
    "order": "--order",
    "rows_by": "--rows",
    "cols_by": "--cols",
    "where": "--where",
    "classes": "--classes",
    "batch": "--batch",
    "levels": "--levels",
    "size": "--size",
    "top_k": "--top-k",
    "quantile": "--quantile",
    "threshold": "--threshold",
    "pretrained": "--pretrained",
    "random_weights": "--random-weights",
    "tag": "--tag",
    "model": "--model",
    "name": "--model",  # VLM(name, ...)
    "device": "--device",
    "precision": "--precision",
    "run_dir": "--run-dir",
    "root": "--image-root",  # image_list(path, root=...)
    "allow_outside_root": "--allow-outside-root",
    "base_url": "--base-url",
    "overwrite": "--overwrite",
    "prices": "--price-in/--price-out",
    "max_rounds_used": "--max-rounds-used",
    "request_timeout": "--request-timeout",
    "chunk_size": "--chunk-size",
    "classes_per_request": "--classes-per-request",
    "text_chunk_size": "--text-chunk-size",
    "n_candidates": "--n-candidates",
    "candidates": "--candidates",
    "n_boot": "--n-boot",
    "seed": "--seed",
    "index": "--index",
    "explain_k": "--explain",
    # outputs: negvocab table's bold
    "bold_by": "--bold-by",
    "level": "--level",
    "mix_kinds": "--mix-kinds",
    "across": "--compare-across",
    "id_ood_ratio": "--id-ood-ratio",  # AdaNeg's stream mix
    "phases": "--stream-phases",  # temporal-shift streams
    "hints": "--hint",  # label spaces
    "id_classes": "--id-classes",  # label spaces
    # the tuning split of negvocab score
    "criterion": "--tune-criterion",
    "grid": "--tune-grid",
    "tuned": "--tune-id",
}


def flag_of(param: str) -> str | None:
    """The CLI flag of a library parameter (a method parameter's from :func:`param_flag`), or None."""
    if param in PARAM_FLAGS:
        return PARAM_FLAGS[param]
    return param_flag(param) if param in methods.PARAMS else None


def _as_flag(flag: str, value: str | None) -> str:
    """``flag`` with the value a message gave the parameter (``order='given'`` -> ``--order given``)."""
    if value is None or value == "True":
        return flag
    return f"{flag} {value.strip(chr(39) + chr(34))}"


def _valued_flag(flag: str, match: re.Match[str]) -> str:
    return _as_flag(flag, match.group(1))


def cli_message(error: NegvocabError) -> str:
    """``error``'s line with each parameter it names (:attr:`~NegvocabError.param`) shown as its flag.

    ``name=value`` becomes ``--flag value`` (``--flag`` alone for ``True``) wherever it is written;
    a message without that form has its first bare ``name`` shown as ``--flag``.
    """
    text = str(error)
    for param in getattr(error, "param", ()):
        flag = flag_of(param)
        if flag is None:
            continue
        # each name=value (a quoted string or one token), or else the first bare name: parameter names
        # are often words too ("1000 classes"), so a message names a parameter once, or as name=value
        word = rf"(?<![\w.-]){re.escape(param)}"
        valued = re.compile(rf"{word}=('[^']*'|\"[^\"]*\"|[\w./:+-]*[\w/])")
        if valued.search(text):
            text = valued.sub(functools.partial(_valued_flag, flag), text)
        else:
            text = re.sub(rf"{word}(?![\w-])", flag.replace("\\", "\\\\"), text, count=1)
    return text
