"""Where negvocab keeps data it makes: the user cache directory (overridable)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["CACHE_ENV", "cache_dir"]

CACHE_ENV = "NEGVOCAB_CACHE_DIR"


def cache_dir() -> Path:
    """``$NEGVOCAB_CACHE_DIR`` if set, else the platform's user cache dir for negvocab."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("negvocab"))
