"""What makes an LLM run folder: the identity its requests share, where the folder is, and the checks of the
counts asked (labels per request, rounds, minimum labels, temperature). :mod:`negvocab.builders.llm` and
NegRefine's filter (:mod:`negvocab.builders.negrefine`) make their runs with these."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.paths import cache_dir
from negvocab.llm.journal import identity_hash
from negvocab.llm.prompts import PromptTemplate

__all__ = ["base_identity", "check_counts", "check_model", "run_folder"]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:40] or "model"


def run_folder(run_dir: str | os.PathLike[str] | None, task: str, model: str, identity: Mapping[str, Any]) -> Path:
    """``run_dir`` as given, else the cache's folder of this task, model and identity."""
    if run_dir is not None:
        return Path(run_dir)
    return cache_dir() / "llm-runs" / f"{task}-{_slug(model)}-{identity_hash(identity)[:12]}"


def check_model(model: str) -> str:
    """The chat model's name, stripped; one line where none is given."""
    if not isinstance(model, str) or not model.strip():
        raise InputError("no chat model name: give one, e.g. -m gpt-4o-mini (or the name your server serves)")
    return model.strip()


def check_counts(per: int, rounds: int, min_labels: int | None = None, temperature: float | None = None) -> None:
    """Labels per request and rounds >= 1, ``min_labels`` within the labels asked, a finite ``temperature`` >= 0."""
    if per < 1:
        raise InputError(f"labels per request must be >= 1, got {per}")
    if rounds < 1:
        raise InputError(f"rounds must be >= 1, got {rounds}")
    if min_labels is not None and not 1 <= min_labels <= per:
        raise InputError(f"min_labels must be between 1 and the {per} labels asked, got {min_labels}")
    if temperature is not None and not (math.isfinite(temperature) and temperature >= 0):
        raise InputError(f"temperature must be a finite number >= 0, got {temperature}")


def base_identity(
    task: str, model: str, template: PromptTemplate, n: int, temperature: float | None, min_labels: int
) -> dict[str, Any]:
    """What every request of a run folder shares. The classes and the round count are not in it:
    answers are journaled per (class or chunk, round) with a hash of what was asked, so a run
    grows to more rounds or classes in the same folder without asking anything twice."""
    return {
        "task": task,
        "model": model,
        "prompt": template.name,
        "prompt_sha256": template.sha256,
        "n": n,
        "min_labels": min_labels,
        "temperature": temperature,
        "schema": "LabelList",
    }
