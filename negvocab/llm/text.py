"""Cleaning of label strings proposed by a language model.

Models decorate list items ("1. Snow leopard.", "- **lynx**", "\"ocelot\""); a label is kept as
a short lower-case phrase with single spaces, in Unicode NFKC form without zero-width characters,
so that the same category proposed in two rounds (or spelled with other code points) counts once.
A letter with a dot starts many species names ("T. rex", "E. coli"), so only ``a)`` and ``(a)``
count as letter list markers.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

_NUMBERING = re.compile(r"^\s*(?:[-*\u2022\u2013]+|\(?\d{1,3}[.):]|\(?[a-zA-Z]\))\s+")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_WS = re.compile(r"\s+")
_STRIP = " \t\r\n\"'`*_.,;:!?\u201c\u201d\u2018\u2019"


def clean_label(text: str) -> str:
    """One label: list markers, quotes, markdown emphasis and end punctuation removed, lower case.

    >>> clean_label(' 2. **Snow  Leopard**. ')
    'snow leopard'
    """
    s = unicodedata.normalize("NFKC", str(text)).translate(_INVISIBLE)
    s = _NUMBERING.sub("", s)
    s = _WS.sub(" ", s).strip(_STRIP).strip()
    return s.lower()


def clean_labels(raw: Iterable[str]) -> list[str]:
    """Cleaned labels, empty ones dropped, repeats dropped (first occurrence kept)."""
    out: dict[str, None] = {}
    for item in raw:
        label = clean_label(item)
        if label:
            out.setdefault(label, None)
    return list(out)
