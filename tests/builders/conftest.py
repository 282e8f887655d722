"""Fixtures shared with the folders these tests came from (one definition each, imported here)."""

from __future__ import annotations

from tests.llm.conftest import endpoint, server, synonym_filter  # noqa: F401
from tests.vlm.conftest import _few_threads, image_dir, rn50, tiny, vit  # noqa: F401
