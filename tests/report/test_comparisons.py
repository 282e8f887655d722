"""Comparisons in the table's scope: its filters kept, MCM tested beside the vocabularies, models compared."""

from __future__ import annotations

import numpy as np
import pytest

from negvocab.core.errors import InputError
from negvocab.evaluation.compare import metric_value, paired_bootstrap
from negvocab.report.comparisons import comparisons


def _grid(rng):
    """Two models x (wordnet, handpicked, mcm) x two conventions on the same images; rows and a getter."""
    img_id, img_ood = rng.normal(1, 1, 50), rng.normal(0, 1, 40)
    scores = {}
    for k, model in enumerate(("m0", "m1")):
        entries = (("wordnet", "neglabel"), ("hand", "neglabel"), ("", "mcm"))
        for gap, (vocab, method) in zip((1.5, 0.2, 0.0), entries, strict=True):
            scores[(model, vocab, method)] = (
                img_id + gap + k + rng.normal(0, 0.3, 50),
                {"ssb": img_ood + rng.normal(0, 0.3, 40)},
            )
    rows = [
        {
            "model": m, "vocabulary": v, "method": meth, "ood_set": "ssb", "convention": conv, "tpr": 0.95,
            "fpr": metric_value("fpr", s[0], s[1]["ssb"], tpr=0.95, convention=conv), "n_id": 50, "n_ood": 40,
        }
        for (m, v, meth), s in scores.items()
        for conv in ("paper", "openood")
    ]  # fmt: skip
    return rows, lambda m, v, meth: scores.get((m, v, meth)), scores


def test_the_tables_filters_are_kept_and_mcm_is_tested():
    rows, get, scores = _grid(np.random.default_rng(0))
    said = comparisons(rows, get, ood_set="ssb", n_boot=60, seed=2, where={"model": "m0", "convention": "paper"})
    assert all("openood" not in s and "m1" not in s for s in said)  # the table's model and convention only
    assert len(said) == 3  # wordnet-hand, wordnet-mcm, hand-mcm
    line = next(s for s in said if "wordnet" in s and "mcm (no vocabulary)" in s)
    want = paired_bootstrap(*scores[("m0", "wordnet", "neglabel")], *scores[("m0", "", "mcm")], n_boot=60, seed=2)
    assert f"m0: {100 * want.diff:+.2f} [{100 * want.low:+.2f}, {100 * want.high:+.2f}]" in line
    assert ("beats" in line) == (want.verdict in ("a", "b"))


def test_models_are_compared_where_the_table_compares_models():
    rows, get, scores = _grid(np.random.default_rng(1))
    said = comparisons(rows, get, ood_set="ssb", n_boot=60, seed=2, where={"convention": "paper"}, across="models")
    assert len(said) == 3 and all(s.startswith(("m0", "m1")) for s in said)  # one per entry: wordnet, hand, mcm
    line = next(s for s in said if ", wordnet, neglabel" in s)
    want = paired_bootstrap(
        *scores[("m0", "wordnet", "neglabel")], *scores[("m1", "wordnet", "neglabel")], n_boot=60, seed=2
    )
    assert f"wordnet: {100 * want.diff:+.2f} [{100 * want.low:+.2f}, {100 * want.high:+.2f}]" in line
    assert "of 1 entries" in line and "models" not in line.split("(")[0]
    with pytest.raises(InputError, match="across must be vocabularies or models"):
        comparisons(rows, get, across="vocabs")
