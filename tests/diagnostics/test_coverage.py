"""Coverage on a hand-made case with known answers (a fake VLM with hand-placed embeddings)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import negvocab
from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet
from negvocab.labels.imagenet import IdClasses

D = 10
E = np.eye(D)


def _u(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x)


TEXT = {
    "weasel": E[0],
    "lynx": E[1],
    "tayra": E[2],
    "black-footed cat": E[3],
    "concert tuba": E[4],
    "Concert_Tubas": E[4],  # names the tuba class (normalised plural)
    "mountain": _u(E[5] + 0.3 * E[2]),  # tayra's nearest vocabulary label
    "sea": _u(E[6] + 0.1 * E[3]),
    "polecat": _u(E[7] + 0.2 * E[2]),
}


@dataclass
class _Emb:
    embeddings: np.ndarray
    ids: list
    paths: list


class FakeVLM:
    """encode_text/encode_images from tables: every answer of coverage() is known in advance."""

    name, pretrained, random_weights, device = "fake", None, True, "cpu"

    def __init__(self, images):
        self.images = images

    def encode_text(self, labels, templates="paper8", *, pos=None, progress=None):
        return np.stack([TEXT[x] for x in labels])

    def encode_images(self, source, *, progress=None, **kw):
        return _Emb(np.stack([self.images[p] for p in source.paths]), list(source.ids), list(source.paths))


def _case():
    images = {}
    id_paths = []
    for i in range(20):  # ID images: cosine with their class falls from 1 to ~0.55, so the threshold sits inside them
        images[f"id{i}"] = _u(E[i % 2] + 1.5 * i / 19 * E[9])
        id_paths.append(f"id{i}")
    ood_paths, ood_labels = [], []
    for i in range(4):
        images[f"tayra{i}"] = _u(0.8 * E[0] + 0.6 * E[2] + 0.01 * i * E[8])
        images[f"bfc{i}"] = _u(0.8 * E[1] + 0.6 * E[3] + 0.01 * i * E[8])
        ood_paths += [f"tayra{i}", f"bfc{i}"]
        ood_labels += ["tayra", "black-footed cat"]
    for i in range(3):
        images[f"tuba{i}"] = _u(E[4] + 0.01 * i * E[8])
        ood_paths.append(f"tuba{i}")
        ood_labels.append("concert tuba")
    id_set = ImageSet("id", id_paths, id_paths)
    ood_set = ImageSet("ood", ood_paths, ood_paths, ood_labels)
    vocab = negvocab.Vocabulary.from_labels(["Concert_Tubas", "mountain", "sea", "polecat"], source="file")
    return FakeVLM(images), vocab, id_set, ood_set


@pytest.fixture(scope="module")
def cov():
    vlm, vocab, id_set, ood_set = _case()
    classes = IdClasses.from_names(["weasel", "lynx"])
    return negvocab.coverage(
        vlm, vocab, id_set, ood_set, "neglabel", id_classes=classes, params={"tau": 0.1, "groups": 2}, top_k=(1, 2)
    )


def test_text_side(cov):
    by = {c["label"]: c for c in cov.classes}
    assert [c["label"] for c in cov.classes] == ["tayra", "black-footed cat", "concert tuba"]
    assert by["concert tuba"]["exact"] and by["concert tuba"]["covered_by"] == "Concert_Tubas"
    assert not by["tayra"]["exact"] and not by["black-footed cat"]["exact"]
    assert by["tayra"]["nearest"] == "mountain"
    assert by["tayra"]["nearest_cosine"] == pytest.approx(0.3 / np.sqrt(1.09))
    assert by["black-footed cat"]["nearest"] == "sea"
    assert cov.summary["exact_coverage"] == pytest.approx(1 / 3)
    assert cov.summary["exact_coverage_images"] == pytest.approx(3 / 11)
    assert cov.summary["cosine_coverage"]["0.9"] == pytest.approx(1 / 3)  # only the tuba (cosine 1)


def test_image_side_and_confusions(cov):
    by = {c["label"]: c for c in cov.classes}
    assert by["tayra"]["passing_share"] == 1.0 and by["tayra"]["taken_for"] == "weasel (4)"
    assert by["black-footed cat"]["passing_share"] == 1.0 and by["black-footed cat"]["taken_for"] == "lynx (4)"
    assert by["concert tuba"]["passing"] == 0
    assert by["concert tuba"]["fired"][0] == {"label": "Concert_Tubas", "count": 3}
    assert [(c["ood_class"], c["id_class"], c["count"]) for c in cov.confusions] == [
        ("tayra", "weasel", 4),
        ("black-footed cat", "lynx", 4),
    ] or [(c["ood_class"], c["id_class"], c["count"]) for c in cov.confusions] == [
        ("black-footed cat", "lynx", 4),
        ("tayra", "weasel", 4),
    ]
    assert cov.summary["fpr"] == pytest.approx(8 / 11)
    passing = [r for r in cov.images if r["set"] == "ood" and r["misjudged"]]
    assert len(passing) == 8
    flagged = [r for r in cov.images if r["set"] == "id"]
    assert len(flagged) == 1  # 5% of 20 ID images fall below the paper threshold


def test_gains_and_oracle_repair(cov):
    by = {c["label"]: c for c in cov.classes}
    assert by["tayra"]["fpr_gain"] > 0 and by["black-footed cat"]["fpr_gain"] > 0
    assert by["concert tuba"]["fpr_gain"] == 0  # already caught
    curve = cov.oracle_repair
    assert curve.oracle and "ORACLE" in curve.meta["note"]
    assert set(curve.labels) == {"tayra", "black-footed cat"}
    assert curve.rows[-1]["fpr"] == pytest.approx(0.0)
    assert cov.summary["oracle_fpr"] == pytest.approx(0.0)
    assert cov.summary["gap_closed_by_top_k"]["2"] == pytest.approx(1.0)
    assert 0 < cov.summary["gap_closed_by_top_k"]["1"] < 1


def test_repair_from_a_candidate_pool_is_deployable(cov):
    curve = cov.repair(3, candidates=["polecat", "tayra", "lynx"])  # polecat is in the vocabulary: skipped
    assert not curve.oracle
    assert curve.labels[0] == "tayra"
    assert np.all(np.diff(curve.fpr) <= 0)


def test_to_frame_and_write(cov, tmp_path):
    df = cov.to_frame()
    assert list(df["label"]) == ["tayra", "black-footed cat", "concert tuba"]
    out = cov.write(tmp_path / "cov")
    for name in ("coverage.json", "coverage.csv", "confusions.csv", "coverage_images.json", "repair.csv", "repair.png"):
        assert (out / name).is_file(), name


def test_written_csvs_say_oracle_and_random_weights_on_every_row(cov, tmp_path):
    import csv

    out = cov.write(tmp_path / "cov")  # the fake model has random weights; the default curve is the oracle one
    repair = list(csv.DictReader((out / "repair.csv").open()))
    assert repair and all(r["oracle"] == "True" and r["random_weights"] == "True" for r in repair)
    classes = list(csv.DictReader((out / "coverage.csv").open()))
    assert classes and all(r["random_weights"] == "True" for r in classes)
    pool = cov.repair(2, candidates=["tayra", "lynx"])
    out2 = cov.write(tmp_path / "pool", repair=pool)
    assert {r["oracle"] for r in csv.DictReader((out2 / "repair.csv").open())} == {"False"}


def test_an_unlabelled_ood_set_is_refused():
    vlm, vocab, id_set, ood_set = _case()
    with pytest.raises(InputError, match="has no labels"):
        negvocab.coverage(
            vlm,
            vocab,
            id_set,
            ImageSet("ood", ood_set.paths, ood_set.ids),
            id_classes=IdClasses.from_names(["weasel", "lynx"]),
        )


@pytest.mark.parametrize("method", ["eoe", "neglabel_eoe"])
def test_every_method_with_negatives(method):
    vlm, vocab, id_set, ood_set = _case()
    classes = IdClasses.from_names(["weasel", "lynx"])
    params = {"tau": 0.1, "groups": 2, "T": 0.1, "beta": 1.0}
    cov = negvocab.coverage(vlm, vocab, id_set, ood_set, method, id_classes=classes, params=params, top_k=())
    id_img = np.stack([vlm.images[p] for p in id_set.paths])
    ood_img = np.stack([vlm.images[p] for p in ood_set.paths])
    names = ["tayra", "black-footed cat", "concert tuba"]
    kw = {k: v for k, v in params.items() if k in ({"beta", "T"} if method == "eoe" else {"tau", "groups", "beta"})}
    g = negvocab.marginal_gains(
        id_img,
        ood_img,
        vlm.encode_text(["weasel", "lynx"]),
        vlm.encode_text(vocab.labels),
        vlm.encode_text(names),
        method,
        **kw,
    )
    assert [c["fpr_with"] for c in cov.classes] == pytest.approx(list(g.fpr))
    assert cov.summary["fpr"] == pytest.approx(g.base_fpr) and cov.oracle_repair is None


def test_a_pool_marked_oracle_gives_a_non_deployable_curve(cov):
    pool = negvocab.Vocabulary.from_labels(
        ["tayra", "lynx"], source="oracle", settings={"oracle": True, "deployable": False}
    )
    curve = cov.repair(2, candidates=pool)
    assert curve.oracle and "NOT deployable" in curve.meta["note"]


def test_write_is_staged_and_replaces_an_earlier_run_whole(cov, tmp_path):
    """--overwrite with another plot format, or without a repair curve, leaves no earlier file;
    a full disk while writing keeps the earlier run whole; no --overwrite: refused in one line."""
    import errno

    from negvocab.core.errors import DiskFullError
    from negvocab.diagnostics import coverage as C

    out = tmp_path / "cov"
    cov.write(out)
    assert (out / "repair.png").is_file()
    with pytest.raises(InputError, match="overwrite=True to replace them"):
        cov.write(out)
    cov.write(out, plot_format="svg", overwrite=True)
    assert (out / "repair.svg").read_bytes()[:5] == b"<?xml" and not (out / "repair.png").exists()
    no_curve = C.Coverage(cov.classes, cov.confusions, cov.gains, cov.summary, cov.images, cov.meta, None)
    no_curve.write(out, overwrite=True)
    assert not (out / "repair.svg").exists() and not (out / "repair.csv").exists()
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(C, "write_json", full)
        with pytest.raises(DiskFullError, match="earlier files are kept"):
            cov.write(out, overwrite=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_the_given_name_is_the_set_s_name(tmp_path):
    vlm, vocab, id_set, ood_set = _case()
    classes = IdClasses.from_names(["weasel", "lynx"])
    cov = negvocab.coverage(
        vlm,
        vocab,
        id_set,
        ood_set,
        "neglabel",
        id_classes=classes,
        params={"tau": 0.1, "groups": 2},
        top_k=(),
        name="graphics",
    )
    assert cov.meta["ood_set"] == {"name": "graphics", "n": 11}
    assert (
        negvocab.coverage(
            vlm, vocab, id_set, ood_set, "neglabel", id_classes=classes, params={"tau": 0.1, "groups": 2}, top_k=()
        ).meta["ood_set"]["name"]
        == "ood"
    )


def test_a_repair_curve_that_adds_nothing_is_a_readable_figure(tmp_path):
    import warnings

    from negvocab.diagnostics.gains import RepairCurve
    from negvocab.report.plots import outside_texts, repair_figure

    rows = [
        {"step": 0, "label": "", "fpr": 0.4, "auroc": 0.7, "fpr_gain": 0.0},
        {"step": 1, "label": "sea", "fpr": 0.4, "auroc": 0.7, "fpr_gain": 0.0},
    ]
    curve = RepairCurve(rows, "neglabel", "paper", 0.95)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = repair_figure(curve)
    ax = fig.axes[0]
    assert ax.get_ylim() == pytest.approx((35.0, 45.0)) and ax.get_xlim() == pytest.approx((-0.5, 1.5))
    assert any("add nothing: FPR stays at 40.00%" in t.get_text().replace("\n", " ") for t in ax.texts)
    assert outside_texts(fig) == []


def test_coverage_help_promises_one_set():
    from typer.testing import CliRunner

    from negvocab.cli import app

    out = CliRunner().invoke(app, ["coverage", "--help"], env={"COLUMNS": "200"}).output
    assert "One set per run" in out and "Repeat for several OOD sets" not in out


def test_the_analysis_after_the_encodings_reports_progress(caplog):
    """A large set is not silent for its whole analysis (issue 23: 60 s without a line): each of its
    four steps ends with a progress line (negvocab.core.progress, what the CLI shows on stderr)."""
    import logging

    vlm, vocab, id_set, ood_set = _case()
    classes = IdClasses.from_names(["weasel", "lynx"])
    with caplog.at_level(logging.INFO, logger="negvocab.core.progress"):
        negvocab.coverage(
            vlm,
            vocab,
            id_set,
            ood_set,
            "neglabel",
            id_classes=classes,
            params={"tau": 0.1, "groups": 2},
            top_k=(),
            progress=True,
            name="graphics",
        )
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "negvocab.core.progress" and r.getMessage().startswith("coverage of graphics")
    ]
    assert [ln.split(": ")[2].split(" ")[0] for ln in lines] == ["1/4", "2/4", "3/4", "4/4"], lines


@pytest.mark.parametrize(
    ("kw", "param"),
    [
        ({"tpr": 0.0}, "tpr"),
        ({"tpr": 95}, "tpr"),
        ({"top_k": (1, 0)}, "top_k"),
        ({"top_k": (2.5,)}, "top_k"),
        ({"explain_k": 0}, "explain_k"),
        ({"templates": "nonesuch"}, "nonesuch"),
    ],
)
def test_bad_arguments_fail_before_any_image_is_encoded(kw, param):
    vlm, vocab, id_set, ood_set = _case()

    def no_images(*a, **k):
        raise AssertionError("images were encoded before the arguments were checked")

    vlm.encode_images = no_images
    with pytest.raises(InputError, match=param):
        negvocab.coverage(vlm, vocab, id_set, ood_set, "neglabel", id_classes=IdClasses.from_names(["a", "b"]), **kw)
