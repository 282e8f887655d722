"""One result row: the same record from score, sweep and the grid; metrics checked against sklearn and
hand formulas; old files of every schema read back (fixtures written by the code before ResultRow)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import auc, average_precision_score, precision_recall_curve, roc_auc_score

import negvocab
from negvocab.core.errors import InputError
from negvocab.evaluation import evaluate, sweeps
from negvocab.evaluation.records import metrics_row
from negvocab.evaluation.row import ROW_COLUMNS, ResultRow, _caveats, file_row, interval, rows_from_frame, to_frame
from negvocab.evaluation.stored import read_results
from negvocab.grid.config import load_config
from negvocab.grid.work import Cell, _vocab_info, cell_row
from tests.evaluation.test_evaluate import FakeVLM, classes, sets  # noqa: F401 (fixtures)

DATA = Path(__file__).parent / "data"
#: the fields every path records alike (a sweep records no params; only the grid a cell digest)
SHARED = (
    "method", "model", "pretrained", "random_weights", "vocabulary", "vocab_source", "vocab_hash", "vocab_size",
    "deployable", "caveats", "ood_set", "convention", "tpr", "fpr", "auroc", "aupr_in", "aupr_out", "aupr_method",
    "n_id", "n_ood", "templates",
)  # fmt: skip


def _grid_config(tmp_path: Path, conventions: list[str], n_boot: int):
    (tmp_path / "v.txt").write_text("a\n")
    (tmp_path / "grid.toml").write_text(
        f'[grid]\ntemplates = "single"\nconventions = {json.dumps(conventions)}\nn_boot = {n_boot}\n'
        '[[models]]\nname = "fake"\nrandom_weights = true\n[id]\npath = "id"\n[ood]\nood = "ood"\n'
        '[vocabularies]\nw = "v.txt"\n[[methods]]\nname = "neglabel"\nparams = { groups = 4 }\n'
    )
    return load_config(tmp_path / "grid.toml")


@pytest.mark.parametrize("convention", ["paper", "openood"])
def test_score_sweep_and_grid_make_the_same_row(sets, classes, tmp_path, convention):  # noqa: F811
    vocab = negvocab.Vocabulary.from_labels([f"w{j}" for j in range(24)], source="wordnet")
    common = {"id_classes": classes, "templates": "single", "params": {"groups": 4}, "n_boot": 25}
    ev = evaluate.evaluate_vocabularies(FakeVLM(), *sets, {"w": vocab}, ["neglabel"], convention=convention, **common)
    sw = sweeps.sweep_vocabulary(FakeVLM(), *sets, vocab, [24], convention=convention, name="w", **common)
    cfg = _grid_config(tmp_path, [convention], 25)
    s = ev.scores["neglabel@w"]
    cell = Cell("fake", "w", "ood", "neglabel", convention, "d" * 32, "i", "o")
    grid = ResultRow.from_dict(cell_row(cfg, cell, s["id"], s["ood"], cfg.models[0], _vocab_info(vocab)))
    score, swept = ev.records[0], sw.records[0]
    assert (score.layout, swept.layout, grid.layout) == ("score", "sweep", "grid")
    for name in SHARED:
        assert getattr(score, name) == getattr(grid, name), name
        assert getattr(swept, name) == getattr(score, name), name
    for m in ("fpr", "auroc"):  # the same bootstrap draws in every path
        assert score.intervals[m] == swept.intervals[m] == grid.intervals[m]
    assert score.params == grid.params == {"groups": 4} and swept.M == 24
    assert (
        set(grid.intervals) == set(score.intervals) == set(swept.intervals) == {"fpr", "auroc", "aupr_in", "aupr_out"}
    )
    assert score.intervals == grid.intervals  # AUPR intervals too: one bootstrap in every path
    # one row on disk: the same keys in the same order, whichever path made it
    assert list(ev.rows[0]) == list(sw.rows[0]) == list(grid.to_dict()) == list(ROW_COLUMNS)


def _hand_fpr(ids: np.ndarray, oods: np.ndarray, convention: str, tpr: float = 0.95) -> float:
    if convention == "paper":  # ID-anchored threshold
        return float(np.mean(oods >= np.quantile(ids, 1 - tpr)))
    for t in np.sort(oods):  # openood: OOD positive (called at score <= t); the first t catching tpr of OOD
        if np.mean(oods <= t) >= tpr:
            return float(np.mean(ids <= t))
    raise AssertionError


@pytest.mark.parametrize("convention", ["paper", "openood"])
def test_metrics_equal_an_independent_computation(convention):
    rng = np.random.default_rng(1)
    ids, oods = rng.normal(1.0, 1.0, 200), rng.normal(0.0, 1.0, 80)
    row = metrics_row(ids, oods, ood_set="x", convention=convention, tpr=0.95, n_boot=0, seed=0, method="m")
    y = np.r_[np.ones(ids.size), np.zeros(oods.size)]
    s = np.r_[ids, oods]
    assert row.fpr == pytest.approx(_hand_fpr(ids, oods, convention), abs=1e-12)
    assert row.auroc == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    if convention == "paper":
        ap_in, ap_out = average_precision_score(y, s), average_precision_score(1 - y, -s)
    else:
        ap_in, ap_out = (auc(*precision_recall_curve(t, v)[1::-1]) for t, v in ((y, s), (1 - y, -s)))
    assert row.aupr_in == pytest.approx(ap_in, abs=1e-12) and row.aupr_out == pytest.approx(ap_out, abs=1e-12)
    assert (row.n_id, row.n_ood, row.positive) == (200, 80, "OOD" if convention == "openood" else "ID")
    d = row.to_dict()
    assert row.intervals == {} and "fpr_ci" not in d and d["fpr_ci_low"] is None and d["aupr_out_ci_high"] is None
    assert d["n_boot"] is None and list(d) == list(ROW_COLUMNS)
    with pytest.warns(DeprecationWarning, match="layout is ignored"):
        assert row.to_dict("grid") == d  # one row for every layout


def test_intervals_are_the_percentile_bootstrap_of_ood_resamples():
    rng = np.random.default_rng(2)
    ids, oods = rng.normal(1.0, 1.0, 60), rng.normal(0.0, 1.0, 25)
    row = metrics_row(ids, oods, ood_set="x", convention="paper", tpr=0.95, n_boot=50, seed=7, method="m")
    draws = np.random.default_rng(7).integers(0, oods.size, (50, oods.size))  # numpy's draws for seed 7
    aurocs = [roc_auc_score(np.r_[np.ones(60), np.zeros(25)], np.r_[ids, oods[d]]) for d in draws]
    assert row.intervals["auroc"] == pytest.approx(tuple(np.quantile(aurocs, [0.025, 0.975])), abs=1e-12)


@pytest.mark.parametrize(
    ("name", "layouts"),
    [("score_results.json", {"score"}), ("sweep_results.json", {"sweep", "reference"}), ("grid_cells.json", {"grid"})],
)
def test_old_files_of_each_schema_read_back_in_the_one_row(name, layouts):
    doc = json.loads((DATA / name).read_text())
    rows = [c["row"] for c in doc] if isinstance(doc, list) else [*doc["rows"], *doc.get("references", [])]
    recs = [ResultRow.from_dict(r) for r in rows]
    assert {r.layout for r in recs} == layouts
    for raw, rec in zip(rows, recs, strict=True):
        new = file_row(raw)
        assert list(new)[: len(ROW_COLUMNS)] == list(ROW_COLUMNS) and ResultRow.from_dict(new) == rec
        assert file_row(new) == new  # this version's row reads back as itself
        for key, value in raw.items():  # the same values: only the interval and encoded keys change shape
            if key in new and key not in ("caveats", "params", "ood_sets"):
                assert new[key] == value, key
        assert _caveats(new["caveats"]) == _caveats(raw.get("caveats")) and "name" not in new
        params = raw.get("params")
        assert new["params"] == (json.loads(params) if isinstance(params, str) else params)  # an object
        for m in ("fpr", "auroc"):
            pair = raw.get(f"{m}_ci") or [raw.get(f"{m}_ci_low"), raw.get(f"{m}_ci_high")]
            assert rec.intervals[m] == tuple(pair) == (new[f"{m}_ci_low"], new[f"{m}_ci_high"])
            assert f"{m}_ci" not in new


def test_old_rows_carry_what_they_said():
    grid = ResultRow.from_dict(json.loads((DATA / "grid_cells.json").read_text())[0]["row"])
    assert grid.caveats == {"oracle": "the OOD labels"} and grid.oracle and grid.params == {"groups": 2}
    assert grid.intervals["aupr_in"][0] < grid.aupr_in < grid.intervals["aupr_in"][1]
    score = [ResultRow.from_dict(r) for r in json.loads((DATA / "score_results.json").read_text())["rows"]]
    by = {(r.method, r.vocabulary, r.ood_set): r for r in score}
    assert by["neglabel", "o", "ninco"].caveats == {"oracle": ""} and not by["neglabel", "o", "ninco"].deployable
    assert by["neglabel", "v", "near-ood"].ood_sets == ("ninco",) and by["neglabel", "v", "mean"].n_ood_sets == 2
    assert by["neglabel", "v", "ninco"].extra["topk"] == 5 and by["mcm", "", "textures"].vocab_size == 0


def test_read_results_reads_every_kind_of_folder(tmp_path):
    score, sweep = json.loads((DATA / "score_results.json").read_text()), (DATA / "sweep_results.json").read_text()
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "results.json").write_text(json.dumps(score))
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "sweep.json").write_text(sweep)
    (tmp_path / "g" / "cells").mkdir(parents=True)
    cells = json.loads((DATA / "grid_cells.json").read_text())
    for c in cells:
        (tmp_path / "g" / "cells" / f"{c['digest']}.json").write_text(json.dumps(c))
    (tmp_path / "g" / "cells" / "x.failed.json").write_text('{"cell": ["a"], "error": "no"}')
    assert negvocab.read_results(tmp_path / "s") == [ResultRow.from_dict(r) for r in score["rows"]]
    got = read_results(tmp_path / "w" / "sweep.json")
    assert [r.layout for r in got] == ["sweep", "sweep", "reference"] and got[-1].vocabulary == "oracle"
    grid = negvocab.read_results(tmp_path / "g")
    assert sorted(r.convention for r in grid) == ["openood", "paper"] and all(r.layout == "grid" for r in grid)
    with pytest.raises(InputError, match="no results.json, sweep.json or grid cells/"):
        read_results(tmp_path)


def test_to_frame_round_trip():
    score = json.loads((DATA / "score_results.json").read_text())["rows"]
    sweep = json.loads((DATA / "sweep_results.json").read_text())
    grid = [c["row"] for c in json.loads((DATA / "grid_cells.json").read_text())]
    recs = [ResultRow.from_dict(r) for r in [*score, *sweep["rows"], *sweep["references"], *grid]]
    frame = to_frame(recs)
    assert len(frame) == len(recs) and frame["fpr_ci_low"].notna().all() and frame["fpr"].dtype == np.float64
    assert rows_from_frame(frame) == recs


def test_one_interval_reader_for_both_shapes():
    assert interval({"fpr_ci": [0.1, 0.2]}, "fpr") == (0.1, 0.2)
    assert interval({"fpr_ci_low": 0.1, "fpr_ci_high": 0.2}, "fpr") == (0.1, 0.2)
    assert interval({"fpr_ci_low": math.nan, "fpr_ci_high": math.nan}, "fpr") is None  # not bootstrapped
    assert interval({"fpr_ci": [None, None]}, "fpr") is None and interval({}, "auroc") is None


def test_a_row_missing_a_metric_is_one_line():
    with pytest.raises(InputError, match="a results row lacks auroc"):
        ResultRow.from_dict({k: 0 for k in ("method", "ood_set", "convention", "tpr", "fpr", "aupr_in", "aupr_out")})


def test_a_grid_row_with_unreadable_params_is_one_line():
    row = json.loads((DATA / "grid_cells.json").read_text())[0]["row"]
    with pytest.raises(InputError, match="params must be a JSON object"):
        ResultRow.from_dict({**row, "params": "{groups"})


def test_table_readers_read_old_and_new_folders_alike(tmp_path):
    """``negvocab table``'s reader (load_rows: folder_rows for score and sweep folders) over folders of
    the older shapes and of this version: the intervals in one shape, the numbers as they were."""
    from negvocab.grid.tidy import load_rows

    score = json.loads((DATA / "score_results.json").read_text())
    sweep = json.loads((DATA / "sweep_results.json").read_text())
    new = {**score, "rows": [file_row(r) for r in score["rows"]]}
    for name, file, doc in (("old", "results.json", score), ("new", "results.json", new), ("sw", "sweep.json", sweep)):
        (tmp_path / name).mkdir()
        (tmp_path / name / file).write_text(json.dumps(doc))
    old_rows, _, _ = load_rows([tmp_path / "old"])
    new_rows, _, _ = load_rows([tmp_path / "new"])
    assert len(old_rows) == len(new_rows) == len(score["rows"])
    for old, now, raw in zip(old_rows, new_rows, score["rows"], strict=True):
        for m in ("fpr", "auroc"):
            assert (
                (old[f"{m}_ci_low"], old[f"{m}_ci_high"])
                == tuple(raw[f"{m}_ci"])
                == (now[f"{m}_ci_low"], now[f"{m}_ci_high"])
            )
            assert old[m] == now[m] == raw[m] and f"{m}_ci" not in old
        assert old["aupr_in_ci_low"] is None and now["aupr_in_ci_low"] is None  # not bootstrapped then
    swept, _, _ = load_rows([tmp_path / "sw"])
    assert [r["vocabulary"] for r in swept] == ["wordnet@10", "wordnet@30", "oracle"]
    assert swept[-1]["fpr_ci_low"] == sweep["references"][0]["fpr_ci"][0]


def test_a_results_csv_row_with_empty_cells_reads_back_as_written():
    """A row of results.csv as the code writes it (``table_csv``: None as an empty cell, lists and objects as
    JSON text) reads back with ``from_dict`` as the row written: empty cells are missing values (None)."""
    import csv
    import io

    from negvocab.evaluation.records import ood_records
    from negvocab.report.results import table_csv

    rng = np.random.default_rng(0)
    s_id = rng.normal(1, 1, 40)
    s_ood = {"inaturalist": rng.normal(0, 1, 30), "ninco": rng.normal(0.5, 1, 20)}
    stream = {"test_time": True, "stream_order": "shuffled", "stream_seed": None, "stream_seeds": [0, 1]}
    recs = ood_records(
        s_id, s_ood, tpr=0.95, convention="paper", n_boot=20, seed=0, method="adaneg", model="m",
        pretrained=None, vocabulary="wn", params={"k": 3}, caveats={"oracle": "from the OOD labels"}, extra=stream,
    )  # fmt: skip
    written = [r.to_dict() for r in recs]
    read = list(csv.DictReader(io.StringIO(table_csv(written))))
    assert any(v == "" for r in read for v in r.values())  # empty cells: pretrained, M, the mean's aupr_method ...
    for want, got in zip(written, map(ResultRow.from_dict, read), strict=True):
        assert got.to_dict() == want
        assert got.pretrained is None and got.M is None and got.params == {"k": 3}
    assert ResultRow.from_dict(read[0]).intervals == recs[0].intervals  # the bounds as numbers
    assert ResultRow.from_dict(read[-1]).ood_sets is None and ResultRow.from_dict(read[-1]).n_ood_sets == 2


def test_one_result_kind_rule_in_one_spelling():
    from negvocab.evaluation import kinds, row

    assert row.result_kind is kinds.result_kind and row.RESULT_KINDS is kinds.RESULT_KINDS
    base = {"method": "m", "ood_set": "o", "convention": "paper", "tpr": 0.95, "fpr": 0.1, "auroc": 0.9}
    base |= {"aupr_in": 0.9, "aupr_out": 0.9, "n_id": 1, "n_ood": 1}
    assert ResultRow.from_dict({**base, "vocabulary": "wn", "test_time": True}).result_kind == "test_time"
    assert ResultRow.from_dict({**base, "vocabulary": "wn", "caveats": "oracle: x"}).result_kind == "oracle"
    assert ResultRow.from_dict({**base, "vocabulary": "wn"}).result_kind == "deployable"
    assert ResultRow.from_dict(base).result_kind == "baseline"
    # the older spelling, as a stored kind, reads as this one
    assert kinds.read_kind("test-time") == kinds.read_kind("test_time") == "test_time"
    assert kinds.read_kind("nonsense") is None and kinds.read_kind(None) is None
    assert kinds.result_kind({"vocabulary": "wn", "result_kind": "test-time"}) == "test_time"
