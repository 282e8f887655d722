"""Doors for pytorch-ood and OpenOOD users: negvocab's scorers over an open_clip model and a vocabulary,
in the shapes those libraries expect.

- :mod:`negvocab.adapters.zeroshot`: the shared core (ID prompts and negatives embedded once, image
  batches scored by any method of the registry, high = ID). No extra dependency.
- :mod:`negvocab.adapters.pytorch_ood`: pytorch-ood ``Detector`` classes (``pip install 'negvocab[pytorch-ood]'``),
  returning pytorch-ood's outlier scores (high = OOD, the negative of negvocab's).
- :mod:`negvocab.adapters.openood`: an OpenOOD-style postprocessor (``setup``/``postprocess``,
  hyperparameters from the postprocessor config), returning OpenOOD's confidence (high = ID).

Nothing here is imported by ``import negvocab``.
"""
