"""Deprecated: moved to :mod:`negvocab.builders.wordnet`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.wordnet import *  # noqa: F403

warnings.warn(
    "negvocab.build.wordnet is deprecated; import from negvocab.builders.wordnet", DeprecationWarning, stacklevel=2
)
