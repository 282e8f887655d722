"""``openood/utils/__init__.py`` trimmed to ``Config`` (see ``openood/__init__.py``)."""

from .config import Config

__all__ = ["Config"]
