"""Deprecated: moved to :mod:`negvocab.builders.llm_merge`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.llm_merge import *  # noqa: F403

warnings.warn(
    "negvocab.build.llm_merge is deprecated; import from negvocab.builders.llm_merge", DeprecationWarning, stacklevel=2
)
