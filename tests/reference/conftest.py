"""The copied OpenOOD package is code to run from the tests (on the path of a subprocess), not tests: pytest
does not collect it (its doctest collection would import it into the test process and change which base
class negvocab's OpenOOD postprocessor has there)."""

collect_ignore = ["openood"]
