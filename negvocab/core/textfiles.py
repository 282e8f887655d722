"""Reading the text files users name (vocabularies, lists, templates, prompts): one mechanism.

Every such file is read as UTF-8 with a byte-order mark dropped (Windows editors write one; it is
never part of the content), and every failure is one :class:`~negvocab.core.errors.InputError` that
names the file and what it was meant to be.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError

__all__ = ["csv_text", "read_text"]


def read_text(path: str | os.PathLike[str], what: str, hint: str = "") -> str:
    """The text of ``path``, the user's ``what`` (e.g. ``"vocabulary file"``).

    ``hint`` (e.g. ``" (one wnid or class name a line)"``) is added to every error message.
    """
    p = Path(path).expanduser()
    try:
        return p.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InputError(f"{p}: no such {what}{hint}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{p}: not a UTF-8 text file ({what}){hint}") from e
    except OSError as e:
        raise InputError(f"{p}: cannot read {what} ({e.strerror or e}){hint}") from e


def csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    """CSV text of ``rows`` with ``columns`` in order (extra keys ignored): the one CSV writer of results tables."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return buf.getvalue()
