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

from negvocab.builders.wordnet import _as_candidates, check_quantile, check_selection, quantile_from_top, quantile_top_k
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
    "csp_departures",
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


def _per_pos_cut(order: list[int], is_adj: list[bool], n_nouns: int, n_adj: int, ratio: float) -> list[int]:
    """CSP's cut: the first ``int(ratio * n)`` nouns and adjectives of the ranking ``order`` (candidate
    indices), nouns first; ``n`` counts every candidate of the part of speech, as CSP's code does."""
    want = {False: int(ratio * n_nouns), True: int(ratio * n_adj)}
    blocks: dict[bool, list[int]] = {False: [], True: []}
    for i in order:
        block = blocks[is_adj[i]]
        if len(block) < want[is_adj[i]]:
            block.append(i)
    if not blocks[False] and not blocks[True]:
        raise InputError(f"ratio {ratio} selects no labels from {n_nouns + n_adj} candidates", param="ratio")
    return blocks[False] + blocks[True]


def _once(order: list[int], texts: list[str]) -> tuple[list[int], list[str]]:
    """``order`` with each text's first index only, and the texts met again (a vocabulary holds a label
    once: a conjugated adjective equal to a noun, "direct object", is kept by CSP as a second label)."""
    seen: set[str] = set()
    kept, again = [], []
    for i in order:
        if texts[i] in seen:
            again.append(texts[i])
        else:
            seen.add(texts[i])
            kept.append(i)
    return kept, again


def _synonym_filtered(order: list[int], texts: list[str], id_classes: IdClasses) -> tuple[list[int], dict[str, Any]]:
    """``order`` less the candidates the synonym filter drops (negvocab's, not CSP's), and its report."""
    ranked = Vocabulary.from_labels(list(dict.fromkeys(texts[i] for i in order)), source="csp")
    filtered = SynonymFilter(id_classes).apply(ranked)
    allowed = set(filtered.labels)
    return [i for i in order if texts[i] in allowed], filtered.settings["synonym_filter"]


def _meta(
    picked: list[int], cands: list[Candidate], texts: list[str], distances: np.ndarray, drawn: list[str], n_nouns: int
) -> dict[str, dict[str, Any]]:
    """Each picked label's meta: rank, distance, pos, lexname, synset; adjective and superclass if conjugated."""
    meta: dict[str, dict[str, Any]] = {}
    for rank, i in enumerate(picked, start=1):
        c = cands[i]
        meta[texts[i]] = {"rank": rank, "distance": float(distances[i]), "pos": "n" if i < n_nouns else "a"}
        meta[texts[i]].update(lexname=c.lexname, synset=c.synset)
        if i >= n_nouns:
            meta[texts[i]].update(adjective=c.text, superclass=drawn[i - n_nouns])
    return meta


