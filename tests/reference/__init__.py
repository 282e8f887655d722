"""The authors' own code, trimmed and attributed, run beside negvocab's in the tests."""
