"""Deprecated: the vocabulary builders moved to :mod:`negvocab.builders` (one release of shims).

``negvocab.build.<module>`` re-exports ``negvocab.builders.<module>`` and warns once per import.
"""

from __future__ import annotations

import warnings

warnings.warn(
    "negvocab.build is deprecated; import from negvocab.builders (or the negvocab package)",
    DeprecationWarning,
    stacklevel=2,
)
