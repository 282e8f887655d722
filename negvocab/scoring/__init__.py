"""Scores (MCM, GL-MCM, NegLabel, EOE), pool-size sweeps and OOD metrics."""
