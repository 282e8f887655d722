"""Pipelines over a VLM (L5): encode the image sets and labels, score them, and compute the metric rows.

- :mod:`negvocab.evaluation.evaluate`: :func:`evaluate_vocabularies` (the ``score`` command);
- :mod:`negvocab.evaluation.sweeps`: :func:`sweep_vocabulary` (every vocabulary size M in one pass);
- :mod:`negvocab.evaluation.encode`, :mod:`~negvocab.evaluation.checks`, :mod:`~negvocab.evaluation.records`:
  encoding the sets, the checks before a run, and the rows and metadata of results;
- :mod:`negvocab.evaluation.subsample`: how FPR@95 varies with the number of OOD images (App. C).
"""
