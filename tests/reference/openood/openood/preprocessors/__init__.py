"""``openood/preprocessors/__init__.py`` trimmed to ``BasePreprocessor`` (see ``openood/__init__.py``)."""

from .base_preprocessor import BasePreprocessor

__all__ = ["BasePreprocessor"]
