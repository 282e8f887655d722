"""``openood/datasets``: only ``imglist_dataset.py`` and ``base_dataset.py`` are copied (``openood/__init__.py``)."""
