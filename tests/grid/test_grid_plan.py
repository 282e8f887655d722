"""``negvocab grid plan``: the counts come from the grid's own files, the cache holdings follow a
run, a set not on disk needs --size, and the estimate is the stated formula of the measured costs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from negvocab.grid.plan import ModelPlan, plan_lines
from tests.grid.conftest import ID_NAMES, VOCAB_A, VOCAB_B

CLI = [sys.executable, "-c", "from negvocab.cli import main; main()"]


def _plan(*args):
    return subprocess.run([*CLI, "grid", "plan", *map(str, args)], capture_output=True, text=True, timeout=600)


def _row(out, model):
    return next(line.split() for line in out.splitlines() if line.startswith(model))


def test_plan_counts_probes_and_sees_what_the_cache_holds(grid_toml, tmp_path):
    r = _plan(grid_toml, "--random-weights", "--workers", "1,3")
    assert r.returncode == 0, r.stderr[-2000:]
    images = 24 + 10 + 7 + 9
    labels = len(ID_NAMES) + len(VOCAB_A) + len(VOCAB_B)  # A's sizes are heads of one file: encoded once
    units, n_images, cached, n_labels, prompts = _row(r.stdout, "TinyA")[1:6]
    assert (int(units), int(n_images), int(cached), int(n_labels), int(prompts)) == (
        4 + 2,
        images,
        0,
        labels,
        labels,
    )  # templates "single"
    assert f"{2 * 5 * 3 * 2} cells" in r.stdout  # models x (4 vocabularies x neglabel + mcm) x OOD sets x conventions
    assert "estimate on 1 worker:" in r.stdout and "estimate on 3 workers:" in r.stdout and "RANDOM weights" in r.stdout
    import negvocab

    negvocab.run_grid(grid_toml, tmp_path / "out")
    again = _plan(grid_toml, "--random-weights", "--workers", "1")
    assert int(_row(again.stdout, "TinyA")[3]) == images and int(_row(again.stdout, "TinyB")[3]) == images


def test_a_set_not_on_disk_needs_its_size(grid_toml):
    grid_toml.write_text(grid_toml.read_text().replace('oodC = "oodC"', 'oodC = "oodC"\nFar = "/no/such/folder"'))
    r = _plan(grid_toml, "--no-probe")
    assert r.returncode == 2 and "--size Far=N" in r.stderr and "Traceback" not in r.stderr
    r = _plan(grid_toml, "--no-probe", "--size", "Far=12,000")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (
        int(_row(r.stdout, "TinyA")[2].replace(",", "")) == 24 + 10 + 7 + 9 + 12_000 and "Far: not on disk" in r.stdout
    )


def test_the_estimate_is_work_over_workers_plus_loads():
    p = ModelPlan(
        "M",
        units=5,
        images=1000,
        images_cached=200,
        labels=10,
        prompts=80,
        load_s=4.0,
        image_s=0.01,
        prompt_s=0.002,
        device="cpu",
    )
    work = 800 * 0.01 + 80 * 0.002
    assert p.wall_s(1) == pytest.approx(work + 4.0)
    assert p.wall_s(8) == pytest.approx(work / 8 + 4.0 * 5 / 8)  # only 5 units: 5 workers load the model
    lines = plan_lines([p, ModelPlan("N", error="unknown open_clip model")], [1, 8])
    assert any("probe failed: unknown open_clip model" in x for x in lines)
    assert any("without 1 model(s)" in x for x in lines) and any("CPU" in x for x in lines)


def test_the_paper_grid_file_is_the_papers_full_study():
    """examples/paper_grid.toml: 8 VLMs x {WordNet M=5000, GPT siblings, WN+GPT, EOE, oracle} x
    {Fi-ImageNet-1k + 12 other OOD sets} x the methods, with a request per unit kind."""
    from pathlib import Path

    import negvocab

    cfg = negvocab.load_grid(Path(__file__).resolve().parents[2] / "examples" / "paper_grid.toml", random_weights=True)
    assert len({m.name for m in cfg.models}) == 8
    assert [n for v in cfg.vocabularies for n in v.names()] == ["wordnet@5000", "gpt", "wordnet_gpt", "eoe", "oracle"]
    names = [s.name for s in cfg.ood_sets]
    assert names[0] == "Fi-ImageNet-1k" and len(set(names[1:])) == 12
    assert {m.name for m in cfg.methods} == {"neglabel", "mcm", "eoe"}
    r = cfg.resources
    assert (
        r.unit("image").num_gpus == 1
        and r.unit("score").num_gpus == 0
        and r.unit("text").loader_workers() < r.unit("image").loader_workers()
    )


def test_the_ray_extra_brings_ray_client():
    """``pip install 'negvocab[ray]'`` installs what a ray:// address needs (grpcio, through ray[client])."""
    import tomllib
    from pathlib import Path

    doc = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert any(req.replace(" ", "").startswith("ray[client]") for req in doc["project"]["optional-dependencies"]["ray"])
    pytest.importorskip("ray")
    import grpc  # noqa: F401  (installed here with the extra)


def test_a_model_whose_tokenizer_cannot_be_built_is_probed_by_its_towers(grid_toml):
    """SigLIP's tokenizer needs ``transformers`` and the hub: the plan then times the two towers on
    random pixels and token ids instead of failing the row, and says so."""
    import json

    from tests.grid.conftest import TINY

    hf = {**TINY, "text_cfg": {**TINY["text_cfg"], "hf_tokenizer_name": "timm/ViT-B-16-SigLIP"}}
    (grid_toml.parent / "TinyH.json").write_text(json.dumps(hf))
    grid_toml.write_text(
        grid_toml.read_text().replace(
            'name = "TinyB"\nmodel_config = "TinyB.json"', 'name = "TinyH"\nmodel_config = "TinyH.json"'
        )
    )
    r = _plan(grid_toml, "--random-weights", "--workers", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    row = next(line for line in r.stdout.splitlines() if line.startswith("TinyH"))
    assert "towers only (no tokenizer here" in row and "probe failed" not in r.stdout
    assert "timing its towers on random inputs instead" in r.stderr
    assert "without" not in r.stdout  # every model probed: the estimates count both
