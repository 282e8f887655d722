"""Every example in every command's ``--help``: each parses as the command reads it (its options and
arguments, their types and choices), and those that need no model and no language model run, as
written, on small files in a folder of their own; the mistakes a newcomer makes are one line each,
said before any model loads."""

from __future__ import annotations

import shlex
import shutil
from typing import Any

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from negvocab.cli import app, load_commands
from negvocab.cli.examples import EXAMPLES
from negvocab.vocab import Vocabulary
from tests.grid.test_grid_tables import _write_grid
from tests.report.test_tables import _score_folder

runner = CliRunner()

#: commands whose examples load an open_clip model or all of WordNet: not run by the test of the examples
#: that need no model (those that load an open_clip model run below, on a tiny random-weight model)
LOADS_A_MODEL = {"score", "sweep", "coverage", "embed", "demo", "grid run", "grid plan", "filter", "candidates"}
#: builders whose examples choose from all of WordNet (70,766 candidates): parsed only (tests/builders runs
#: them on small pools)
WHOLE_WORDNET = {"build csp", "build interneg"}


def _parsed_only(path: str, example: str) -> str:
    """Why an example that loads a model is parsed but not run here ("" where it runs)."""
    words = shlex.split(example)
    pool = words[words.index("--candidates") + 1] if "--candidates" in words else "wordnet"
    if path in WHOLE_WORDNET or (path in ("build wordnet", "build mined") and pool == "wordnet"):
        return "all of WordNet"
    if "--base-url" in words:
        return "a language model server"
    return ""


#: examples that need a grid run's own folder (tests/grid runs them on one)
NEEDS_A_GRID_RUN = {"grid status"}


def _all_examples() -> list[tuple[str, str]]:
    load_commands()
    from negvocab.cli.examples import EXAMPLES as every  # the builders' are added as their commands load

    return [(path, ex) for path, lines in every.items() for ex in lines]


def _runs_here(path: str) -> bool:
    skipped = LOADS_A_MODEL | NEEDS_A_GRID_RUN | {"map-classes"}  # map-classes: all of WordNet (slow here)
    return path not in skipped and not path.startswith("build ")


def _parse(words: list[str]) -> Any:
    """The example read as the command line parser reads it (no command runs): unknown options, missing
    arguments, bad types and choices raise click's ``UsageError``."""
    load_commands()
    cmd: Any = typer.main.get_command(app)  # typer's click (its own copy in typer >= 0.25): by duck type
    ctx = cmd.make_context("negvocab", list(words), resilient_parsing=False)
    while hasattr(cmd, "resolve_command"):
        rest = [*ctx._protected_args, *ctx.args]
        name, cmd, args = cmd.resolve_command(ctx, rest)
        assert cmd is not None, words
        ctx = cmd.make_context(name, args, parent=ctx)
    return ctx


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """The files the examples name, small: vocabularies, a labels file, a score folder, a grid folder."""
    root = tmp_path_factory.mktemp("examples")
    labels = ["sofa", "mountain", "cloud", "bridge", "violin", "spoon", "carpet", "lamp"]
    Vocabulary.from_labels(labels, source="file").save(root / "vocab.json")
    Vocabulary.from_labels(labels[:5], source="file").save(root / "wordnet.json")
    Vocabulary.from_labels(["kite", "violin", "harbour"], source="file").save(root / "gpt.json")
    (root / "unwanted.txt").write_text("sofa\nlamp\n")
    (root / "data" / "openood").mkdir(parents=True)  # a benchmarks root with nothing in it yet
    folder, _, _ = _score_folder(root, np.random.default_rng(0))
    folder.rename(root / "results")
    _write_grid(root / "grid-out", np.random.default_rng(1), failed_model=None)
    return root


@pytest.mark.parametrize(("path", "example"), _all_examples(), ids=lambda v: v if " " not in v else None)
def test_every_example_parses(path, example):
    words = shlex.split(example)
    assert words[0] == "negvocab"
    ctx = _parse(words[1:])
    assert ctx.command_path.split()[1:] == path.split()


def test_the_examples_that_need_no_model_run_as_written(workspace, monkeypatch):
    import negvocab.cli.options as options

    def no_model(*args, **kwargs):
        raise AssertionError("an example that needs no model loaded one")

    monkeypatch.setattr(options, "load_vlm", no_model)
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("NEGVOCAB_CACHE_DIR", str(workspace / "cache"))
    ran = []
    for path, example in _all_examples():
        if not _runs_here(path):
            continue
        r = runner.invoke(app, shlex.split(example)[1:])
        assert r.exit_code == 0, (example, r.output)
        ran.append(path)
    assert {"drop", "info", "merge", "table", "report", "subsample", "grid init", "classes"} <= set(ran)
    dropped = Vocabulary.load(workspace / "vocab.dropped.json")
    assert "sofa" not in dropped.labels and "lamp" not in dropped.labels and len(dropped) == 6  # the file's labels


