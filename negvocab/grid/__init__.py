"""Experiment grids: models x vocabularies x OOD sets x methods x conventions (``negvocab grid``)."""
