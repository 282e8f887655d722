"""Deprecated: moved to :mod:`negvocab.builders.llm`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.llm import *  # noqa: F403

warnings.warn("negvocab.build.llm is deprecated; import from negvocab.builders.llm", DeprecationWarning, stacklevel=2)
