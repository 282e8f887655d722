"""Fixtures shared with the folders these tests came from (one definition each, imported here)."""

from __future__ import annotations

from tests.scoring.conftest import model_args, tiny  # noqa: F401
