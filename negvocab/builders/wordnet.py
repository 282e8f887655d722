"""The WordNet vocabulary: candidates ranked farthest first from the ID classes
(docs/methods.md#wordnet-farthest-first).

NegLabel's NegMining, as the paper uses it: embed every WordNet candidate and the 1000 ImageNet-1k
class names with the same templates, score each candidate by the 95th percentile of its cosine
similarities to the ID classes, and rank ascending (farthest first). The vocabulary of size M
is the first M labels of the ranking, so one embedding pass serves every M (``.head(M)``).
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.deprecation import renamed_kwargs
from negvocab.core.errors import InputError
from negvocab.labels.candidates import Candidate, wordnet_candidates
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vlm.templates import TemplatesSpec, resolve_templates
from negvocab.vocab import Vocabulary
from negvocab.vocab.index import as_matrix, knn

if TYPE_CHECKING:
    from negvocab.labels.candidates import Candidate
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

__all__ = [
    "build_wordnet_vocabulary",
    "check_percentile",
    "check_quantile",
    "farthest_first",
    "quantile_from_top",
    "quantile_top_k",
]

log = logging.getLogger(__name__)


def quantile_top_k(n_id: int, quantile: float) -> int:
    """How many of the largest similarities the ``quantile`` quantile of ``n_id`` values needs.

    numpy's ``linear`` quantile of C sorted values a_0 <= ... <= a_{C-1} at q is
    ``a_lo + (h - lo) * (a_{lo+1} - a_lo)`` with ``h = (C - 1) q`` and ``lo = floor(h)``: it reads
    a_lo and a_{lo+1}, i.e. only the top ``C - lo`` values (51 for C = 1000, q = 0.95).
    """
    lo = math.floor((n_id - 1) * quantile)
    return n_id - lo


def quantile_from_top(top_desc: np.ndarray, n_id: int, quantile: float) -> np.ndarray:
    """The ``quantile`` quantile (numpy ``linear``) of each row, from its top values.

    Parameters
    ----------
    top_desc : ndarray [n, k]
        Each row's k largest values in descending order, k >= ``quantile_top_k(n_id, quantile)``.
    n_id : int
        How many values each full row has.
    quantile : float
        Quantile level in [0, 1].

    Returns
    -------
    ndarray, float64 [n]
    """
    h = (n_id - 1) * quantile
    lo = math.floor(h)
    frac = h - lo
    hi = min(lo + 1, n_id - 1)
    a = top_desc[:, n_id - 1 - lo].astype(np.float64)  # ascending index lo = descending index C-1-lo
    b = top_desc[:, n_id - 1 - hi].astype(np.float64)
    return a + frac * (b - a)


def check_selection(size: int | None, ratio: float | None, quantile: float) -> None:
    """Refuse a vocabulary size M that is not an integer >= 1, a ratio outside (0, 1], both at once, or a
    bad quantile, before a ranked builder's long embedding pass."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
        raise InputError(f"size (M, the vocabulary size) must be an integer >= 1, got {size!r}", param="size")
    if ratio is not None and not 0 < ratio <= 1:
        raise InputError(f"ratio must be in (0, 1], got {ratio}", param="ratio")
    if ratio is not None and size is not None:
        raise InputError("give either size or ratio, not both", param="ratio")
    check_quantile(quantile)


def check_quantile(quantile: float) -> None:
    """Raise :class:`InputError` unless ``quantile`` is a quantile level in (0, 1]."""
    if not 0.0 < quantile <= 1.0:
        hint = f" (a fraction: {quantile / 100:g}, not a percent)" if 1 < quantile <= 100 else ""
        raise InputError(f"quantile must be in (0, 1], got {quantile}{hint}", param="quantile")


def check_percentile(percentile: float) -> None:
    """Deprecated name of :func:`check_quantile` (one release)."""
    warnings.warn("check_percentile is renamed check_quantile", DeprecationWarning, stacklevel=2)
    check_quantile(percentile)


