"""scores.npz and results.json read back: a real results folder round-trips, every damaged or foreign
file is one line naming it (issue 23: truncated, text, object-array npz; list-shaped results.json or
integer rows ended in tracebacks in `subsample` and `report`)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from negvocab.core.errors import InputError
from negvocab.evaluation.stored import read_results_json, read_scores_npz
from negvocab.labels.imagenet import IdClasses
from negvocab.vlm.images import ImageEmbeddings
from negvocab.vocab import Vocabulary

ID_NAMES = ["goldfish", "tench", "hen"]


def _unit(rng, n, d=32):
    x = rng.standard_normal((n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A results folder as `negvocab score` writes it (the real writer, on a tiny random model)."""
    from negvocab.evaluation.evaluate import evaluate_vocabularies
    from negvocab.report.results import write_results
    from tests.vlm.conftest import make_tiny_vlm

    rng = np.random.default_rng(0)
    id_e = ImageEmbeddings(paths=[f"/d/id{i}.png" for i in range(7)], embeddings=_unit(rng, 7))
    oods = {"a": ImageEmbeddings(paths=[f"/d/a{i}.png" for i in range(4)], embeddings=_unit(rng, 4)),
            "b": ImageEmbeddings(paths=[f"/d/b{i}.png" for i in range(3)], embeddings=_unit(rng, 3))}  # fmt: skip
    vocab = Vocabulary.from_labels(["aurora", "canyon", "violin"], source="file")
    ev = evaluate_vocabularies(
        make_tiny_vlm(cache=False),
        id_e,
        oods,
        {"neg": vocab},
        ("neglabel", "mcm"),
        id_classes=IdClasses.from_names(ID_NAMES),
        templates="single",
        n_boot=0,
    )
    folder = tmp_path_factory.mktemp("run") / "r"
    write_results(ev, folder)
    return folder, ev


def _one_line(e: pytest.ExceptionInfo, path: Path) -> None:
    assert "\n" not in str(e.value) and str(path) in str(e.value), str(e.value)


def test_a_real_folder_round_trips(run):
    folder, ev = run
    got = read_scores_npz(folder)
    assert set(got.keys) == set(ev.scores)
    for k, d in ev.scores.items():
        np.testing.assert_array_equal(got.id[k], np.asarray(d["id"], np.float64))
        np.testing.assert_array_equal(got.ood[k], np.asarray(d["ood"], np.float64))
    assert got.images["ood_sets"].tolist() == ["a"] * 4 + ["b"] * 3 and got.random_weights is True
    assert got.images["id_paths"].tolist() == [p for _, p in ev.id_images]
    doc = read_results_json(folder)
    assert doc["rows"] == json.loads(json.dumps(ev.rows))  # the rows as written, nothing dropped


def _npz(path: Path, **arrays) -> Path:
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda p, real: p.write_bytes(real.read_bytes()[: len(real.read_bytes()) // 2]),
            "not a readable scores.npz",
        ),  # truncated
        (lambda p, real: p.write_text("id,score\n1,0.5\n"), "not a readable scores.npz"),  # a text file
        (
            lambda p, real: _npz(p, **{"id/m": np.array([0.1, "x"], dtype=object), "ood/m": np.zeros(2)}),
            "not a readable scores.npz",
        ),
        (
            lambda p, real: np.save(p.with_suffix(".npy"), np.zeros(3)) or p.with_suffix(".npy").rename(p),
            "a single .npy array",
        ),
        (lambda p, real: _npz(p, **{"id/m": np.zeros(3)}), "no OOD scores ('ood/m')"),
        (
            lambda p, real: _npz(p, **{"id/m": np.zeros((3, 2)), "ood/m": np.zeros(2)}),
            "'id/m' must be a 1-D array of numbers",
        ),
        (
            lambda p, real: _npz(p, **{"id/m": np.array(["a", "b"]), "ood/m": np.zeros(2)}),
            "'id/m' must be a 1-D array of numbers",
        ),
        (
            lambda p, real: _npz(
                p, **{"id/m": np.zeros(3), "ood/m": np.zeros(2), "id/n": np.zeros(4), "ood/n": np.zeros(2)}
            ),
            "id score arrays differ in length (3, 4)",
        ),
        (
            lambda p, real: _npz(p, **{"id/m": np.zeros(3), "ood/m": np.zeros(2), "ood_paths": np.array(["x"])}),
            "'ood_paths' must be 2 strings",
        ),
        (lambda p, real: _npz(p, **{"id/m": np.zeros(3), "ood/m": np.zeros(0)}), "holds no OOD images"),
        (
            lambda p, real: _npz(p, **{"id/m": np.zeros(3), "ood/m": np.zeros(2), "random_weights": np.array([1, 0])}),
            "'random_weights' must be one boolean",
        ),
        (lambda p, real: _npz(p, other=np.zeros(3)), "holds no per-image scores"),
    ],
    ids=[
        "truncated",
        "text",
        "object-array",
        "npy",
        "no-ood",
        "2-d",
        "strings",
        "lengths",
        "paths",
        "empty",
        "random-weights",
        "no-scores",
    ],
)
def test_a_damaged_scores_file_is_one_line(run, tmp_path, make, message):
    path = tmp_path / "scores.npz"
    make(path, run[0] / "scores.npz")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        read_scores_npz(path)
    _one_line(e, path)
    assert "re-run `negvocab score`" in str(e.value) or "no per-image" in str(e.value) or "OOD" in str(e.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "must hold a JSON object with 'rows', got a list"),
        ('{"rows": [1, 2]}', r"rows\[0\] must be an object, got int"),
        ('{"rows": {"a": 1}}', "'rows' must be a list of result rows, got dict"),
        ('{"tpr": 0.95}', "'rows' must be a list of result rows, got NoneType"),
        ('{"rows": [{"method": 3}]}', r"rows\[0\]\['method'\] must be a string, got int"),
        ('{"rows": [{"method": "mcm", "fpr": "0.5"}]}', r"rows\[0\]\['fpr'\] must be a number or null, got str"),
        ('{"rows": [{"method": "mcm", "auroc": true}]}', r"rows\[0\]\['auroc'\] must be a number or null, got bool"),
        ('{"rows": [{"method": "mcm", "ood_set": 7}]}', r"rows\[0\]\['ood_set'\] must be a string, got int"),
        ('{"rows": [', "not valid JSON"),
    ],
)
def test_a_damaged_results_json_is_one_line(tmp_path, text, message):
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message) as e:
        read_results_json(tmp_path)  # the folder, as the commands are given it
    _one_line(e, path)


