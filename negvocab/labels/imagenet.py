"""The ImageNet-1k label space: 1000 wnids in the standard order, CLIP clean names, WordNet synonyms.

The classes ship with the package (``negvocab/resources/imagenet1k_classes.tsv``, made once by
``scripts/make_imagenet_wnids.py``), so the label space never needs a network, open_clip or
WordNet at run time:

- wnids: the standard ILSVRC-2012 order (sorted wnids, ``n01440764`` tench ... ``n15075141``
  toilet tissue); each is ``'n'`` + the 8-digit WordNet 3.0 noun offset;
- names: open_clip's ``IMAGENET_CLASSNAMES`` (the CLIP "clean" names; two are repeated:
  ``missile`` and ``sunglasses`` each name two classes);
- synonyms: the lemma names of the wnid's WordNet 3.0 synset, underscores -> spaces.
"""

from __future__ import annotations

import functools
import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.labels.wordnet import load_wordnet

__all__ = ["IdClasses", "RESOURCE", "WNID", "WNID_LIKE", "imagenet1k", "read_id_classes", "read_pinned_classes"]

#: a WordNet 3.0 noun id as ImageNet writes it
WNID = re.compile(r"^n\d{8}$")
#: what a wnid typed by hand looks like, right or wrong (n + digits, an O or l for a 0 or 1 among
#: them): never taken as a class name
WNID_LIKE = re.compile(r"^[nN](?=(?:.*\d){3})[0-9OoIl]{5,}$")

RESOURCE = "imagenet1k_classes.tsv"


@dataclass(frozen=True)
class IdClasses:
    """An in-distribution label space: parallel tuples of wnids, clean names and synonyms.

    Parameters
    ----------
    wnids : tuple of str
        One unique id per class.
    names : tuple of str
        One clean name per class.
    synonyms : tuple of tuples of str
        The synonyms of each class.
    dataset : str, default "imagenet1k"
        The label space's name.
    mapped : bool, default False
        The classes' senses were chosen for this label space: the synonym filter then also removes
        hyponyms of the classes.
    qualifiers : tuple of str, default ()
        Leading words that leave a class name's meaning in this label space (a mapped CUB-200's
        "american": "American tree sparrow" is its Tree Sparrow); the synonym filter reads a label
        behind one as the class (a class file's ``# qualifier:`` lines).
    """

    wnids: tuple[str, ...]
    names: tuple[str, ...]
    synonyms: tuple[tuple[str, ...], ...]
    dataset: str = "imagenet1k"
    #: the classes' senses were chosen for this label space (:func:`negvocab.labels.labelspace.map_label_space`,
    #: or pinned in a ``name<TAB>wnid`` file): the synonym filter then also removes hyponyms of the classes
    mapped: bool = field(default=False, compare=False)
    #: leading words that leave a class name's meaning in this label space (the synonym filter's ``qualified`` rule)
    qualifiers: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        n = len(self.wnids)
        if n == 0:
            raise InputError("an ID label space needs at least one class")
        if len(self.names) != n or len(self.synonyms) != n:
            raise InputError(
                f"ID label space: {n} wnids, {len(self.names)} names and "
                f"{len(self.synonyms)} synonym lists differ in length"
            )
        if len(set(self.wnids)) != n:
            raise InputError("ID label space: duplicate wnids")

    def __len__(self) -> int:
        return len(self.wnids)

    @classmethod
    def from_names(cls, names: Iterable[str], dataset: str = "custom") -> IdClasses:
        """A custom label space from class names (deduplicated, in order): ids ``custom00000``...,
        each name its own only synonym (no WordNet synonyms are known for it)."""
        uniq = list(dict.fromkeys(n.strip() for n in names if n.strip()))
        return cls(
            wnids=tuple(f"custom{i:05d}" for i in range(len(uniq))),
            names=tuple(uniq),
            synonyms=tuple((n,) for n in uniq),
            dataset=dataset,
        )

    def to_record(self) -> dict[str, Any]:
        """The label space itself, for a results or vocabulary file: name, size, wnids (None when made
        up for custom names) and class names, so a reader need not guess what "subset100" held."""
        wnids = list(self.wnids)
        custom = all(w.startswith("custom") for w in wnids)
        return {"dataset": self.dataset, "n": len(wnids), "wnids": None if custom else wnids, "names": list(self.names)}

    def index_of(self, wnid: str) -> int:
        """Position of ``wnid`` in the class order; :class:`InputError` if it is not a class."""
        try:
            return self._index()[wnid]
        except KeyError:
            raise InputError(f"{wnid!r} is not one of the {len(self)} {self.dataset} classes") from None

    def _index(self) -> dict[str, int]:
        cached = self.__dict__.get("_index_map")
        if cached is None:
            cached = {w: i for i, w in enumerate(self.wnids)}
            object.__setattr__(self, "_index_map", cached)
        return cached

    def subset(self, wnids: list[str] | tuple[str, ...]) -> IdClasses:
        """The classes ``wnids`` (in the given order), e.g. an ImageNet-100 style split."""
        idx = [self.index_of(w) for w in wnids]
        return IdClasses(
            wnids=tuple(self.wnids[i] for i in idx),
            names=tuple(self.names[i] for i in idx),
            synonyms=tuple(self.synonyms[i] for i in idx),
            dataset=f"{self.dataset}-subset{len(idx)}",
            mapped=self.mapped,
            qualifiers=self.qualifiers,
        )