def test_the_examples_cover_every_command():
    from tests.cli.test_app import _commands

    assert set(_commands()) == set(EXAMPLES)


def _one_line_before_any_model(args, monkeypatch):
    import negvocab.cli.coverage as coverage
    import negvocab.cli.score as score

    def no_model(*a, **kw):
        raise AssertionError("the model was loaded")

    for module in (score, coverage):
        monkeypatch.setattr(module, "load_vlm", no_model)
    r = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["sweep", "--vocab", "v.json", "--sizes", "2", "--ood", "o", "--method", "eoe", "--tau", "0.5"],
         "--tau: no chosen method takes it (--method eoe); it is a parameter of neglabel"),
        (["coverage", "--vocab", "v.json", "--ood", "o", "--method", "eoe", "--groups", "4"],
         "--groups: no chosen method takes it (--method eoe)"),
        (["score", "--ood", "openod", "--method", "mcm"],
         "--ood openod: no such image folder; did you mean 'openood'"),
        (["score", "--ood", "openood", "--method", "mcm"], "a benchmark is given as --ood BENCHMARK=ROOT"),
        (["classes", "-f", "jsn"], "--format must be one of txt, tsv, csv, json; got 'jsn'; did you mean 'json'?"),
    ],
)  # fmt: skip
def test_a_newcomers_mistake_is_one_line_before_any_model(tmp_path, monkeypatch, args, said):
    monkeypatch.chdir(tmp_path)
    assert said in _one_line_before_any_model([*args, "-o", "out"] if args[0] != "classes" else args, monkeypatch)


def test_classes_checks_its_output_before_the_label_space_loads(tmp_path, monkeypatch):
    import negvocab.cli.labels as labels

    def no_labels():
        raise AssertionError("the label space was loaded")

    monkeypatch.setattr(labels, "imagenet1k", no_labels)
    (tmp_path / "c.tsv").write_text("x")
    assert "c.tsv exists; give --overwrite" in _one_line_before_any_model(
        ["classes", "-o", tmp_path / "c.tsv"], monkeypatch
    )
    assert "got 'xml'" in _one_line_before_any_model(["classes", "-f", "xml"], monkeypatch)


def test_a_parameter_only_some_chosen_methods_take_is_a_warning(monkeypatch, tmp_path):
    import negvocab.cli.score as score

    def reached(*a, **kw):
        raise SystemExit(7)

    monkeypatch.setattr(score, "load_vlm", reached)
    (tmp_path / "id").mkdir()
    (tmp_path / "ood").mkdir()
    from PIL import Image

    for d in ("id", "ood"):
        Image.new("RGB", (8, 8)).save(tmp_path / d / "a.png")
    (tmp_path / "v.txt").write_text("sofa\n")
    args = ["score", "--id", tmp_path / "id", "--ood", tmp_path / "ood", "--vocab", tmp_path / "v.txt"]
    args += ["--method", "mcm", "--method", "neglabel", "--tau", "0.5", "-o", tmp_path / "r"]
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 7, r.output
    assert "warning: --tau is used by neglabel only (not mcm)" in r.stderr


def test_table_on_the_demos_output_folder_shows_its_rows(workspace, tmp_path):
    """The demo writes results/ and sweep/ into one folder: table on it reads both, and with no --rows
    the rows are the axes they differ on (method here), not an error asking for --rows."""
    demo = tmp_path / "demo"
    demo.mkdir()
    _score_folder(tmp_path, np.random.default_rng(2))[0].rename(demo / "results")
    r = runner.invoke(app, ["table", str(demo), "--where", "vocabulary=wordnet"])
    assert r.exit_code == 0, r.output
    body = [ln for ln in r.stdout.splitlines() if ln.startswith("| ")]
    assert body[0].startswith("| method |") and {ln.split("|")[1].strip() for ln in body[1:]} == {"neglabel", "mcm"}
    r = runner.invoke(app, ["table", str(demo), "--rows", "model"])
    assert r.exit_code == 2 and "(--rows vocabulary) or fix one (--where vocabulary=VALUE)" in r.stderr, r.output


#: the commands whose examples load an open_clip model, besides the builders that need one
MODEL_COMMANDS = {"score", "sweep", "coverage", "embed", "demo", "grid run", "grid plan"}
#: a 1-layer open_clip architecture (32x32 images, width 32): a real model class, random weights, fast
TINY_CONFIG = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 32},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 1, "layers": 1},
}
TINY_NAME = "HelpExamplesTiny"


def _model_examples() -> list[tuple[str, str]]:
    from negvocab.builders.registry import get_builder

    def loads_a_model(path: str) -> bool:
        return path in MODEL_COMMANDS or (path.startswith("build ") and "vlm" in get_builder(path[6:]).needs)

    return [(p, ex) for p, ex in _all_examples() if loads_a_model(p) and not _parsed_only(p, ex)]


