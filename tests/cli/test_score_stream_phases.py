"""``negvocab score --stream-phases``: the MOS four streamed in the phase order with the state carried
over, every row recording the phase order and its set's phase, the footnote saying so."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from negvocab.cli import app

runner = CliRunner()


def _args(tiny, model_args, out, sets):
    oods = [a for name in sets for a in ("--ood", f"{name}={tiny / 'ood'}")]
    return [
        "score", "--vocab", str(tiny / "negA.txt"), "--id", str(tiny / "id"), *oods, "--no-report", "--n-boot", "0",
        "-o", str(out), *model_args, "--method", "oodd", "--oodd-base", "mcm", "--oodd-queue", "3",
        "--stream-batch", "2", "--stream-phases", "tisp", "--id-ood-ratio", "1",
    ]  # fmt: skip


def test_score_streams_the_phases_in_order_and_records_them(tiny, model_args, tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(app, _args(tiny, model_args, out, ("sun", "places", "textures", "inaturalist")))
    assert r.exit_code == 0, r.output
    assert "phases tisp, the state carried over" in r.output
    res = json.loads((out / "results.json").read_text())
    rows = [row for row in res["rows"] if row["method"] == "oodd"]
    assert rows and all(row["stream_phases"] == "tisp" and row["id_ood_ratio"] == 1.0 for row in rows)
    phase = {row["ood_set"]: row.get("stream_phase") for row in rows}
    assert [phase[s] for s in ("textures", "inaturalist", "sun", "places")] == [1, 2, 3, 4]
    assert res["stream"]["phases"] == "tisp"
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert "stream_phases" in header and "stream_phase" in header


def test_score_refuses_phases_without_their_sets(tiny, model_args, tmp_path):
    r = runner.invoke(app, _args(tiny, model_args, tmp_path / "res", ("places", "textures", "inaturalist")))
    assert r.exit_code != 0
    assert "missing sun" in r.output and "Traceback" not in r.output
