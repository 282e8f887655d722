"""The foundations every layer stands on (L0): errors, types, plugins and the registry type, deprecation
shims, optional extras, progress, provenance, secrets' redaction, and the shared output machinery
(:mod:`~negvocab.core.atomic` staging and commit, :mod:`~negvocab.core.outdir` folders and locks,
:mod:`~negvocab.core.textfiles` reading text files).

Nothing here imports a layer above it; inside, the modules import down in the order of the
``core`` contract in ``pyproject.toml``.
"""
