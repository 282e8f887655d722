"""Cleaning of label strings proposed by a language model: the one normaliser of
:mod:`negvocab.labels.clean`, re-exported here for the LLM layer (and older imports)."""

from __future__ import annotations

from negvocab.labels.clean import CleanResult, clean_label, clean_labels, clean_labels_report, parse_label_list

__all__ = ["CleanResult", "clean_label", "clean_labels", "clean_labels_report", "parse_label_list"]
