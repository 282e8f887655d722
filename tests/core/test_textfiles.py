"""The one reader of users' text files: UTF-8 without a BOM, one-line errors naming the file."""

from __future__ import annotations

import pytest

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text


def test_bom_dropped_and_errors_named(tmp_path):
    f = tmp_path / "v.txt"
    f.write_bytes("\ufeffcafé\n".encode())
    assert read_text(f, "vocabulary file") == "café\n"
    with pytest.raises(InputError, match=r"none\.txt: no such class file; hint$"):
        read_text(tmp_path / "none.txt", "class file", "; hint")
    f.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"v\.txt: not a UTF-8 text file \(vocabulary file\)$"):
        read_text(f, "vocabulary file")
    with pytest.raises(InputError, match=r"cannot read vocabulary file \(Is a directory\)"):
        read_text(tmp_path, "vocabulary file")
