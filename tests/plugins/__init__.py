"""Plug-in modules the tests load as a user would (``NEGVOCAB_PLUGINS``, a grid's ``plugins``)."""