@renamed_kwargs(percentile="quantile")
def farthest_first(
    candidate_emb: np.ndarray,
    id_emb: np.ndarray,
    quantile: float = 0.95,
    *,
    device: str | None = None,
    batch_size: int = 65536,
    backend: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Rank candidates farthest first from the ID classes by a quantile of their similarities.

    d(c) = the ``quantile`` quantile over ID classes i of cos(t_c, t_i) (numpy's ``linear``
    interpolation between order statistics; 0.95 by default, NegLabel's eta = 5%). Candidates are
    ranked by d ascending; ties keep the candidates' index order. Only the top
    ``quantile_top_k(C, quantile)`` similarities of each candidate are needed: an exact k-NN
    search over the ID embeddings (:func:`negvocab.vocab.index.knn`).

    Parameters
    ----------
    candidate_emb : ndarray, float [n, d]
        L2-normalised candidate label embeddings.
    id_emb : ndarray, float [C, d]
        L2-normalised ID class embeddings (all C classes, repeats included).
    quantile : float
        Quantile level in (0, 1], e.g. 0.95 (not 95).
    device, batch_size, backend
        Passed to :func:`negvocab.vocab.index.knn`.

    Returns
    -------
    order : ndarray, int64 [n]
        Candidate indices, farthest (smallest d) first.
    distances : ndarray, float64 [n]
        d(c) for each candidate, in the candidates' input order.

    Examples
    --------
    >>> import numpy as np
    >>> ids = np.eye(3)[:2]                       # two ID classes along x and y
    >>> cands = np.array([[1.0, 0, 0], [0, 0, 1.0], [0.6, 0.8, 0]])
    >>> order, d = farthest_first(cands, ids, quantile=0.5)
    >>> order.tolist(), np.round(d, 2).tolist()
    ([1, 0, 2], [0.5, 0.0, 0.7])
    """
    check_quantile(quantile)
    cand = as_matrix(candidate_emb, "candidate_emb")
    ids = as_matrix(id_emb, "id_emb")
    if cand.shape[1] != ids.shape[1]:
        raise InputError(f"embeddings must be [n, d] and [C, d] with the same d, got {cand.shape} and {ids.shape}")
    if len(cand) == 0 or len(ids) == 0:
        raise InputError("farthest_first needs at least one candidate and one ID embedding")
    t0 = time.perf_counter()
    k = quantile_top_k(len(ids), quantile)
    top, _ = knn(cand, ids, k, device=device, batch_size=batch_size, backend=backend)
    distances = quantile_from_top(top, len(ids), quantile)
    order = np.argsort(distances, kind="stable").astype(np.int64)
    log.info(
        "ranked %d candidates against %d ID classes (k=%d) in %.2f s", len(cand), len(ids), k, time.perf_counter() - t0
    )
    return order, distances


def _ratio_selection(
    ranked: list[str], groups: list[str], cands: Sequence[Any], ratio: float
) -> tuple[list[str], dict[str, int]]:
    """NegLabel's ratio mode: of each part-of-speech group with n candidates, the first
    ``int(ratio * n)`` of ``ranked`` (whose groups are ``groups``), in ranking order; and those counts."""
    pool_counts: dict[str, int] = {}
    for c in cands:
        g = _pos_group(c.pos)
        pool_counts[g] = pool_counts.get(g, 0) + 1
    per_pos = {g: int(ratio * n) for g, n in pool_counts.items()}
    taken = dict.fromkeys(per_pos, 0)
    selected = []
    for label, g in zip(ranked, groups, strict=True):
        if taken[g] < per_pos[g]:
            selected.append(label)
            taken[g] += 1
    if not selected:
        raise InputError(f"ratio {ratio} selects no labels from {len(cands)} candidates")
    return selected, per_pos


def _as_candidates(candidates: Iterable[Candidate | str]) -> list[Any]:
    """Candidates as objects with text/pos/lexname/synset (plain strings become nouns), deduplicated."""
    out: dict[str, Any] = {}
    for c in candidates:
        if isinstance(c, str):
            c = Candidate(text=c.strip(), pos="n", lexname="", synset="")
        if c.text and c.text not in out:
            out[c.text] = c
    if not out:
        raise InputError("no WordNet candidates to rank (candidates is empty)", param="candidates")
    return list(out.values())


def _pos_group(pos: str) -> str:
    return "a" if pos in ("a", "s") else pos


@renamed_kwargs(percentile="quantile")
def build_wordnet_vocabulary(
    vlm: VLM,
    size: int | None = None,
    *,
    quantile: float = 0.95,
    preset: str = "neglabel",
    templates: TemplatesSpec = "paper8",
    ratio: float | None = None,
    candidates: Iterable[Candidate | str] | None = None,
    id_classes: IdClasses | None = None,
    synonym_filter: bool = True,
    batch_size: int | None = None,
    progress: bool | None = None,
) -> Vocabulary:
    """The WordNet vocabulary of size M = ``size``, farthest first (docs/methods.md#wordnet-farthest-first).

    Candidates (default ``wordnet_candidates(preset)``) and the ID class names (default ImageNet-1k)
    are encoded with the same ``templates`` (cached), ranked by :func:`farthest_first`, and
    synonym-filtered (labels naming an ID class are dropped). ``size=None`` returns the whole
    filtered ranking; take any vocabulary size M from it with ``.head(M)``. ``ratio`` (e.g. 0.15) instead
    selects NegLabel's share of nouns and of adjectives separately: ``int(ratio * n)`` of each part
    of speech's n candidates, the farthest of them after filtering, merged in ranking order.

    Labels carry ``meta`` {rank (1 = farthest), distance, pos, lexname, synset}; ``settings`` record
    the model identity, templates, quantile, preset, size, ratio and whether weights were random.

    Parameters
    ----------
    vlm : VLM
        The model that encodes the candidates and the ID class names.
    size : int, optional
        The vocabulary size M (>= 1); None returns the whole filtered ranking.
    quantile : float, default 0.95
        The quantile of each candidate's similarities to the ID classes that ranks it
        (:func:`farthest_first`).
    preset : str, default "neglabel"
        The WordNet candidate preset (``wordnet_candidates(preset)``), when ``candidates`` is None.
    templates : TemplatesSpec, default "paper8"
        The prompt templates that encode candidates and ID class names.
    ratio : float, optional
        In (0, 1]: NegLabel's share of nouns and of adjectives, instead of ``size`` (not both).
    candidates : iterable of Candidate or str, optional
        Candidate labels instead of the preset's.
    id_classes : IdClasses, optional
        The ID classes (default ImageNet-1k).
    synonym_filter : bool, default True
        Drop labels that name an ID class.
    batch_size : int, optional
        The encoder batch size (``vlm.encode_text``'s).
    progress : bool, optional
        Show progress bars (``vlm.encode_text``'s default when None).
    """
    # long: the paper's recipe in order (pool, encode, farthest-first, filter); each step is a call
    check_selection(size, ratio, quantile)  # before the long embedding pass, not after it
    custom = candidates is not None
    if candidates is None:
        candidates = wordnet_candidates(preset)
    cands = _as_candidates(candidates)
    id_classes = id_classes if id_classes is not None else imagenet1k()
    tset = resolve_templates(templates)

    texts = [c.text for c in cands]
    cand_emb = vlm.encode_text(texts, tset, pos=[c.pos for c in cands], batch_size=batch_size, progress=progress)
    id_emb = vlm.encode_text(list(id_classes.names), tset, pos="n", batch_size=batch_size, progress=progress)
    order, distances = farthest_first(cand_emb, id_emb, quantile)
    ranked = [texts[i] for i in order]

    report: dict[str, Any] | None = None
    kept = ranked
    if synonym_filter:
        filt = SynonymFilter(id_classes)
        filtered = filt.apply(Vocabulary.from_labels(ranked, source="wordnet"))
        kept = filtered.labels
        report = filtered.settings["synonym_filter"]
    index = {t: i for i, t in enumerate(texts)}

    per_pos: dict[str, int] | None = None
    if ratio is not None:
        kept, per_pos = _ratio_selection(kept, [_pos_group(cands[index[x]].pos) for x in kept], cands, ratio)
    elif size is not None:
        if size > len(kept):
            raise InputError(f"asked for {size} labels but the filtered WordNet ranking has only {len(kept)}")
        kept = kept[:size]

    meta = {}
    for rank, label in enumerate(kept, start=1):
        c = cands[index[label]]
        meta[label] = {
            "rank": rank,
            "distance": float(distances[index[label]]),
            "pos": c.pos,
            "lexname": c.lexname,
            "synset": c.synset,
        }
    settings: dict[str, Any] = {
        "model": vlm.identity,
        "random_weights": vlm.random_weights,
        "templates": tset.describe(),
        "percentile": quantile,  # the file key keeps its name (vocabulary files, hashes)
        "preset": "custom candidates" if custom else preset,
        "size": size,
        "ratio": ratio,
        "candidates": len(cands),
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
        "id_class_list": id_classes.to_record(),  # ranked against these classes
        "selection": "farthest first by the percentile of cosine similarity to the ID class names",
    }
    if per_pos is not None:
        settings["ratio_counts"] = per_pos
    if report is not None:
        settings["synonym_filter"] = report
    return Vocabulary.from_labels(kept, source="wordnet", meta=meta, settings=settings)