def test_latin1_missing_and_folder_results_json(tmp_path):
    (tmp_path / "results.json").write_bytes('{"rows": [], "note": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(InputError, match="not a UTF-8 JSON file"):
        read_results_json(tmp_path / "results.json")
    with pytest.raises(InputError, match="no results.json"):
        read_results_json(tmp_path / "absent")
    with pytest.raises(InputError, match="no scores file"):
        read_scores_npz(tmp_path)


# -- properties: random bytes in place of each file, and bit flips of a real one ---------------
FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _clean_or_one_line(read, path: Path) -> None:
    try:
        read(path)
    except InputError as e:
        assert "\n" not in str(e) and str(path) in str(e)


@FAST
@given(data=st.binary(max_size=2048))
def test_random_bytes_as_either_file_give_a_result_or_one_line(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("bytes")
    for name, read in (("scores.npz", read_scores_npz), ("results.json", read_results_json)):
        (folder / name).write_bytes(data)
        _clean_or_one_line(read, folder / name)


@FAST
@given(data=st.data())
def test_bit_flips_and_cuts_of_a_real_folder_give_a_result_or_one_line(run, tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("flip")
    for name, read in (("scores.npz", read_scores_npz), ("results.json", read_results_json)):
        raw = bytearray((run[0] / name).read_bytes())
        if data.draw(st.booleans(), label="cut"):
            raw = raw[: data.draw(st.integers(0, len(raw)), label="at")]
        else:
            for i in data.draw(st.lists(st.integers(0, len(raw) - 1), min_size=1, max_size=4), label="bits"):
                raw[i] ^= 1 << data.draw(st.integers(0, 7))
        (folder / name).write_bytes(bytes(raw))
        _clean_or_one_line(read, folder / name)


def test_a_zip_of_other_files_is_not_scores(tmp_path):
    path = tmp_path / "scores.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(InputError, match="scores.npz") as e:
        read_scores_npz(path)
    _one_line(e, path)


@pytest.mark.parametrize(("offset", "value", "what"), [(10, 99, "compression method"), (8, 1, "encrypted flag")])
def test_a_zip_header_bit_that_zipfile_refuses_is_one_line(tmp_path, offset, value, what):
    """A flipped central-directory field: zipfile raises NotImplementedError (unknown compression method) or
    RuntimeError (an entry flagged encrypted), which were tracebacks before (found by the bit-flip property)."""
    path = tmp_path / "scores.npz"
    np.savez(path, id_image_ids=np.array(["a"]), x=np.zeros(2))
    raw = bytearray(path.read_bytes())
    at = raw.index(b"PK\x01\x02") + offset  # the first central-directory entry
    raw[at : at + 2] = value.to_bytes(2, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match="not a readable scores.npz") as e:
        read_scores_npz(path)
    _one_line(e, path)
