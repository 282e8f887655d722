"""A trimmed copy of OpenOOD v1.5 (https://github.com/Jingkang50/OpenOOD, commit
3c35632ee91b54b09d1f085d04f94744cece7d0b, MIT License,
Copyright (c) 2021 Jingkang Yang; ../LICENSE): the parts of its ``Evaluator``'s code path that
tests/adapters/test_openood_evaluator.py runs with negvocab's postprocessor, CPU-only. OpenOOD is not on PyPI.

Each module names the file it comes from and what was trimmed. Package ``__init__``s hold only the
names the copied modules import (OpenOOD's import every postprocessor, network and dataset)."""
