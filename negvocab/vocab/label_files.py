"""Candidate tables: the ``.tsv``/``.csv`` exports of ``negvocab candidates`` and JSON lists of labels.

Each row's text goes through the one label normaliser as a hand-written list does
(:func:`negvocab.labels.clean.written_plainly`); rows keep their part of speech, lexname and synset.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.labels.candidates import CANDIDATE_FIELDS, POS_NAMES, Candidate
from negvocab.labels.clean import CleanResult, clean_labels_report, written_plainly

__all__ = ["candidate_rows", "candidates_from_rows"]


def candidate_rows(path: Path) -> list[Any] | None:
    """The rows of a candidates table (``.tsv``/``.csv``) or JSON list, or None for another kind of file."""
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".csv"):
        return _read_table(path, "\t" if suffix == ".tsv" else ",")
    if suffix == ".json":
        return _json_list(path)
    return None


def candidates_from_rows(
    rows: Sequence[Any], path: Path, cleaning: CleanResult, *, cleaned: bool = False
) -> list[Candidate]:
    """Candidates from table rows (dicts with ``text``) or label strings; repeats dropped (first kept).

    ``cleaned``: the texts were normalised already (a vocabulary file); else each goes through the
    normaliser and ``cleaning`` collects what changed and what was dropped.
    """
    out: dict[str, Candidate] = {}
    for i, row in enumerate(rows):
        if isinstance(row, str):  # a JSON list of label strings
            row = {"text": row}
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise InputError(f"{path}: entry {i + 1} has no 'text'; expected the columns {', '.join(CANDIDATE_FIELDS)}")
        texts = [row["text"].strip()]
        if not cleaned:
            report = clean_labels_report(texts, keep=written_plainly)
            cleaning.changed.update(report.changed)
            cleaning.dropped.extend(report.dropped)
            texts = report.labels  # none (a sentence), one, or the parts of glued items
        for text in texts:
            if not text or text in out:
                continue
            pos = str(row.get("pos") or "n").strip().lower()
            if pos not in POS_NAMES:
                raise InputError(
                    f"{path}: entry {i + 1} ({text!r}) has an unknown part of speech {pos!r}; use n, a, s, v or r"
                )
            try:
                offset = int(row.get("offset") or 0)
            except (TypeError, ValueError):
                raise InputError(
                    f"{path}: entry {i + 1} ({text!r}) has a non-integer offset {row.get('offset')!r}"
                ) from None
            out[text] = Candidate(text, pos, str(row.get("lexname") or ""), str(row.get("synset") or ""), offset)
    if not out:
        raise InputError(f"{path}: no candidates in this file")
    return list(out.values())


def _read_table(path: Path, delimiter: str) -> list[dict[str, str]]:
    lines = [
        ln for ln in read_text(path, "candidates file").splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
    reader = csv.DictReader(lines, delimiter=delimiter)
    if reader.fieldnames:
        reader.fieldnames = [f.strip().lower() for f in reader.fieldnames]  # "Text", " pos"
    if reader.fieldnames and "text" not in reader.fieldnames and "label" in reader.fieldnames:
        reader.fieldnames = ["text" if f == "label" else f for f in reader.fieldnames]  # image lists name it 'label'
    if not reader.fieldnames or "text" not in reader.fieldnames:
        raise InputError(
            f"{path}: no 'text' or 'label' column in the header; expected {delimiter.join(CANDIDATE_FIELDS)!r}"
        )
    try:
        return list(reader)
    except csv.Error as e:
        raise InputError(f"{path}: cannot read the candidates table ({e})") from e


def _json_list(path: Path) -> list[Any] | None:
    """The JSON list in ``path`` (a ``negvocab candidates`` export), or None for anything else."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError):
        return None  # Vocabulary.load reports it
    return doc if isinstance(doc, list) else None
