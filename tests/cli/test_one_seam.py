"""One seam for every detector: a batch method and a test-time method written OUTSIDE the package (a top-level
module on sys.path, named by $NEGVOCAB_PLUGINS: the batch one registered by a ``"module:function"`` target, the
test-time one by the decorator), each with an option no built-in has, go down the same paths: ``score`` (near /
far rows for both, one row shape), ``sweep`` (the batch one swept, the test-time one refused in one line), a
grid, ``table`` (kind, stream and spread in every format) and the pytorch-ood adapter. Their numbers are the
module's formulas recomputed here by hand over the same embeddings."""

from __future__ import annotations

import csv
import json
import sys
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

import negvocab
import negvocab.evaluation.row
from negvocab.cli import app
from negvocab.core import plugins
from tests.data.test_benchmark_registry import TOY_TOML, make_toy_root
from tests.grid.conftest import grid_files  # noqa: F401

runner = CliRunner()
MODULE = "outside_detectors"
SOURCE = textwrap.dedent(
    '''
    """Two detectors defined outside negvocab, registered through its public API only."""
    import numpy as np

    import negvocab

    SHIFT = negvocab.Param("outside_shift", float, 0.25, "Outside: weight of the nearest negative.",
                           "--outside-shift", check="nonneg")
    DECAY = negvocab.Param("outside_decay", float, 0.5, "Outside: decay of the running image mean.",
                           "--outside-decay", check="unit")


    def rows(x):
        x = getattr(x, "embeddings", x)
        x = x.detach().cpu().numpy() if hasattr(x, "detach") else x
        return np.asarray(x, dtype=np.float64)


    def kernel(image_emb, id_emb, neg_emb, *, outside_shift=0.25, device=None, chunk_size=None):
        v, t, n = rows(image_emb), rows(id_emb), rows(neg_emb)
        return (v @ t.T).max(1) - outside_shift * (v @ n.T).max(1)


    negvocab.register_method("outside_batch", "outside_detectors:kernel", [SHIFT], needs_negatives=True,
                             paper="a test's toy")


    @negvocab.register_stream_method("outside_stream", params=[DECAY], paper="a test's toy")
    class Decay(negvocab.StreamMethod):
        """score = max ID cosine + cosine to the decayed mean of the images before."""

        def __init__(self, *, outside_decay):
            super().__init__(outside_decay=outside_decay)
            self.decay = float(outside_decay)

        def init_state(self):
            self.mean = None

        def step(self, x):
            x = rows(x)
            s = (x @ rows(self.id_emb).T).max(1)
            if self.mean is not None:
                s = s + x @ self.mean
            m = x.mean(0)
            self.mean = m if self.mean is None else self.decay * self.mean + (1 - self.decay) * m
            return s
    '''
)


