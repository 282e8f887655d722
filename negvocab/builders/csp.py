"""The CSP vocabulary: NegLabel's nouns plus "conjugated" adjectives, farthest first (docs/methods.md#csp).

Chen et al., "Conjugated Semantic Pool Improves OOD Detection with Pre-trained Vision-Language
Models", NeurIPS 2024; as the released code builds it (``MengyuanChen21/NeurIPS2024-CSP``,
``mmcls/models/classifiers/multi_modal.py`` ``CLIPScalableClassifier``): every adjective is joined
with one superclass noun drawn (seeded) from 14 (``{} object``, ``{} scene``, ``{} creature``, ...),
nouns and conjugated adjectives are embedded with their own templates, each candidate's distance is
the ``quantile`` of its cosines to the ID classes (1 where its nearest ID class is above 0.95), and
the farthest of each part of speech are kept. One ranking of both parts of speech serves every size
M (``.head(M)``); ``ratio`` gives CSP's own cut and order.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.builders.wordnet import _as_candidates, check_quantile, quantile_from_top, quantile_top_k
from negvocab.core.errors import InputError
from negvocab.labels.candidates import Candidate, wordnet_candidates
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vlm.templates import resolve_templates
from negvocab.vocab import Vocabulary
from negvocab.vocab.index import as_matrix, knn

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM

__all__ = [
    "CSP_EXCLUDE",
    "CSP_SUPERCLASSES",
    "build_csp_vocabulary",
    "conjugate",
    "csp_candidates",
    "csp_distances",
    "csp_pool",
]

#: CSP's ``csp_templates`` (class_names.py): the superclass nouns an adjective is joined with
CSP_SUPERCLASSES: tuple[str, ...] = (
    "{} environment",
    "{} space",
    "{} object",
    "{} scene",
    "{} place",
    "{} item",
    "{} area",
    "{} view",
    "{} thing",
    "{} pattern",
    "{} structure",
    "{} landscape",
    "{} vista",
    "{} creature",
)
#: lexicographer files CSP's candidates leave out: NegLabel's corpus has no noun.animal or noun.food,
#: and CSP's config (custom_config/clip-ViT-B16.py, txt_exclude) drops four more files
CSP_EXCLUDE: tuple[str, ...] = ("noun.animal", "noun.food", "noun.person", "noun.quantity", "noun.group", "adj.pert")


def conjugate(adjectives: Sequence[str], *, seed: int = 0, superclasses: Sequence[str] = CSP_SUPERCLASSES) -> list[str]:
    """Each adjective joined with one superclass template drawn for it, in order.

    CSP's draw: ``random.seed(seed)``, then ``random.choice(superclasses).format(adjective)`` for each
    adjective in turn; :class:`random.Random` with the same seed gives the same draws without
    touching the global generator.
    """
    return [t.format(a) for a, t in zip(adjectives, _draw(len(adjectives), seed, superclasses), strict=True)]


def _draw(n: int, seed: int, superclasses: Sequence[str]) -> list[str]:
    """The superclass template drawn for each of ``n`` adjectives in turn (CSP's ``random.choice``)."""
    if not superclasses:
        raise InputError("superclasses is empty; give templates such as '{} object'", param="superclasses")
    for t in superclasses:
        if not isinstance(t, str) or t.count("{}") != 1:
            raise InputError(f"superclass template {t!r} must contain '{{}}' once", param="superclasses")
    rng = random.Random(seed)
    return [rng.choice(list(superclasses)) for _ in range(n)]


def csp_pool(preset: str = "csp") -> list[Candidate]:
    """The WordNet candidates of ``preset``: ``"csp"`` (NegLabel's pool less :data:`CSP_EXCLUDE`) or a
    :func:`~negvocab.labels.candidates.wordnet_candidates` preset (``"neglabel"``, ``"all"``)."""
    return wordnet_candidates(exclude_lexnames=CSP_EXCLUDE) if preset == "csp" else wordnet_candidates(preset)


def csp_candidates(
    preset: str = "csp", *, candidates: Iterable[Candidate | str] | None = None
) -> tuple[list[Candidate], list[Candidate]]:
    """The nouns and the adjectives (satellites included) CSP ranks, each in the pool's order.

    ``preset``: ``"csp"`` (NegLabel's pool less :data:`CSP_EXCLUDE`), or a WordNet candidate preset
    (``"neglabel"``, ``"all"``). ``candidates`` replaces the preset (plain strings are nouns; every
    part of speech but adjectives is prompted as a noun, as CSP has only the two).
    """
    pool = csp_pool(preset) if candidates is None else _as_candidates(candidates)
    nouns = [c for c in pool if c.pos not in ("a", "s")]
    adjectives = [c for c in pool if c.pos in ("a", "s")]
    if not nouns and not adjectives:
        raise InputError("no candidates to rank (candidates is empty)", param="candidates")
    return nouns, adjectives


def csp_distances(
    candidate_emb: np.ndarray, id_emb: np.ndarray, quantile: float = 0.95, *, max_similarity: float = 0.95
) -> np.ndarray:
    """CSP's distance of each candidate from the ID classes, float64 [n]: the ``quantile`` (numpy/torch
    ``linear``) of its cosines to the C ID embeddings, set to 1 where its largest cosine exceeds
    ``max_similarity`` (a near-copy of an ID class goes last). Small = far.

    Reads only the top ``quantile_top_k(C, quantile)`` cosines of each candidate (an exact k-NN
    search), whose first is the largest.
    """
    check_quantile(quantile)
    cand = as_matrix(candidate_emb, "candidate_emb")
    ids = as_matrix(id_emb, "id_emb")
    if cand.shape[1] != ids.shape[1] or len(ids) == 0:
        raise InputError(f"embeddings must be [n, d] and [C, d] with the same d, got {cand.shape} and {ids.shape}")
    if len(cand) == 0:
        return np.zeros(0)
    top, _ = knn(cand, ids, quantile_top_k(len(ids), quantile))
    d = quantile_from_top(top, len(ids), quantile)
    d[top[:, 0] > max_similarity] = 1.0
    return d


def _per_pos_cut(kept: list[str], is_adj: dict[str, bool], n_nouns: int, n_adj: int, ratio: float) -> list[str]:
    """CSP's cut: the first ``int(ratio * n)`` nouns and adjectives of the ranking, nouns first."""
    want = {False: int(ratio * n_nouns), True: int(ratio * n_adj)}
    blocks: dict[bool, list[str]] = {False: [], True: []}
    for label in kept:
        block = blocks[is_adj[label]]
        if len(block) < want[is_adj[label]]:
            block.append(label)
    if not blocks[False] and not blocks[True]:
        raise InputError(f"ratio {ratio} selects no labels from {n_nouns + n_adj} candidates", param="ratio")
    return blocks[False] + blocks[True]


def build_csp_vocabulary(
    vlm: VLM,
    size: int | None = None,
    *,
    quantile: float = 0.95,
    ratio: float | None = None,
    seed: int = 0,
    superclasses: Sequence[str] = CSP_SUPERCLASSES,
    preset: str = "csp",
    templates: str | Sequence[str] = "csp",
    candidates: Iterable[Candidate | str] | None = None,
    id_classes: IdClasses | None = None,
    max_similarity: float = 0.95,
    synonym_filter: bool = True,
    batch_size: int | None = None,
    progress: bool | None = None,
) -> Vocabulary:
    """The CSP vocabulary (docs/methods.md#csp): nouns and conjugated adjectives, farthest first.

    Adjectives are conjugated (:func:`conjugate`, ``seed``); nouns, conjugated adjectives and ID class
    names are encoded with ``templates`` (default ``"csp"``: CSP's 8 noun templates for nouns and ID
    names, its 4 adjective templates for conjugated adjectives), ranked by :func:`csp_distances`
    ascending (ties in candidate order: nouns, then adjectives) and synonym-filtered. ``size=None``
    returns the whole ranking (take any M with ``.head(M)``), ``size`` its first M; ``ratio`` (CSP:
    0.15) takes ``int(ratio * n)`` of the n nouns and of the n conjugated adjectives in CSP's order
    (the selected nouns, then the selected adjectives): not a ranking, so no prefix of it is a CSP
    vocabulary of a smaller ratio.

    Labels carry ``meta`` {rank, distance, pos, lexname, synset; ``adjective`` and ``superclass`` for a
    conjugated one}; ``settings`` record the model, templates, quantile, seed, superclasses, counts.
    """
    # long: CSP's recipe in order (candidates, conjugation, encode, rank, filter, cut); each step is a call
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
        raise InputError(f"size (M, the vocabulary size) must be an integer >= 1, got {size!r}", param="size")
    if ratio is not None and not 0 < ratio <= 1:
        raise InputError(f"ratio must be in (0, 1], got {ratio}", param="ratio")
    if ratio is not None and size is not None:
        raise InputError("give either size or ratio, not both", param="ratio")
    check_quantile(quantile)
    custom = candidates is not None
    nouns, adjectives = csp_candidates(preset, candidates=candidates)
    drawn = _draw(len(adjectives), seed, superclasses)
    noun_texts = {c.text for c in nouns}
    # a conjugated label that is also a noun ("natural object") stays a noun: a vocabulary holds a label once
    pairs = [(c, t) for c, t in zip(adjectives, drawn, strict=True) if t.format(c.text) not in noun_texts]
    clashes = len(adjectives) - len(pairs)
    texts = [c.text for c in nouns] + [t.format(c.text) for c, t in pairs]
    pos = ["n"] * len(nouns) + ["a"] * len(pairs)
    id_classes = id_classes if id_classes is not None else imagenet1k()
    tset = resolve_templates(templates)
    cand_emb = vlm.encode_text(texts, tset, pos=pos, batch_size=batch_size, progress=progress)
    id_emb = vlm.encode_text(list(id_classes.names), tset, pos="n", batch_size=batch_size, progress=progress)
    distances = csp_distances(cand_emb, id_emb, quantile, max_similarity=max_similarity)
    order = np.argsort(distances, kind="stable")
    kept = [texts[i] for i in order]
    report: dict[str, Any] | None = None
    if synonym_filter:
        filtered = SynonymFilter(id_classes).apply(Vocabulary.from_labels(kept, source="csp"))
        kept, report = filtered.labels, filtered.settings["synonym_filter"]
    index = {t: i for i, t in enumerate(texts)}
    is_adj = {t: p == "a" for t, p in zip(texts, pos, strict=True)}
    if ratio is not None:
        kept = _per_pos_cut(kept, is_adj, len(nouns), len(pairs), ratio)
    elif size is not None:
        if size > len(kept):
            raise InputError(f"asked for {size} labels but the filtered CSP ranking has only {len(kept)}", param="size")
        kept = kept[:size]
    meta: dict[str, dict[str, Any]] = {}
    for rank, label in enumerate(kept, start=1):
        i = index[label]
        c, template = (nouns[i], None) if i < len(nouns) else pairs[i - len(nouns)]
        meta[label] = {"rank": rank, "distance": float(distances[i]), "pos": pos[i], "lexname": c.lexname}
        meta[label]["synset"] = c.synset
        if template is not None:
            meta[label].update(adjective=c.text, superclass=template)
    settings: dict[str, Any] = {
        "model": vlm.identity,
        "random_weights": vlm.random_weights,
        "templates": tset.describe(),
        "quantile": quantile,
        "max_similarity": max_similarity,
        "seed": seed,
        "superclasses": list(superclasses),
        "preset": "custom candidates" if custom else preset,
        "size": size,
        "ratio": ratio,
        "order": "csp: selected nouns, then selected adjectives" if ratio is not None else "farthest first",
        "n_candidates": {"nouns": len(nouns), "adjectives": len(pairs), "conjugated_clashing_with_nouns": clashes},
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
        "id_class_list": id_classes.to_record(),
        "selection": "farthest first by the quantile of cosine similarity to the ID class names (CSP)",
    }
    if report is not None:
        settings["synonym_filter"] = report
    return Vocabulary.from_labels(kept, source="csp", meta=meta, settings=settings)
