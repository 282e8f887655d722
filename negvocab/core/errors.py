"""User-facing errors.

Every error a user can cause (bad file, unknown model, empty vocabulary, dead server) is a
:class:`NegvocabError` whose message is one line naming the thing and what to do. The CLI prints
that line and exits non-zero; library users catch the class. Programming errors stay ordinary
exceptions.

A message names the library's parameters (``vocabularies``, ``top_k``, ``order='given'``), never a
CLI flag; ``param`` lists the parameters it names, so that the CLI can show each as its flag
(:func:`negvocab.cli.flags.cli_message`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["DiskFullError", "InputError", "NegvocabError", "ResourceError"]


class NegvocabError(Exception):
    """An error caused by input or environment, with a one-line message fit for a user.

    ``param``: the parameter (or parameters) the message names, written there as the bare name or as
    ``name=value``; the CLI shows them as its flags.

    Parameters
    ----------
    *args
        The message (one line), as :class:`Exception` takes it.
    param : str or sequence of str, optional
        The parameter (or parameters) the message names.
    """

    param: tuple[str, ...] = ()

    def __init__(self, *args: object, param: str | Sequence[str] | None = None) -> None:
        super().__init__(*args)
        self.param: tuple[str, ...] = (param,) if isinstance(param, str) else tuple(param or ())


class InputError(NegvocabError, ValueError):
    """A file, argument or option value is missing, malformed or out of range.

    Parameters
    ----------
    *args, param
        As for :class:`NegvocabError`: the one-line message, and the parameter(s) it names.
    """


class ResourceError(NegvocabError, RuntimeError):
    """Something the toolkit needs is not available: WordNet, model weights, a server.

    Parameters
    ----------
    *args, param
        As for :class:`NegvocabError`: the one-line message, and the parameter(s) it names.
    """


class DiskFullError(OSError, ResourceError):
    """A write failed because the disk (or a quota) is full: one line naming the file system, the
    free space and the space needed. Also an :class:`OSError` (errno ENOSPC), so code that survives
    a failed write (the embedding cache keeps the computed result) still does."""

    def __str__(self) -> str:
        return str(self.strerror or super().__str__())
