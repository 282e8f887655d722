"""Vocabularies and every label-file format (L2).

- :mod:`negvocab.vocab.vocabulary`: :class:`Vocabulary` (labels + provenance, versioned JSON, ``.txt``);
- :mod:`negvocab.vocab.label_files`: candidate tables (``.tsv``/``.csv``) and JSON lists;
- :mod:`negvocab.vocab.candidates`: :func:`load_candidates` from any of these files.
"""

from negvocab.vocab.candidates import load_candidates
from negvocab.vocab.vocabulary import (
    ORACLE_CAVEAT,
    SCHEMA_VERSION,
    Vocabulary,
    add_source,
    known_sources,
    labels_hash,
    with_caveats,
)

__all__ = [
    "ORACLE_CAVEAT",
    "SCHEMA_VERSION",
    "Vocabulary",
    "add_source",
    "known_sources",
    "labels_hash",
    "load_candidates",
    "with_caveats",
]
