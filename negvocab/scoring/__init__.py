"""Scores (MCM, GL-MCM, NegLabel, EOE), pool-size sweeps and OOD metrics."""

from negvocab.scoring import tanl as _tanl  # noqa: F401  part "tanl" (issue 30): registers the TANL stream method
