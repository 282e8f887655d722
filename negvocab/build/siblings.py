"""Deprecated: moved to :mod:`negvocab.builders.siblings`; this re-export goes in the next release."""

from __future__ import annotations

import warnings

from negvocab.builders.siblings import *  # noqa: F403

warnings.warn(
    "negvocab.build.siblings is deprecated; import from negvocab.builders.siblings", DeprecationWarning, stacklevel=2
)
