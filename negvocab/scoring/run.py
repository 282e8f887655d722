"""Deprecated: the pipelines over a VLM moved to :mod:`negvocab.evaluation` and the results writers
to :mod:`negvocab.report.results`; this re-export goes in the next release.

It imports upward (scoring is below evaluation): the layer contract lists it as the one exception.
"""

from __future__ import annotations

import warnings

from negvocab.core.textfiles import csv_text
from negvocab.evaluation.evaluate import RANDOM_WEIGHTS_WARNING, Evaluation, evaluate_vocabularies, flagged_id_images
from negvocab.evaluation.sweeps import SweepResult, is_ranked, sweep_vocabulary
from negvocab.report.plots import plot_sweep
from negvocab.report.results import format_table, write_results, write_sweep

__all__ = [
    "RANDOM_WEIGHTS_WARNING",
    "Evaluation",
    "SweepResult",
    "csv_text",
    "evaluate_vocabularies",
    "flagged_id_images",
    "format_table",
    "is_ranked",
    "plot_sweep",
    "sweep_vocabulary",
    "write_results",
    "write_sweep",
]

warnings.warn(
    "negvocab.scoring.run is deprecated; use negvocab.evaluate_vocabularies / sweep_vocabulary / write_results "
    "(negvocab.evaluation, negvocab.report.results)",
    DeprecationWarning,
    stacklevel=2,
)
