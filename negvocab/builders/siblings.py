"""WordNet siblings: the offline, free analogue of GPT siblings (docs/methods.md, "Vocabularies").

GPT siblings ask a chat model, for every ID class, for "visually confusable non-ImageNet categories
... same-granularity sibling species or visually adjacent objects". WordNet holds much of that
structure already: an ID class's co-hyponyms. For every ID class with a WordNet synset:

1. go ``l`` hypernym steps up (``l = 1`` first: the parents) and exactly ``l`` hyponym steps back
   down: the synsets at the class's own depth below the shared ancestor (a species' siblings are
   species, never the genus' whole subtree); instance hyponyms (named individuals) are not
   categories and are left out;
2. drop every ID synset, every hypernym (ancestor) and every hyponym (descendant) of an ID synset,
   and every head word the synonym filter reads as an ID name or synonym;
3. if fewer than ``per_class`` are left, widen to ``l + 1`` (up to ``levels``): nearer relatives
   always come first, cousins only fill what siblings leave;
4. name each synset by its head word (first lemma, underscores as spaces, lowercased) and rank
   each class's labels by the cosine similarity of their text embedding to the class name's
   (closest first: "just outside the class boundary"); keep ``per_class``.

The vocabulary is shaped like a GPT-sibling one: ``views[wnid]`` is each class's ranked labels and
``meta[label]["proposed_by"]`` maps every class that proposed a label to its provenance there
(rank, similarity, hypernym path, distance in edges). The labels are ordered round-robin over the
classes (every class's closest label, then every class's second, ...), recorded as ``rank``, so
the first M labels of the vocabulary are close to the union of the first K labels of every view.
Deterministic (WordNet 3.0 and the model only) and offline.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.builders.llm_merge import count_stats
from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text
from negvocab.labels.candidates import is_usable
from negvocab.labels.imagenet import WNID, IdClasses, imagenet1k, read_id_classes
from negvocab.labels.synonyms import SynonymFilter
from negvocab.labels.wordnet import load_wordnet
from negvocab.vlm.templates import TemplatesSpec, resolve_templates
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.labels.synonyms import SynonymFilter
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

__all__ = [
    "SELECTION",
    "Sibling",
    "build_sibling_vocabulary",
    "check_counts",
    "head_per_class",
    "head_word",
    "rank_relatives",
    "relatives_at",
    "sibling_id_classes",
    "wordnet_siblings",
]

log = logging.getLogger(__name__)

SELECTION = "WordNet co-hyponyms of each ID class at its own depth, ranked by text similarity to the class name"


@dataclass(frozen=True)
class Sibling:
    """One WordNet relative of one ID class: the synset, its head word and how it was reached."""

    label: str  # head word: first lemma, underscores as spaces, lowercased
    synset: str  # nltk synset name, e.g. "rudd.n.01"
    wnid: str  # "n" + 8-digit offset
    level: int  # hypernym steps up to the shared ancestor (1: a sibling, 2: a cousin)
    path: tuple[str, ...]  # nltk names from the ID synset up to the ancestor and down to this one

    @property
    def distance(self) -> int:
        """Edges between the ID synset and this synset through the shared ancestor."""
        return 2 * self.level


# -- ID classes ---------------------------------------------------------------------------------
def sibling_id_classes(source: IdClasses | Sequence[str] | str | os.PathLike[str] | None = None) -> IdClasses:
    """The ID classes for :func:`build_sibling_vocabulary`: ImageNet-1k (``None``), an
    :class:`IdClasses`, or wnids / names (a list, or a file with one a line, ``#`` comments).

    A wnid may be any WordNet 3.0 noun (``n`` + 8-digit offset), not only an ImageNet-1k class; it
    is named by its ImageNet-1k clean name if it has one, else its head word, with its lemma names
    as synonyms. A plain name keeps a ``custom`` id: it has no synset, so it proposes no siblings,
    but its name still goes into the synonym filter (``negvocab build siblings`` maps names to
    synsets first: :func:`negvocab.data.label_space.open_label_space`). A file with ``NAME<TAB>WNID``
    lines is read as :func:`negvocab.labels.imagenet.read_id_classes` reads it (senses pinned).
    """
    if source is None:
        return imagenet1k()
    if isinstance(source, IdClasses):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = Path(source).expanduser()
        text = read_text(path, "ID classes file", "; give one wnid or class name a line")
        entries = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        if any("\t" in e for e in entries):  # NAME<TAB>WNID lines pin senses (negvocab map-classes writes them)
            return read_id_classes(path)
        where, dataset = str(path), f"custom:{path.name}"
    else:
        entries = [str(s).strip() for s in source if str(s).strip()]
        where, dataset = "id_classes", "custom"
    if not entries:
        raise InputError(f"{where}: no ID classes listed")
    known = imagenet1k()
    wn = None
    wnids: list[str] = []
    names: list[str] = []
    synonyms: list[tuple[str, ...]] = []
    for i, entry in enumerate(dict.fromkeys(entries)):
        if WNID.match(entry):
            if entry in known.wnids:
                j = known.index_of(entry)
                wnids.append(entry)
                names.append(known.names[j])
                synonyms.append(known.synonyms[j])
                continue
            wn = wn or load_wordnet()
            syn = _synset_of(wn, entry)
            if syn is None:
                raise InputError(
                    f"{where}: {entry} is not a WordNet 3.0 noun synset; give a wnid such as n01440764 or a class name"
                )
            lemmas = tuple(x.replace("_", " ") for x in syn.lemma_names())
            wnids.append(entry)
            names.append(lemmas[0])
            synonyms.append(lemmas)
        else:
            wnids.append(f"custom{i:05d}")
            names.append(entry)
            synonyms.append((entry,))
    if len(wnids) == len(known) and tuple(wnids) == known.wnids:
        return known
    return IdClasses(tuple(wnids), tuple(names), tuple(synonyms), dataset=dataset)


def _synset_of(wn: Any, wnid: str) -> Any:
    """The noun synset of ``wnid`` or None (not a WordNet 3.0 noun offset)."""
    import warnings

    if not WNID.match(wnid):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nltk warns before failing on an unknown offset
            return wn.synset_from_pos_and_offset("n", int(wnid[1:]))
    except Exception:
        return None


# -- WordNet relatives --------------------------------------------------------------------------
def _up(s: Any) -> list[Any]:
    return sorted(s.hypernyms() + s.instance_hypernyms(), key=lambda x: x.offset())


def _down(s: Any) -> list[Any]:
    return sorted(s.hyponyms(), key=lambda x: x.offset())  # categories only, not named instances


def head_word(synset: Any) -> str:
    """A synset's label: its first lemma, underscores as spaces, lowercased (as the WordNet pool)."""
    return synset.lemma_names()[0].replace("_", " ").lower()


def relatives_at(synset: Any, level: int) -> dict[Any, tuple[Any, ...]]:
    """Synsets exactly ``level`` hyponym steps below the ancestors ``level`` hypernym steps above
    ``synset`` (itself included), each with one path to it (up, then down), in a fixed order."""
    frontier: dict[Any, tuple[Any, ...]] = {synset: (synset,)}
    for _ in range(level):
        nxt: dict[Any, tuple[Any, ...]] = {}
        for s, path in frontier.items():
            for parent in _up(s):
                nxt.setdefault(parent, (*path, parent))
        frontier = nxt
    for _ in range(level):
        nxt = {}
        for s, path in frontier.items():
            for child in _down(s):
                nxt.setdefault(child, (*path, child))
        frontier = nxt
    return frontier


def wordnet_siblings(
    id_classes: IdClasses,
    *,
    per_class: int = 20,
    levels: int = 1,
    synonym_filter: SynonymFilter | None = None,
) -> tuple[dict[str, list[Sibling]], dict[str, str], dict[str, Any]]:
    """Every ID class's WordNet relatives, unranked (see the module docstring, steps 1-3).

    Returns ``(relatives, skipped, removed)``: per class with a synset its relatives (the nearest
    level first, then in a fixed traversal order, synsets by offset; one per head word), the classes
    without a synset (id -> name), and the head words the synonym filter removed (label ->
    :class:`~negvocab.labels.synonyms.Match`).
    """
    check_counts(per_class, levels)
    wn = load_wordnet()
    filt = synonym_filter if synonym_filter is not None else SynonymFilter(id_classes)
    synsets: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for wnid, name in zip(id_classes.wnids, id_classes.names, strict=True):
        syn = _synset_of(wn, wnid)
        if syn is None:
            skipped[wnid] = name
        else:
            synsets[wnid] = syn
    if skipped:
        shown = ", ".join(repr(n) for n in list(skipped.values())[:5])
        log.warning(
            "%d ID classes have no WordNet synset and propose no siblings: %s%s",
            len(skipped),
            shown,
            " ..." if len(skipped) > 5 else "",
        )
    excluded: set[Any] = set(synsets.values())
    for syn in synsets.values():
        excluded.update(syn.closure(_up))
        excluded.update(syn.closure(_down))
    removed: dict[str, Any] = {}
    relatives: dict[str, list[Sibling]] = {}
    for wnid, syn in synsets.items():
        found: dict[str, Sibling] = {}
        for level in range(1, levels + 1):
            for rel, path in relatives_at(syn, level).items():
                if rel in excluded:
                    continue
                label = head_word(rel)
                if label in found or label in removed or not is_usable(label):
                    continue
                match = filt.explain(label)
                if match is not None:
                    removed[label] = match
                    continue
                found[label] = Sibling(label, rel.name(), f"n{rel.offset():08d}", level, tuple(s.name() for s in path))
            if len(found) >= per_class:
                break  # widen only classes with too few
        relatives[wnid] = list(found.values())
    return relatives, skipped, removed


def check_counts(per_class: int, levels: int) -> None:
    """Raise :class:`InputError` unless K >= 1 and 1 <= levels <= 10 (integers): before any work."""
    if isinstance(per_class, bool) or not isinstance(per_class, (int, np.integer)) or per_class < 1:
        raise InputError(f"per_class must be an integer >= 1, got {per_class!r}")
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or not 1 <= levels <= 10:
        raise InputError(f"levels must be an integer between 1 and 10 (hypernym steps up), got {levels!r}")


# -- the vocabulary -----------------------------------------------------------------------------
def rank_relatives(relatives: Sequence[Sibling], similarity: np.ndarray, per_class: int) -> list[int]:
    """Indices of the ``per_class`` relatives to keep, in rank order: nearer levels first, then
    the higher ``similarity`` to the ID class, then the label (a fixed order for exact ties)."""
    keys = sorted(range(len(relatives)), key=lambda i: (relatives[i].level, -float(similarity[i]), relatives[i].label))
    return keys[:per_class]


def build_sibling_vocabulary(
    vlm: VLM,
    id_classes: IdClasses | Sequence[str] | str | os.PathLike[str] | None = None,
    per_class: int = 20,
    levels: int = 1,
    templates: TemplatesSpec = "paper8",
    *,
    synonym_filter: SynonymFilter | None = None,
    batch_size: int | None = None,
    progress: bool | None = None,
) -> Vocabulary:
    """The WordNet-sibling vocabulary: ``per_class`` relatives of every ID class (module docstring).

    Parameters
    ----------
    vlm : VLM
        Ranks each class's relatives by text similarity to the class name (cached embeddings).
    id_classes : IdClasses, list of wnids/names, or a file of them
        Default ImageNet-1k; see :func:`sibling_id_classes`. Classes given only as names have no
        synset: they are listed in ``settings["skipped"]`` (and logged) and propose nothing.
    per_class : int
        K, labels kept per class (default 20, as the GPT recipe asks per request).
    levels : int
        Hypernym steps up to widen to for classes with fewer than K siblings (default 1: siblings only).
    templates
        Template preset or list used for both the relatives and the class names.
    synonym_filter : SynonymFilter, optional
        Default: one over ``id_classes`` (their names and WordNet synonyms).

    Returns
    -------
    Vocabulary
        Source ``siblings``; ``views[wnid]`` each class's ranked labels; ``meta[label]`` its
        ``rank`` (round-robin position), ``synset``, ``pos`` and ``proposed_by`` {wnid: {rank,
        similarity, level, distance, synset, path}}; settings as a GPT vocabulary's (per-class
        counts and their statistics, what the filter removed) plus the skipped classes.
    """
    check_counts(per_class, levels)
    classes = sibling_id_classes(id_classes)
    tset = resolve_templates(templates)
    filt = synonym_filter if synonym_filter is not None else SynonymFilter(classes)
    relatives, skipped, removed = wordnet_siblings(classes, per_class=per_class, levels=levels, synonym_filter=filt)
    labels = _sibling_labels(relatives, len(classes), levels)
    label_emb = vlm.encode_text(labels, tset, pos="n", batch_size=batch_size, progress=progress)
    wanted = list(relatives)
    index = {w: i for i, w in enumerate(classes.wnids)}
    class_emb = vlm.encode_text(
        [classes.names[index[w]] for w in wanted], tset, pos="n", batch_size=batch_size, progress=progress
    )
    views, proposed, first_synset = _ranked_views(relatives, labels, label_emb, class_emb, per_class)
    ordered = _round_robin(views)
    meta = {
        label: {"rank": r, "pos": "n", "synset": first_synset[label], "proposed_by": proposed[label]}
        for r, label in enumerate(ordered, start=1)
    }
    found = {w: len(relatives[w]) for w in wanted}
    kept = {w: len(views[w]) for w in wanted}
    settings: dict[str, Any] = {
        "task": "wordnet_siblings",
        "model": vlm.identity,
        "random_weights": vlm.random_weights,
        "templates": tset.describe(),
        "per_class": per_class,
        "levels": levels,
        "id_classes": classes.dataset,
        "keys": len(wanted),
        "wordnet": "3.0",
        "selection": SELECTION,
        "unique_per_key": found,
        "kept_per_key": kept,
        "unique_per_key_stats": count_stats(list(found.values())),
        "kept_per_key_stats": count_stats(list(kept.values())),
        "levels_used": _levels_used(relatives, views),
        "short_classes": sorted(w for w, n in kept.items() if n < per_class),
        "skipped": skipped,
        "synonym_filter": filt.report(ordered, removed),
    }
    log.info(
        "siblings: %d labels for %d classes (%d skipped, %d short of %d)",
        len(ordered),
        len(wanted),
        len(skipped),
        len(settings["short_classes"]),
        per_class,
    )
    return Vocabulary.from_labels(ordered, source="siblings", meta=meta, settings=settings, views=views)


def _sibling_labels(relatives: dict[str, list[Sibling]], n_classes: int, levels: int) -> list[str]:
    """Every relative's label, sorted (the rows of the label embeddings); an error when no class has a
    synset or none has a relative left."""
    if not relatives:
        raise InputError(
            f"none of the {n_classes} ID classes has a WordNet synset; give wnids (n01440764) to build siblings"
        )
    labels = sorted({s.label for rel in relatives.values() for s in rel})
    if not labels:
        raise InputError(
            f"no WordNet siblings left for the {len(relatives)} ID classes within {levels} level(s); try more levels",
            param="levels",
        )
    return labels


def _ranked_views(
    relatives: dict[str, list[Sibling]],
    labels: list[str],
    label_emb: np.ndarray,
    class_emb: np.ndarray,
    per_class: int,
) -> tuple[dict[str, list[str]], dict[str, dict[str, dict[str, Any]]], dict[str, str]]:
    """Each class's relatives ranked by similarity to its name (``class_emb`` rows in ``relatives``'
    order; ``label_emb`` rows in ``labels``' order): ``(views, proposed_by, first synset of each label)``."""
    row = {lab: i for i, lab in enumerate(labels)}
    views: dict[str, list[str]] = {}
    proposed: dict[str, dict[str, dict[str, Any]]] = {}
    first_synset: dict[str, str] = {}
    for c, (wnid, rel) in enumerate(relatives.items()):
        rows = [row[s.label] for s in rel]
        sims = (label_emb[rows].astype(np.float64) @ class_emb[c].astype(np.float64)) if rows else np.empty(0)
        keep = rank_relatives(rel, sims, per_class)
        views[wnid] = [rel[i].label for i in keep]
        for r, i in enumerate(keep, start=1):
            s = rel[i]
            first_synset.setdefault(s.label, s.synset)
            proposed.setdefault(s.label, {})[wnid] = {
                "rank": r,
                "similarity": round(float(sims[i]), 6),
                "level": s.level,
                "distance": s.distance,
                "synset": s.synset,
                "path": list(s.path),
            }
    return views, proposed, first_synset


def head_per_class(vocab: Vocabulary, k: int) -> Vocabulary:
    """The vocabulary of the first ``k`` labels of every per-class view (a sweep over K): the same
    for WordNet-sibling, GPT-sibling and EOE ``near`` vocabularies (any with ``views``).

    Labels keep ``vocab``'s order; the views are cut to ``k``; ``settings["per_class_head"] = k``.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be an integer >= 1, got {k!r}")
    if not vocab.views:
        raise InputError(f"a {vocab.source} vocabulary has no per-class views to take the first {k} labels of")
    keep = {lab for view in vocab.views.values() for lab in view[:k]}
    cut = vocab.subset(keep, settings={"per_class_head": int(k)})
    return cut.model_copy(update={"views": {w: view[:k] for w, view in vocab.views.items()}})


def _round_robin(views: dict[str, list[str]]) -> list[str]:
    """Every view's first label (in class order), then every view's second, ... without repeats."""
    out: dict[str, None] = {}
    depth = max((len(v) for v in views.values()), default=0)
    for r in range(depth):
        for view in views.values():
            if r < len(view):
                out.setdefault(view[r], None)
    return list(out)


def _levels_used(relatives: dict[str, list[Sibling]], views: dict[str, list[str]]) -> dict[str, int]:
    """How many classes reached each level: the deepest level among their kept labels."""
    by_label = {w: {s.label: s.level for s in rel} for w, rel in relatives.items()}
    counts: dict[str, int] = {}
    for w, view in views.items():
        if view:
            deepest = max(by_label[w][lab] for lab in view)
            counts[str(deepest)] = counts.get(str(deepest), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: int(kv[0])))
