"""``openood/evaluation_api/__init__.py`` trimmed to the Evaluator (see ``openood/__init__.py``)."""

from .evaluator import Evaluator

__all__ = ["Evaluator"]
