"""Suite-wide settings: offline, deterministic, CPU unless a test asks for CUDA."""

from __future__ import annotations

import os

# Tests never reach a model hub or an LLM host.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.pop("OPENAI_API_KEY", None)
os.environ.pop("OPENAI_BASE_URL", None)

import pytest

#: the longest tests (minutes each) and the Ray tests (one xdist worker, in turn) go first, so that
#: with ``pytest -n`` they start at once and the other workers share the rest; order is otherwise kept
FIRST = (
    "tests/test_readme.py",
    "tests/grid/test_grid_ray.py",
    "tests/grid/test_grid_ray_address.py",
    "tests/notebooks/",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The longest tests first; skip ``@pytest.mark.gpu`` tests cleanly where CUDA is not available."""
    items.sort(
        key=lambda item: next((i for i, prefix in enumerate(FIRST) if item.nodeid.startswith(prefix)), len(FIRST))
    )
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private embedding/data cache for one test (NEGVOCAB_CACHE_DIR)."""
    path = tmp_path / "cache"
    monkeypatch.setenv("NEGVOCAB_CACHE_DIR", str(path))
    return path


@pytest.fixture
def restored_registries():
    """The method, parameter, builder and benchmark registries as they were before the test: a test
    that registers entries the way a user does (the docs' blocks) leaves no entry for later tests."""
    from negvocab.builders import registry as builders
    from negvocab.data import benchmarks
    from negvocab.scoring import methods

    regs = [methods.REGISTRY, builders._BUILDERS, benchmarks.REGISTRY]
    saved = [(dict(r._entries), dict(r._aliases)) for r in regs]
    params = dict(methods.PARAMS)
    yield
    for r, (entries, aliases) in zip(regs, saved, strict=True):
        r._entries, r._aliases = entries, aliases
    methods.PARAMS.clear()
    methods.PARAMS.update(params)
