"""The glossary rename pass: each old spelling still works for one release, with a DeprecationWarning,
and gives exactly what the new spelling gives; both spellings at once are refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import negvocab
from negvocab.builders.catalog import EoeOptions, MinedOptions, WordnetOptions
from negvocab.builders.wordnet import check_percentile, farthest_first
from negvocab.core.deprecation import rename_keys, renamed_kwargs
from negvocab.core.errors import InputError
from negvocab.scoring.metrics import bootstrap_ci, evaluate


def test_renamed_kwargs_maps_the_old_keyword_and_warns():
    @renamed_kwargs(old="new")
    def f(*, new: int) -> int:
        return new * 2

    with pytest.warns(DeprecationWarning, match="'old' is renamed 'new'"):
        assert f(old=3) == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(new=3) == 6  # the new name warns about nothing
    with pytest.raises(InputError, match="give new .* or old .*not both"):
        f(old=1, new=2)


def test_rename_keys_leaves_other_keys_alone():
    with pytest.warns(DeprecationWarning):
        got = rename_keys({"pool": 5, "size": 3}, {"pool": "n_candidates"}, "here")
    assert got == {"n_candidates": 5, "size": 3}
    assert rename_keys({"size": 3}, {"pool": "n_candidates"}, "here") == {"size": 3}


def test_farthest_first_percentile_is_quantile():
    rng = np.random.default_rng(0)
    cands, ids = rng.normal(size=(30, 8)), rng.normal(size=(7, 8))
    new = farthest_first(cands, ids, quantile=0.8)
    with pytest.warns(DeprecationWarning, match="percentile"):
        old = farthest_first(cands, ids, percentile=0.8)
    np.testing.assert_array_equal(new[0], old[0])
    np.testing.assert_array_equal(new[1], old[1])
    # and the level matters: a wrong mapping (e.g. to the default 0.95) would give other distances
    assert not np.array_equal(new[1], farthest_first(cands, ids, quantile=0.95)[1])
    with pytest.warns(DeprecationWarning), pytest.raises(InputError, match="quantile must be in"):
        check_percentile(95)


@pytest.mark.parametrize(
    ("model", "old", "new"),
    [
        (WordnetOptions, {"percentile": 0.9, "pool": 7}, {"quantile": 0.9, "n_candidates": 7}),
        (MinedOptions, {"images": "x", "pool": "wordnet:all", "chunk_size": 9}, None),
        (EoeOptions, {"model": "m", "chunk_size": 4}, {"model": "m", "classes_per_request": 4}),
    ],
)
def test_builder_options_read_their_old_keys(model, old, new):
    new = new or {"images": "x", "candidates": "wordnet:all", "text_chunk_size": 9}
    with pytest.warns(DeprecationWarning):
        got = model.model_validate(old)
    assert got == model.model_validate(new)
    with pytest.raises(Exception, match="not both"):
        model.model_validate({**old, **new})


def test_bootstrap_alpha_is_one_minus_level():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=40), rng.normal(size=25) + 0.3
    new = bootstrap_ci("fpr", a, b, n_boot=50, level=0.9)
    with pytest.warns(DeprecationWarning, match="alpha"):
        old = bootstrap_ci("fpr", a, b, n_boot=50, alpha=0.1)
    assert new == old and new.level == 0.9
    # the default is bit-identical to the old default alpha=0.05 (quantiles at 0.025/0.975, level 0.95)
    values = negvocab.scoring.metrics.bootstrap_values("fpr", a, b, n_boot=50)
    lo, hi = np.quantile(values, [0.025, 0.975])
    ci = bootstrap_ci("fpr", a, b, n_boot=50)
    assert (ci.low, ci.high, ci.level) == (float(lo), float(hi), 0.95)
    with pytest.warns(DeprecationWarning):
        assert evaluate(a, b, n_boot=20, alpha=0.1) == evaluate(a, b, n_boot=20, level=0.9)


def test_a_moved_module_imports_under_its_old_path_as_the_same_module_with_a_warning():
    """Each old path of MOVED_MODULES is the new module itself (one object: monkeypatching either patches
    both), warned about once per import, and a path never moved is still an error."""
    import importlib
    import subprocess
    import sys

    from negvocab.core.deprecation import MOVED_MODULES

    code = (
        "import warnings, importlib, negvocab, sys\n"
        "warnings.simplefilter('error')\n"
        f"moved = {dict(MOVED_MODULES)!r}\n"
        "for old, new in moved.items():\n"
        "    try:\n"
        "        importlib.import_module(old)\n"
        "    except DeprecationWarning as w:\n"
        "        assert old in str(w) and new in str(w), w\n"
        "    else:\n"
        "        raise SystemExit(f'no warning for {old}')\n"
        "warnings.simplefilter('ignore')\n"
        "for old, new in moved.items():\n"
        "    assert importlib.import_module(old) is importlib.import_module(new), old\n"
        "from negvocab.grid import tables\n"
        "assert tables.__name__ == 'negvocab.grid.tidy'\n"
        "try:\n"
        "    importlib.import_module('negvocab.nowhere')\n"
        "except ModuleNotFoundError:\n"
        "    print('ok')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
    for new in MOVED_MODULES.values():  # every home exists
        importlib.import_module(new)