@functools.cache
def imagenet1k() -> IdClasses:
    """The 1000 ImageNet-1k classes in the standard order (wnids, CLIP clean names, WordNet synonyms)."""
    text = resources.files("negvocab").joinpath("resources", RESOURCE).read_text(encoding="utf-8")
    rows = [line.split("\t") for line in text.splitlines()[1:] if line]
    return IdClasses(
        wnids=tuple(r[0] for r in rows),
        names=tuple(r[1] for r in rows),
        synonyms=tuple(tuple(r[2].split("|")) for r in rows),
    )


def read_id_classes(path: str | os.PathLike[str] | None) -> IdClasses:
    """The ID label space: ImageNet-1k (None), or a file of wnids (a subset of ImageNet-1k) and/or
    class names (a custom label space; a name has no WordNet synonyms), one a line. Something that
    looks like a wnid but is not one of ImageNet-1k is refused, never taken as a class name.

    A line ``name<TAB>wnid`` pins a class's WordNet 3.0 noun sense (any noun, not only ImageNet-1k's):
    the class keeps its name, takes the synset's lemma names as synonyms, and the label space is
    ``mapped`` (the synonym filter's hyponym rule applies). A file with such lines is read by
    :func:`read_pinned_classes`.

    Parameters
    ----------
    path : str or PathLike, optional
        The label-space file; None gives ImageNet-1k.
    """
    if path is None:
        return imagenet1k()
    p = Path(path).expanduser()
    text = read_text(p, "ID classes file", "; give one wnid or class name a line")
    lines = [
        (i, ln.strip()) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip() and not ln.startswith("#")
    ]
    if not lines:
        raise InputError(f"{p}: the ID classes file is empty")
    if any("\t" in x for _, x in lines):
        return read_pinned_classes(p, lines)
    known = imagenet1k()._index()
    for i, x in lines:
        if WNID_LIKE.match(x) and not WNID.match(x):
            raise InputError(
                f"{p}: line {i}: {x!r} is not a wnid (n and 8 digits, "
                "e.g. n01440764); correct it, or write the class name"
            )
        if WNID.match(x) and x not in known:
            raise InputError(
                f"{p}: line {i}: {x!r} is not one of the 1000 ImageNet-1k wnids; "
                "give ImageNet-1k wnids, or class names for another label space"
            )
    if all(WNID.match(x) for _, x in lines):
        try:
            return imagenet1k().subset([x for _, x in lines])
        except InputError as e:  # a repeated wnid
            raise InputError(f"{p}: {e}") from e
    return _mixed(imagenet1k(), [x for _, x in lines], f"custom:{p.name}")


def read_pinned_classes(path: Path, lines: list[tuple[int, str]]) -> IdClasses:
    """A class file with ``name<TAB>wnid`` lines (senses pinned by hand) beside plain names and wnids:
    each line validated (one error naming the file, the line and what is allowed)."""
    allowed = "a line is a class name, an ImageNet-1k wnid, or NAME<TAB>WNID with a WordNet 3.0 noun wnid"
    base = imagenet1k()
    wnids: list[str] = []
    names: list[str] = []
    synonyms: list[tuple[str, ...]] = []
    for i, x in lines:
        fields = [f.strip() for f in x.split("\t")]
        if len(fields) > 2 or (len(fields) == 2 and (not fields[0] or not fields[1])):
            raise InputError(f"{path}: line {i}: {x!r} has {len(fields)} tab-separated fields; {allowed}")
        name, wnid = (fields[0], fields[1]) if len(fields) == 2 else (fields[0], "")
        if not wnid and WNID.match(name):
            name, wnid = "", name
        if wnid and not WNID.match(wnid):
            raise InputError(f"{path}: line {i}: {wnid!r} is not a wnid (n and 8 digits, e.g. n01440764); {allowed}")
        if wnid:
            j = base._index().get(wnid)
            lemmas = base.synonyms[j] if j is not None else _lemmas_of(wnid)
            if lemmas is None:
                raise InputError(f"{path}: line {i}: {wnid!r} is not a WordNet 3.0 noun synset; {allowed}")
            names.append(name or (base.names[j] if j is not None else lemmas[0]))
            synonyms.append(tuple(dict.fromkeys((name, *lemmas))) if name else lemmas)
        else:
            names.append(name)
            synonyms.append((name,))
        if wnid in wnids:
            raise InputError(f"{path}: line {i}: {wnid} is pinned twice; {allowed}, each wnid once")
        wnids.append(wnid or f"custom{len(wnids):05d}")
    return IdClasses(tuple(wnids), tuple(names), tuple(synonyms), dataset=f"custom:{path.name}", mapped=True)


def _lemmas_of(wnid: str) -> tuple[str, ...] | None:
    """The lemma names (underscores as spaces) of a WordNet 3.0 noun wnid, or None if it is none."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nltk warns before failing on an unknown offset
            synset = load_wordnet().synset_from_pos_and_offset("n", int(wnid[1:]))
    except Exception:  # nltk: an offset inside a line
        return None
    if synset is None:  # nltk: an offset past the end
        return None
    return tuple(x.replace("_", " ") for x in synset.lemma_names())


def _mixed(base: IdClasses, lines: list[str], dataset: str) -> IdClasses:
    """ImageNet-1k classes by wnid (with their names and synonyms) beside custom classes by name
    (ids ``custom00000``..., the name its own only synonym); repeats dropped, first kept."""
    wnids: list[str] = []
    names: list[str] = []
    synonyms: list[tuple[str, ...]] = []
    for x in dict.fromkeys(lines):
        j = base.index_of(x) if WNID.match(x) else None
        wnids.append(x if j is not None else f"custom{len(wnids):05d}")
        names.append(base.names[j] if j is not None else x)
        synonyms.append(base.synonyms[j] if j is not None else (x,))
    return IdClasses(tuple(wnids), tuple(names), tuple(synonyms), dataset=dataset)
