"""``openood/evaluators``: only ``metrics.py`` is copied (see ``openood/__init__.py``)."""
