"""Scores (MCM, GL-MCM, NegLabel, EOE, ...), vocabulary-size sweeps and OOD metrics.

Importing the package registers the built-in methods (:mod:`negvocab.scoring.catalog`), so the registry
(:mod:`negvocab.scoring.methods`) holds them whichever of its modules is imported first.
"""

from negvocab.scoring import catalog as _catalog  # noqa: F401  # registers the built-in methods
