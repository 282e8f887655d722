"""Vocabulary diagnostics: marginal gains of labels, coverage of OOD classes, repair curves, confusions."""
