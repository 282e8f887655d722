"""OOD sets by name: every set given is kept under its own name, or the call is refused."""

from __future__ import annotations

import pytest

from negvocab.errors import InputError
from negvocab.evaluation.rows import named_ood_sets


class Named:
    def __init__(self, name):
        self.name = name


def test_keys_that_print_alike_are_refused_not_merged():
    with pytest.raises(InputError, match="two OOD sets share the name '1'"):
        named_ood_sets({1: Named("a"), "1": Named("b")})  # before: one of them was silently dropped
    with pytest.raises(InputError, match="two OOD sets share the name 'x'"):
        named_ood_sets([Named("x"), Named("x")])
    got = named_ood_sets({"a": Named("a"), "b": Named("b")})
    assert list(got) == ["a", "b"]
    for bad in ("", "  ", "mean"):
        with pytest.raises(InputError, match="is not allowed"):
            named_ood_sets({bad: Named("a")})
