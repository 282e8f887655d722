"""Deprecated: moved to :mod:`negvocab.builders.mined`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.mined import *  # noqa: F403

warnings.warn(
    "negvocab.build.mined is deprecated; import from negvocab.builders.mined", DeprecationWarning, stacklevel=2
)
