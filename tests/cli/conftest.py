"""Fixtures shared with the folders these tests came from (one definition each, imported here)."""

from __future__ import annotations

from tests.data.conftest import cifar10_root, mos_root, openood_root  # noqa: F401
from tests.labels.conftest import classes, neglabel_pool, synfilter, wn  # noqa: F401
from tests.llm.conftest import endpoint, server, synonym_filter  # noqa: F401
from tests.scoring.conftest import model_args, tiny  # noqa: F401