def csp_departures(
    *, reduce: str, synonym_filter: bool, ratio: float | None, held_once: int = 0, templates: str = "csp"
) -> list[str]:
    """What a CSP build does that CSP's code does not (empty: CSP's construction), for its record."""
    out = []
    if held_once:
        out.append(f"{held_once} labels CSP's code selects twice (as a noun and conjugated) held once")
    if templates != "csp":
        out.append(f"templates {templates} (CSP's code: csp)")
    elif reduce != "raw_mean":
        out.append(f"templates reduced by {reduce} (CSP's code: raw_mean)")
    if synonym_filter:
        out.append("synonym filter on (CSP's code has none: the pool and the ratio's cut change)")
    if ratio is None:
        out.append("one ranking of both parts of speech (CSP's code: ratio 0.15 of each)")
    elif ratio != 0.15:
        out.append(f"ratio {ratio} (CSP's code: 0.15)")
    return out


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
    reduce: str | None = None,
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
    names, its 4 adjective templates for conjugated adjectives, each label the normalised mean of its
    RAW prompt embeddings as CSP's code; ``reduce`` overrides the set's reduction), ranked by
    :func:`csp_distances` ascending (ties in candidate order: nouns, then adjectives) and, unless
    ``synonym_filter=False`` (CSP's code has no such filter), synonym-filtered. A conjugated adjective
    equal to a noun ("direct object") stays a candidate of its own, counted among the adjectives, as in
    CSP's code; where both are selected the vocabulary holds the label once, as the noun. ``size=None``
    returns the whole ranking (take any M with ``.head(M)``), ``size`` its first M; ``ratio`` (CSP:
    0.15) takes ``int(ratio * n)`` of the n nouns and of the n conjugated adjectives in CSP's order
    (the selected nouns, then the selected adjectives): not a ranking, so no prefix of it is a CSP
    vocabulary of a smaller ratio.

    Labels carry ``meta`` {rank, distance, pos, lexname, synset; ``adjective`` and ``superclass`` for a
    conjugated one}; ``settings`` record the model, templates (and their reduction), quantile, seed,
    superclasses, counts and ``departures_from_csp`` (:func:`csp_departures`; empty: CSP's construction).

    Parameters
    ----------
    vlm : VLM
        The model that encodes the candidates and the ID class names.
    size : int, optional
        The vocabulary size M (>= 1): the ranking's first M; None returns the whole ranking.
    quantile : float, default 0.95
        The quantile of each candidate's cosines to the ID classes (:func:`csp_distances`).
    ratio : float, optional
        In (0, 1]: ``int(ratio * n)`` of the nouns and of the conjugated adjectives, instead of ``size``
        (not both).
    seed : int, default 0
        Seed of the superclass template drawn for each adjective (:func:`conjugate`).
    superclasses : sequence of str, default CSP_SUPERCLASSES
        The superclass templates the adjectives are conjugated with.
    preset : str, default "csp"
        The candidate preset (:func:`csp_candidates`), when ``candidates`` is None.
    templates : str or sequence of str, default "csp"
        The prompt templates that encode candidates and ID class names.
    reduce : str, optional
        Overrides the template set's reduction of the prompt embeddings.
    candidates : iterable of Candidate or str, optional
        Candidate labels instead of the preset's.
    id_classes : IdClasses, optional
        The ID classes (default ImageNet-1k).
    max_similarity : float, default 0.95
        A candidate whose largest cosine to an ID class exceeds it goes last (:func:`csp_distances`).
    synonym_filter, batch_size, progress
        As for :func:`negvocab.builders.wordnet.build_wordnet_vocabulary`: drop labels that name an ID
        class; the encoder batch size; progress bars.
    """
    # long: CSP's recipe in order (candidates, conjugation, encode, rank, filter, cut); each step is a call
    check_selection(size, ratio, quantile)
    custom = candidates is not None
    nouns, adjectives = csp_candidates(preset, candidates=candidates)
    drawn = _draw(len(adjectives), seed, superclasses)
    # CSP's code keeps a conjugated adjective equal to a noun ("direct object") as a second candidate,
    # embedded with the adjective templates, and counts it in the adjectives' cut
    texts = [c.text for c in nouns] + [t.format(c.text) for c, t in zip(adjectives, drawn, strict=True)]
    pos = ["n"] * len(nouns) + ["a"] * len(adjectives)
    is_adj = [p == "a" for p in pos]
    noun_texts = set(texts[: len(nouns)])
    clashes = sum(t in noun_texts for t in texts[len(nouns) :])
    id_classes = id_classes if id_classes is not None else imagenet1k()
    tset = resolve_templates(templates).with_reduce(reduce)
    cand_emb = vlm.encode_text(texts, tset, pos=pos, batch_size=batch_size, progress=progress)
    id_emb = vlm.encode_text(list(id_classes.names), tset, pos="n", batch_size=batch_size, progress=progress)
    distances = csp_distances(cand_emb, id_emb, quantile, max_similarity=max_similarity)
    order = [int(i) for i in np.argsort(distances, kind="stable")]
    report: dict[str, Any] | None = None
    if synonym_filter:
        order, report = _synonym_filtered(order, texts, id_classes)
    if ratio is not None:
        order = _per_pos_cut(order, is_adj, len(nouns), len(adjectives), ratio)
    picked, again = _once(order, texts)
    if size is not None:
        if size > len(picked):
            raise InputError(
                f"asked for {size} labels but the filtered CSP ranking has only {len(picked)}", param="size"
            )
        picked = picked[:size]
    meta = _meta(picked, nouns + adjectives, texts, distances, drawn, len(nouns))
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
        "n_candidates": {"nouns": len(nouns), "adjectives": len(adjectives), "conjugated_equal_to_a_noun": clashes},
        "selected_twice": again,
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
        "id_class_list": id_classes.to_record(),
        "selection": "farthest first by the quantile of cosine similarity to the ID class names (CSP)",
    }
    if report is not None:
        settings["synonym_filter"] = report
    settings["departures_from_csp"] = csp_departures(
        reduce=tset.reduce, synonym_filter=synonym_filter, ratio=ratio, held_once=len(again), templates=tset.name
    )
    return Vocabulary.from_labels([texts[i] for i in picked], source="csp", meta=meta, settings=settings)
