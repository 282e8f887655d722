"""Deprecated: moved to :mod:`negvocab.builders.oracle`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.oracle import *  # noqa: F403

warnings.warn(
    "negvocab.build.oracle is deprecated; import from negvocab.builders.oracle", DeprecationWarning, stacklevel=2
)