@pytest.fixture(scope="module")
def outside(tmp_path_factory):
    """The module on sys.path and named by $NEGVOCAB_PLUGINS, as a user would set it up; nothing imports it."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / f"{MODULE}.py").write_text(SOURCE)
    mp = pytest.MonkeyPatch()
    mp.syspath_prepend(str(folder))
    mp.setenv(plugins.ENV_VAR, MODULE)
    yield
    for name in ("outside_batch", "outside_stream"):
        negvocab.unregister_method(name, missing_ok=True)
    mp.undo()
    sys.modules.pop(MODULE, None)
    if MODULE in plugins._loaded:
        plugins._loaded.remove(MODULE)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = make_toy_root(tmp_path_factory.mktemp("toybench"))
    (root / "toy.toml").write_text(TOY_TOML)
    [bench] = negvocab.load_benchmarks(root / "toy.toml", replace=True)
    yield root
    negvocab.unregister_benchmark(bench.name)


def test_the_registry_finds_both_through_the_plugin_rule(outside):
    batch, stream = negvocab.get_method("outside_batch"), negvocab.get_method("outside_stream")  # no explicit load
    assert (batch.kind, stream.kind) == ("batch", "stream") and MODULE in plugins.loaded_plugins()
    assert batch.params == ("outside_shift",) and stream.params == ("outside_decay",)


def test_score_gives_both_the_same_rows(outside, toy, tiny, model_args, tmp_path):
    out = tmp_path / "res"
    args = ["score", "--vocab", tiny / "negA.txt", "--method", "outside_batch", "--method", "outside_stream",
            "--outside-shift", "0.5", "--outside-decay", "0.3", "--stream-batch", "2", "--stream-seeds", "0,1",
            "--n-boot", "0", "--no-report", "--ood", f"toy-bench={toy}", "-o", out, *model_args]  # fmt: skip
    r = runner.invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    rows = json.loads((out / "results.json").read_text())["rows"]
    by = {(row["method"], row["ood_set"]): row for row in rows}
    for method in ("outside_batch", "outside_stream"):
        sets = [s for m, s in by if m == method]
        assert sets == ["near-one", "far-one", "odd-one", "near-ood", "far-ood", "mean"], (method, sets)
        assert by[(method, "near-ood")]["fpr"] == pytest.approx(by[(method, "near-one")]["fpr"])
        assert by[(method, "mean")]["fpr"] == pytest.approx(
            np.mean([by[(method, s)]["fpr"] for s in ("near-one", "far-one", "odd-one")])
        )
    assert by[("outside_batch", "mean")]["params"] == {"outside_shift": 0.5}
    assert by[("outside_stream", "mean")]["params"]["outside_decay"] == 0.3
    assert by[("outside_stream", "near-one")]["test_time"] is True
    with (out / "results.csv").open() as f:
        header = next(csv.reader(f))
    assert set(rows[0]) <= set(header)

    # the batch method's numbers: its formula by hand over the embeddings the command scored
    npz = np.load(out / "scores.npz")
    vlm = negvocab.VLM("ViT-B-32", pretrained=None, device="cpu", random_weights=True, cache_dir=str(model_args[-1]))
    vocab = negvocab.Vocabulary.load(tiny / "negA.txt")
    cls = vlm.encode_text(list(negvocab.read_id_classes(tiny / "classes.txt").names), "single", pos="n")
    neg = vlm.encode_text(list(vocab.labels), "single", pos=vocab.parts_of_speech())
    id_x = vlm.encode_images(negvocab.open_image_set(toy / "val")).embeddings.astype(np.float64)
    want = (id_x @ cls.T.astype(np.float64)).max(1) - 0.5 * (id_x @ neg.T.astype(np.float64)).max(1)
    np.testing.assert_allclose(npz["id/outside_batch@negA"], want, atol=1e-6)


def test_sweep_sweeps_the_batch_one_and_refuses_the_test_time_one(outside, tiny, model_args, tmp_path):
    vocab = tmp_path / "ranked.json"
    negvocab.Vocabulary.load(tiny / "negA.txt").save(vocab)
    common = ["sweep", "--vocab", str(vocab), "--order", "given", "--sizes", "3,10", "--n-boot", "0", "--no-report",
              "--id", str(tiny / "id"), "--ood", str(tiny / "ood"), *map(str, model_args)]  # fmt: skip
    r = runner.invoke(app, [*common, "--method", "outside_batch", "--outside-shift", "0.5", "-o", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*common, "--method", "outside_stream", "-o", str(tmp_path / "b")])
    assert r.exit_code != 0 and "outside_stream" in r.output and "Traceback" not in r.output
    assert len([line for line in r.output.splitlines() if line.strip()]) <= 2, r.output


def test_the_pytorch_ood_adapter_hosts_both(outside):
    pytest.importorskip("pytorch_ood")
    torch = pytest.importorskip("torch")
    from negvocab.adapters.pytorch_ood import NegvocabDetector
    from tests.adapters.conftest import ID, NEG
    from tests.vlm.conftest import make_tiny_vlm

    vlm = make_tiny_vlm(cache=False)
    x = torch.randn(6, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    batch = NegvocabDetector(vlm, "outside_batch", id_classes=ID, vocabulary=NEG, templates="single", outside_shift=0.5)
    g = batch.zeroshot.features(x)[0].numpy().astype(np.float64)
    t = vlm.encode_text(ID, "single", pos="n").astype(np.float64)
    n = vlm.encode_text(NEG, "single").astype(np.float64)
    np.testing.assert_allclose(batch.predict(x).numpy(), -((g @ t.T).max(1) - 0.5 * (g @ n.T).max(1)), rtol=1e-5)
    assert set(batch.hyperparameter_space) == {"outside_shift"}

    stream = NegvocabDetector(vlm, "outside_stream", id_classes=ID, templates="single", outside_decay=0.5)
    first, second = stream.predict(x[:3]).numpy(), stream.predict(x[3:]).numpy()
    mean = g[:3].mean(0)  # the decayed mean after the first batch is that batch's mean
    np.testing.assert_allclose(first, -(g[:3] @ t.T).max(1), rtol=1e-5)
    np.testing.assert_allclose(second, -((g[3:] @ t.T).max(1) + g[3:] @ mean), rtol=1e-5)
    stream.reset()
    np.testing.assert_allclose(stream.predict(x[:3]).numpy(), first, rtol=1e-6)


GRID = """
[grid]
templates = "single"
id_classes = "classes.txt"
n_boot = 0
device = "cpu"
cache_dir = "{cache}"

