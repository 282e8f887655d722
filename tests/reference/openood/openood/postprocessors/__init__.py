"""``openood/postprocessors/__init__.py`` trimmed to ``BasePostprocessor`` (see ``openood/__init__.py``)."""

from .base_postprocessor import BasePostprocessor

__all__ = ["BasePostprocessor"]
