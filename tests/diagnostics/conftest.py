"""The tiny image folders and model options of the scoring tests, shared."""

from tests.scoring.conftest import model_args, tiny  # noqa: F401
