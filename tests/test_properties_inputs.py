"""Property tests of the parsers (hypothesis, bounded example counts): random bytes in place of each
input file of `build mined` and of the ID-classes file, random `--ood` values and option numbers.
Each gives a clean result or one line and exit 2; never a traceback."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from negvocab.builders.mined import mining_pool
from negvocab.cli import app
from negvocab.cli.options import ood_paths
from negvocab.core.errors import InputError
from negvocab.labels.imagenet import IdClasses, read_id_classes

FAST = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
#: bytes that look like the files these parsers read, mixed with noise
TEXTISH = st.one_of(
    st.binary(max_size=400),
    st.lists(
        st.sampled_from(
            [
                "n01440764",
                "n0144O764",
                "n99999999",
                "tench",
                "goldfish",
                "# note",
                "",
                " ",
                "\x00",
                "caf\xe9",
                "n123456789",
            ]
        ),
        max_size=8,
    ).map(lambda xs: "\n".join(xs).encode("utf-8")),
    st.text(max_size=200).map(lambda s: s.encode("utf-8")),
    st.text(max_size=50).map(lambda s: s.encode("latin-1", "replace")),
)


def _one_line(e: Exception) -> None:
    assert "\n" not in str(e).strip() and str(e).strip(), repr(e)


@FAST
@given(data=TEXTISH)
@example(data=b"n01440764\nn0144O764\n")
def test_id_classes_from_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("ids") / "ids.txt"
    path.write_bytes(data)
    try:
        got = read_id_classes(path)
    except InputError as e:
        _one_line(e)
        assert str(path) in str(e)
        return
    assert isinstance(got, IdClasses) and len(got) >= 1
    # a class name is never something that looks like a wnid (the typo that was taken as a name)
    assert got.dataset == "imagenet1k-subset" + str(len(got)) or not any(
        n.startswith("n") and n[1:].isdigit() and len(n) > 5 for n in got.names
    )


@FAST
@given(data=TEXTISH)
def test_mining_pool_from_random_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("pool") / "pool.txt"
    path.write_bytes(data)
    try:
        got = mining_pool(str(path))
    except InputError as e:
        _one_line(e)
        return
    assert got and all(c.text.strip() for c in got)


NAME = st.sampled_from(["a", "b", "mean", "", " ", "x/y"])
PATH = st.sampled_from(["", " ", "ood", "./ood", "/tmp/nowhere", "a=b"])


@FAST
@given(
    values=st.lists(st.tuples(NAME, st.booleans(), PATH).map(lambda t: f"{t[0]}={t[2]}" if t[1] else t[2]), max_size=4)
)
def test_ood_values_give_unique_names_and_no_empty_path(values):
    try:
        got = ood_paths(values)
    except InputError as e:
        _one_line(e)
        return
    assert len(got) == len([v for v in values])  # every set is kept, none dropped under a repeated name
    assert all(str(p).strip() not in ("", ".") for p in got.values()) and "mean" not in got


class ReachedTheModel(Exception):
    """Every input was accepted: the command went on to load the model (not done in these tests)."""


def _stop(*a, **k):
    raise ReachedTheModel


@FAST
@given(
    pool=TEXTISH,
    classes=TEXTISH,
    images=TEXTISH,
    threshold=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    quantile=st.floats(allow_nan=True, allow_infinity=True),
)
def test_build_mined_on_random_input_files(tmp_path_factory, monkeypatch, pool, classes, images, threshold, quantile):
    import negvocab.cli.build_offline as cmd

    monkeypatch.setattr(cmd, "load_vlm", _stop)
    tmp = tmp_path_factory.mktemp("mined")
    for name, data in (("pool.txt", pool), ("classes.txt", classes), ("images.txt", images)):
        (tmp / name).write_bytes(data)
    args = ["build", "mined", "--random-weights", "--images", str(tmp / "images.txt"), "--pool", str(tmp / "pool.txt"),
            "--id-classes", str(tmp / "classes.txt"), "--ood-quantile", repr(quantile),
            "-o", str(tmp / "m.json")]  # fmt: skip
    if threshold is not None:
        args += ["--threshold", repr(threshold)]
    r = CliRunner().invoke(app, args)
    if isinstance(r.exception, ReachedTheModel):
        assert threshold is None or math.isfinite(threshold)  # a nan/inf threshold never gets this far
        return
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output, r.stderr
    assert not (tmp / "m.json").exists()


@pytest.mark.parametrize("value", ["", " ", "\t"])
def test_every_image_path_option_refuses_an_empty_value(tmp_path, value):
    runs = [
        ["build", "mined", "--random-weights", "--images", value, "-o", str(tmp_path / "m.json")],
        ["score", "--id", value, "--ood", str(tmp_path), "--method", "mcm", "-o", str(tmp_path / "r")],
        [
            "score",
            "--id",
            str(tmp_path),
            "--ood",
            str(tmp_path),
            "--image-root",
            value,
            "--method",
            "mcm",
            "-o",
            str(tmp_path / "r"),
        ],
        ["score", "--id", str(tmp_path), "--fi-ood", value, "--method", "mcm", "-o", str(tmp_path / "r")],
    ]
    for args in runs:
        r = CliRunner().invoke(app, args)
        assert r.exit_code == 2 and "an empty path" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (
            args,
            r.output,
        )
    assert not any(Path(tmp_path).iterdir())
