"""Library errors name parameters; the CLI shows them as its flags (negvocab/cli/flags.py)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from negvocab.builders.llm_classes import select_classes
from negvocab.cli import app
from negvocab.cli.flags import cli_message, flag_of
from negvocab.core.errors import InputError, ResourceError
from negvocab.data.images import image_list
from negvocab.llm.endpoint import check_base_url
from negvocab.llm.journal import Journal

runner = CliRunner()


def _error_line(args: list[str]) -> str:
    r = runner.invoke(app, [str(a) for a in args], catch_exceptions=False)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and "Traceback" not in r.output, r.output
    return lines[0]


@pytest.mark.parametrize(
    ("message", "param", "shown"),
    [
        ("need a vocabulary (vocabularies)", "vocabularies", "need a vocabulary (--vocab)"),
        ("or pass order='given' to sweep", "order", "or pass --order given to sweep"),
        ("re-run with batch=True to collect it", "batch", "re-run with --batch to collect it"),
        ("lower size, raise top_k or give more images", ("size", "top_k"),
         "lower --size, raise --top-k or give more images"),
        # a name=value form wins over the bare word, which is left as it is ("1000 classes")
        ("classes=5000: choose between 1 and 1000 classes", "classes",
         "--classes 5000: choose between 1 and 1000 classes"),
        # no name=value: only the first bare name; never inside a longer word, a key or a flag
        ("top_k_max or top_k, then top_k", "top_k", "top_k_max or --top-k, then top_k"),
        ("give pretrained='/p/w.bin' with tag='openai'", ("pretrained", "tag"),
         "give --pretrained /p/w.bin with --tag openai"),
        ("seed (a method parameter)", "seed", "--seed (a method parameter)"),
        ("groups must be >= 1", "groups", "--groups must be >= 1"),  # a method parameter: its registry flag
    ],
)  # fmt: skip
def test_cli_message_shows_each_named_parameter_as_its_flag(message, param, shown):
    assert cli_message(InputError(message, param=param)) == shown


def test_a_parameter_without_a_flag_or_not_named_is_left_as_written():
    assert flag_of("no_such_parameter") is None
    assert cli_message(InputError("no_such_parameter=3 is bad", param="no_such_parameter")) == (
        "no_such_parameter=3 is bad"
    )
    assert cli_message(InputError("top_k must be >= 1")) == "top_k must be >= 1"  # no param: unchanged


def test_library_messages_name_the_parameter_not_the_flag(tmp_path):
    with pytest.raises(InputError) as e:
        select_classes(5000, None)
    assert str(e.value).startswith("classes=5000:") and "--" not in str(e.value) and e.value.param == ("classes",)
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(InputError) as e:
        Journal(tmp_path / "a_file", {"task": "t"})
    assert "give a folder (run_dir)" in str(e.value) and "--" not in str(e.value) and e.value.param == ("run_dir",)
    with pytest.raises(InputError) as e:
        check_base_url("ftp://example.org")
    assert "(base_url or OPENAI_BASE_URL)" in str(e.value) and e.value.param == ("base_url",)
    (tmp_path / "imgs").mkdir()
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "imgs" / "a.png")  # an OOD set that opens: the ID list is the error
    (tmp_path / "list.txt").write_text("../outside.png\n")
    with pytest.raises(InputError) as e:
        image_list(tmp_path / "list.txt")
    assert "give the right root, or allow_outside_root=True" in str(e.value) and "--" not in str(e.value)


def test_the_cli_shows_the_flags(tmp_path):
    assert _error_line(["build", "gpt", "-m", "x", "--classes", "5000", "--dry-run", "-o", tmp_path / "o.json"]) == (
        "error: --classes 5000: choose between 1 and 1000 classes"
    )
    (tmp_path / "imgs").mkdir()
    from PIL import Image

    Image.new("RGB", (8, 8)).save(tmp_path / "imgs" / "a.png")  # an OOD set that opens: the ID list is the error
    (tmp_path / "list.txt").write_text("../outside.png\n")
    line = _error_line(
        ["score", "--id", tmp_path / "list.txt", "--ood", tmp_path / "imgs", "--random-weights", "--method", "mcm",
         "-o", tmp_path / "s"]
    )  # fmt: skip
    assert "give the right --image-root, or --allow-outside-root if the list means it" in line
    assert "allow_outside_root" not in line


def test_a_resource_error_keeps_its_parameters_and_shows_the_flag():
    import torch

    from negvocab.vlm.loading import resolve_device

    if torch.cuda.is_available():
        pytest.skip("needs a machine without CUDA")
    with pytest.raises(ResourceError) as e:
        resolve_device("cuda")
    assert str(e.value).endswith("use device='cpu'") and cli_message(e.value).endswith("use --device cpu")
