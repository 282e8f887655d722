"""Copied from OpenOOD (https://github.com/Jingkang50/OpenOOD, MIT License,
Copyright (c) 2021 Jingkang Yang; the licence text is ../../LICENSE),
``openood/preprocessors/base_preprocessor.py`` at commit
3c35632ee91b54b09d1f085d04f94744cece7d0b.

Trimmed to what the Evaluator's path uses: the class, ``setup`` and ``__call__`` (its subclasses set
``self.transform`` themselves); ``__init__``, which builds training transforms, is left out.
"""


class BasePreprocessor:
    """For train dataset standard transformation."""

    def setup(self, **kwargs):
        pass

    def __call__(self, image):
        return self.transform(image)
