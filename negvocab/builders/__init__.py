"""Vocabulary builders: WordNet farthest-first, LLM (GPT siblings, EOE), oracle.

:data:`BUILTIN_BUILDERS` names the built-in builders (each one's vocabularies record its name as their
source), importing nothing: the builder registry registers them from it (lazily,
:mod:`negvocab.builders.catalog`) and the command line's ``build`` help lists them.
"""

#: the built-in builders, in registry order: each is ``negvocab.builders.catalog:<NAME upper-cased>``
BUILTIN_BUILDERS: tuple[str, ...] = (
    "wordnet",
    "gpt",
    "eoe",
    "oracle",
    "siblings",
    "mined",
    "negrefine",
    "csp",
    "interneg",
)

__all__ = ["BUILTIN_BUILDERS"]