def _out(example: str) -> str:
    """The output an example names (``-o``; a grid plan writes none)."""
    words = shlex.split(example)
    return words[words.index("-o") + 1] if "-o" in words else ""


@pytest.fixture(scope="module")
def model_workspace(tmp_path_factory):
    """The files the model examples name: tiny image folders, vocabularies of published word lists (the
    shipped CUB-200 and Food-101 class names: 301 labels, for ``--sizes 50,100,200``), a labelled OOD
    list, a candidates file, a grid file of the tiny architecture, and that model (one, random weights)."""
    import json
    from importlib import resources

    import open_clip
    from PIL import Image

    from negvocab.vlm.model import VLM

    root = tmp_path_factory.mktemp("model-examples")
    rng = np.random.default_rng(3)
    for folder, n in (("images/id", 6), ("images/ood", 5), ("images/ninco", 4), ("unlabelled", 4)):
        (root / folder).mkdir(parents=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(root / folder / f"im{i}.png")
    shipped = resources.files("negvocab.resources") / "classes"
    words = [ln.strip() for f in ("cub200.txt", "food101.txt") for ln in (shipped / f).read_text().splitlines()]
    words = list(dict.fromkeys(w for w in words if w and not w.startswith("#")))
    Vocabulary.from_labels(words, source="file").save(root / "wordnet.json")
    Vocabulary.from_labels(words[:40], source="file").save(root / "vocab.json")
    Vocabulary.from_labels(words[200:260], source="file").save(root / "csp.json")
    (root / "pool.tsv").write_text("text\tpos\n" + "".join(f"{w}\tn\n" for w in words))
    (root / "classes.txt").write_text("goldfish\ntench\nrooster\n")
    (root / "ood_labelled.csv").write_text(
        "path,label\n" + "".join(f"images/ood/im{i}.png,{'plot' if i % 2 else 'logo'}\n" for i in range(5))
    )
    config = root / f"{TINY_NAME}.json"
    config.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(config)
    (root / "grid.toml").write_text(
        '[grid]\ntemplates = "single"\nid_classes = "classes.txt"\nn_boot = 10\ndevice = "cpu"\n'
        f'cache_dir = "cache"\n\n[[models]]\nname = "{TINY_NAME}"\nmodel_config = "{config.name}"\n'
        'random_weights = true\n\n[id]\npath = "images/id"\n\n[ood]\nninco = "images/ninco"\n\n'
        '[vocabularies]\nA = "vocab.json"\n\n[[methods]]\nname = "neglabel"\n'
    )
    vlm = VLM(TINY_NAME, random_weights=True, device="cpu", cache_dir=root / "cache")
    return root, vlm


def test_the_model_examples_cover_every_model_command():
    ran = {path for path, _ in _model_examples()}
    assert MODEL_COMMANDS | {"build wordnet", "build siblings", "build negrefine"} <= ran, ran
    parsed = {path for path, ex in _all_examples() if _parsed_only(path, ex)}
    assert parsed == {"build wordnet", "build mined", "build csp", "build interneg", "build negrefine"}, parsed


@pytest.mark.parametrize(("path", "example"), _model_examples(), ids=lambda v: v if " " not in v else None)
def test_an_example_that_loads_a_model_runs_on_a_tiny_one(model_workspace, monkeypatch, tmp_path, path, example):
    """The example runs as written, in a folder holding the files it names, with the model it names replaced
    by one tiny random-weight model (the weights rule still checked: an example without weights fails); it
    exits 0 and writes what its ``-o`` names (a dry run writes nothing). A broken example fails here."""
    import importlib

    from negvocab.cli.options import check_weights

    root, vlm = model_workspace
    asked = []

    def tiny_model(model, pretrained, *args, random_weights=False, batch_size=None, num_workers=None, **kw):
        check_weights(model, pretrained, random_weights)
        asked.append(model)
        vlm.batch_size, vlm.num_workers = batch_size, num_workers
        return vlm

    for name in ("score", "coverage", "embed", "demo", "build_wordnet", "build_offline", "build_generic"):
        monkeypatch.setattr(importlib.import_module(f"negvocab.cli.{name}"), "load_vlm", tiny_model)
    monkeypatch.setenv("NEGVOCAB_CACHE_DIR", str(root / "cache"))  # one cache: each text is embedded once
    here = tmp_path / "ws"  # a fresh folder: the demo's two examples write the same output
    shutil.copytree(root, here, ignore=shutil.ignore_patterns("cache"))
    monkeypatch.chdir(here)
    words = shlex.split(example)
    r = runner.invoke(app, words[1:])
    assert r.exit_code == 0, r.output
    out = here / _out(example)
    if _out(example) and "--dry-run" not in words:
        assert list(out.parent.glob(f"{out.stem}*")), r.output  # wn.json with --sizes: wn-M50.json ...
    if not path.startswith("grid "):  # a grid builds its models from grid.toml (the tiny architecture)
        assert asked == [words[words.index("-m") + 1] if "-m" in words else "ViT-B-32"], asked
