"""Text of the report's tables: break opportunities between words, never inside one.

A results table must fit a 1280 px screen and an A4 page without breaking a word in two ("gra phi
cs"): its cells wrap only at spaces and at the break opportunities :func:`word_breaks` adds after
``_``, ``/`` and ``@`` ("average_precision" wraps as "average_ / precision", "wordnet@100" as
"wordnet@ / 100").
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import markupsafe

__all__ = ["word_breaks"]


def word_breaks(text: object) -> markupsafe.Markup:
    """``text`` HTML-escaped, with ``<wbr>`` after every ``_``, ``/`` and ``@``."""
    import markupsafe  # comes with jinja2, which renders the report

    return markupsafe.Markup(re.sub(r"([_/@])", r"\1<wbr>", str(markupsafe.escape(text))))