[[models]]
name = "TinyA"
model_config = "TinyA.json"
random_weights = true

[id]
path = "id"

[ood]
oodA = "oodA"
oodB = "oodB"

[vocabularies]
A = "vocabA.txt"

[[methods]]
name = "outside_batch"
params = {{ outside_shift = 0.5 }}

[[methods]]
name = "outside_stream"
params = {{ outside_decay = 0.3 }}
stream = {{ order = "shuffled", stream_batch = 4, seeds = [0, 1] }}
"""


def test_a_grid_and_every_table_format_show_both(outside, grid_files, tmp_path):  # noqa: F811
    toml = grid_files / f"grid_seam_{tmp_path.name}.toml"
    toml.write_text(GRID.format(cache=tmp_path / "cache"))
    out = tmp_path / "grid"
    res = negvocab.run_grid(toml, out)
    res.write(out)  # the tables `negvocab grid run` writes
    rows = {(r["method"], r["ood_set"]) for r in res.rows}
    assert {("outside_batch", "oodA"), ("outside_stream#s0", "oodA"), ("outside_stream#s1", "oodA")} <= rows
    with (out / "table.csv").open() as f:
        header = next(csv.reader(f))
    assert header[: len(negvocab.evaluation.row.ROW_COLUMNS)] == list(negvocab.evaluation.row.ROW_COLUMNS)

    common = ["table", str(out), "--rows", "method,vocabulary", "--cols", "ood_set"]
    shown = {}
    for fmt in ("md", "tex", "csv"):
        r = runner.invoke(app, [*common, "--format", fmt])
        assert r.exit_code == 0, r.output
        shown[fmt] = r.output.replace("\\_", "_")  # LaTeX escapes the underscores
    for fmt, text in shown.items():
        assert "outside_batch" in text and "outside_stream" in text, fmt
        assert "[tt]" in text, fmt  # the test-time row's kind, in every format
        assert "±" in text or "\\pm" in text or ":sd" in text, fmt  # its spread over the seeds, not an interval
    for fmt in ("md", "tex"):
        assert "shuffled" in shown[fmt] and "seeds 0, 1" in shown[fmt].replace("seeds [0, 1]", "seeds 0, 1"), fmt
    assert "outside_stream:stream" in shown["csv"] or "stream" in shown["csv"]

    report = tmp_path / "report.html"
    r = runner.invoke(app, ["report", str(out), "-o", str(report)])
    assert r.exit_code == 0, r.output
    html = report.read_text().replace("<wbr>", "")
    assert "outside_stream#s0 [tt]" in html and "outside_batch [tt]" not in html  # the kind, per cell


def test_a_plugin_named_after_the_cli_was_imported_still_brings_its_flags(outside, monkeypatch):
    """The CLI was imported before $NEGVOCAB_PLUGINS named the module (a test, a notebook): building ``score``
    loads it, so its method's flags are there (they were missing, whatever the registry said later)."""
    for name in ("outside_batch", "outside_stream"):
        negvocab.unregister_method(name, missing_ok=True)
    monkeypatch.setattr(plugins, "_loaded", [m for m in plugins._loaded if m != MODULE])
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    r = runner.invoke(app, ["score", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "--outside-shift" in r.output and "--outside-decay" in r.output, r.output[-2000:]
    assert MODULE in plugins.loaded_plugins()
