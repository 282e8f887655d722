"""Reading candidate labels from any label file: a candidates table, a JSON list or a vocabulary file."""

from __future__ import annotations

import os
from pathlib import Path

from negvocab.labels.candidates import Candidate
from negvocab.labels.clean import CleanResult
from negvocab.vocab.label_files import candidate_rows, candidates_from_rows
from negvocab.vocab.vocabulary import Vocabulary

__all__ = ["load_candidates"]


def load_candidates(path: str | os.PathLike[str], cleaning: CleanResult | None = None) -> list[Candidate]:
    """Candidates from a file: an export of ``negvocab candidates`` or any vocabulary file.

    ``.tsv`` / ``.csv`` (a ``text`` column; ``pos``, ``lexname``, ``synset``, ``offset`` if present)
    and ``.json`` lists of objects keep each label's part of speech (the ``neglabel`` templates
    need it); a JSON list of strings, a text file (one label a line) or a vocabulary JSON gives
    nouns. Repeats are dropped
    (first kept). Raises :class:`InputError` naming the file when it is missing, malformed or empty.

    Every text goes through the one label normaliser as a hand-written list does
    (:func:`negvocab.labels.clean.written_plainly`: names written plainly, WordNet's included, stay
    as they are; decorated ones are cleaned, sentences dropped); ``cleaning``, when given, collects
    what changed and what was dropped.

    Parameters
    ----------
    path : str or PathLike
        The candidates file.
    cleaning : CleanResult, optional
        Collects what the normaliser changed and dropped.
    """
    cleaning = CleanResult() if cleaning is None else cleaning
    path = Path(path)
    rows = candidate_rows(path)
    if rows is not None:
        return candidates_from_rows(rows, path, cleaning)
    vocab = Vocabulary.load(path)  # cleaned there as its kind of file asks
    cleaning.changed.update(vocab.settings.get("label_cleaning", {}).get("changed", {}))
    cleaning.dropped.extend(vocab.settings.get("label_cleaning", {}).get("dropped", []))
    return candidates_from_rows(vocab.labels, path, cleaning, cleaned=True)
