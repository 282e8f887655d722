"""The matching key of a label: what the synonym filter and the label-space mapper compare.

Case, accents, apostrophes and periods, other punctuation, underscores, hyphens and a leading article
are no part of a name's identity: "The Jack-o'-Lantern", "jack o lantern" and "jack_o_lantern" are one key.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["ARTICLES", "normalise"]

ARTICLES = frozenset({"a", "an", "the"})
_DROP = re.compile(r"['\u2019\u2018`\u00b4.]")  # apostrophes and periods join: jack-o'-lantern, St. Bernard
_SPACE = re.compile(r"[^0-9a-z]+")  # everything else separates words


def normalise(label: str) -> str:
    """The matching key of a label: lowercase ASCII words joined by single spaces.

    >>> normalise("The Jack-o'-Lantern")
    'jack o lantern'
    >>> normalise("toilet_tissue")
    'toilet tissue'
    """
    text = label.casefold()
    if not text.isascii():
        text = "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))
    words = _SPACE.sub(" ", _DROP.sub("", text)).split()
    if len(words) > 1 and words[0] in ARTICLES and text.lstrip()[len(words[0]) : len(words[0]) + 1].isspace():
        words = words[1:]  # "the tench", "a goldfish"; not "A-line" (no space after the letter)
    return " ".join(words)
