"""Deprecated: moved to :mod:`negvocab.builders.llm_classes`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.llm_classes import *  # noqa: F403

warnings.warn(
    "negvocab.build.llm_classes is deprecated; import from negvocab.builders.llm_classes",
    DeprecationWarning,
    stacklevel=2,
)
