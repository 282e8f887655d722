"""Public functions and commands validate their arguments: the package's own one-line errors, no tracebacks."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
from negvocab.cli import app
from negvocab.core.errors import InputError
from negvocab.labels.synonyms import SynonymFilter

E = np.eye(3, dtype=np.float32)


@pytest.fixture(scope="module")
def synonym_filter():
    return SynonymFilter()


def test_score_takes_lists_as_arrays_and_refuses_none():
    from_lists = negvocab.score("mcm", E.tolist(), E[:2].tolist())
    np.testing.assert_allclose(from_lists, negvocab.score("mcm", E, E[:2]))
    with pytest.raises(InputError, match="image_emb must be a numeric array, got NoneType"):
        negvocab.score("mcm", None, E)


def test_a_negative_seed_is_refused_with_random_grouping():
    with pytest.raises(InputError, match="seed must be >= 0, got -1"):
        negvocab.score("neglabel", E, E[:1], E, grouping="random", seed=-1)
    with pytest.raises(InputError, match="seed must be an integer, got 1.5"):
        negvocab.score("neglabel", E, E[:1], E, grouping="random", seed=1.5)


def test_the_synonym_filter_checks_what_it_is_given(synonym_filter):
    with pytest.raises(InputError, match="takes a Vocabulary, got list; for a list of labels use split"):
        synonym_filter.apply(["a"])
    with pytest.raises(InputError, match="takes a label string, got int 123"):
        synonym_filter.is_id(123)
    with pytest.raises(InputError, match="takes a label string, got NoneType"):
        synonym_filter.explain(None)


def test_explain_refuses_none_embeddings():
    with pytest.raises(InputError, match="image_emb must be a numeric array"):
        negvocab.explain(None, E, E, id_labels=list("abc"), neg_labels=list("def"))


@pytest.mark.parametrize("command", [["score", "--vocab", "v.txt"], ["sweep", "--vocab", "v.txt", "--sizes", "1"]])
def test_cli_negative_seed_is_one_line_before_any_work(tmp_path, command):
    (tmp_path / "v.txt").write_text("sofa\n")
    args = [
        *command,
        "--id",
        str(tmp_path),
        "--ood",
        str(tmp_path),
        "--grouping",
        "random",
        "--seed",
        "-1",
        "-o",
        str(tmp_path / "r"),
    ]
    args = [str(tmp_path / a) if a == "v.txt" else a for a in args]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 2 and r.stderr.strip() == "error: --seed must be >= 0, got -1"
    assert not (tmp_path / "r").exists()
