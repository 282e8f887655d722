"""Negatives mined from unlabelled images of the deployment (docs/methods.md, "Vocabularies").

A user with unlabelled images from where the detector will run (a crawl, a held-out stream) has
direct evidence of which concepts appear there. Mining keeps the candidate labels those images
point to:

1. every image's ID similarity ``s_i = max_c cos(x_i, t_c)`` over the ID class names;
2. an image "looks OOD" when ``s_i`` is below a threshold ``tau`` (``threshold``, else the
   ``quantile`` of the ``s_i``; 0.5 by default: the less ID-like half); its weight is
   ``w_i = tau - s_i`` (how far below), the others weigh 0;
3. each such image votes for its ``top_k`` closest candidates (exact FAISS search by default, an
   IVF/HNSW index for pools of millions): ``evidence(c) = sum of w_i over the images whose top-k
   holds c``;
4. candidates that name an ID class (the synonym filter) never enter the search; the rest are
   ranked by evidence (then by how many images voted, then pool order) and the first ``size`` kept.

The pool is streamed in chunks through the embedding cache, so only one chunk of candidate
embeddings is in memory with exact search. Transductive guard: when the mined images overlap the
OOD set being evaluated (same path or same file content), the vocabulary would flatter that
evaluation; ``ood=`` names the evaluated set(s) and an overlap marks the vocabulary
``settings["caveats"]["transductive"]`` and ``settings["deployable"] = False``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, Union

import numpy as np

from negvocab.core.deprecation import renamed_kwargs
from negvocab.core.errors import InputError
from negvocab.core.progress import Progress, check_interrupt
from negvocab.core.types import Embeddings
from negvocab.data.images import ImageSet, is_image
from negvocab.data.layouts import open_image_set
from negvocab.labels.candidates import Candidate, wordnet_candidates
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vlm.images import ImageEmbeddings, ImageSource
from negvocab.vlm.templates import TemplatesSpec, resolve_templates
from negvocab.vocab import Vocabulary, load_candidates
from negvocab.vocab.index import INDEX_KINDS, StreamingSearch, as_matrix, have_faiss, knn

if TYPE_CHECKING:
    from negvocab.labels.candidates import Candidate
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary


#: the candidates to mine from: a WordNet preset ("wordnet", "wordnet:all"), a candidates or vocabulary
#: file, a Vocabulary, or a list of labels or Candidates
CandidateSource: TypeAlias = Union[str, "os.PathLike[str]", "Vocabulary", Sequence[Union[str, "Candidate"]]]
#: the OOD set(s) a vocabulary will be evaluated on: one image source, {name: source}, or
#: ["NAME=PATH", ...] (as --ood takes them); None: not said
OodSpec: TypeAlias = ImageSource | Mapping[str, ImageSource] | Sequence[str] | None
__all__ = [
    "MiningEvidence",
    "SELECTION",
    "TRANSDUCTIVE_NOTE",
    "build_mined_vocabulary",
    "check_mining",
    "image_overlap",
    "is_image_path",
    "mine_evidence",
    "mining_pool",
    "ood_weights",
    "transductive_check",
]

log = logging.getLogger(__name__)

TRANSDUCTIVE_NOTE = (
    "transductive: mined from images that are also in the evaluated "
    "OOD set {ood} ({n} of {total}); not a deployable result"
)
SELECTION = (
    "candidates closest to the unlabelled images that look OOD, weighted by how far below the ID threshold they are"
)


# -- the embedding-level method -------------------------------------------------------------------
@dataclass
class MiningEvidence:
    """What the images say about each candidate (arrays indexed by candidate position in the pool)."""

    evidence: np.ndarray  # float64 [n_candidates]: sum of the weights of the images that chose it
    votes: np.ndarray  # int64 [n_candidates]: how many images chose it
    weights: np.ndarray  # float64 [n_images]: tau - s_i where positive, else 0
    id_similarity: np.ndarray  # float64 [n_images]: s_i
    threshold: float  # tau
    index: dict[str, Any]  # the search's settings (and recall, for approximate indexes)
    voters: np.ndarray  # int64 [v]: the images that look OOD (weight > 0)
    neighbours: np.ndarray  # int64 [v, k]: the candidates each of them voted for (-1: none found)

    def ranking(self) -> np.ndarray:
        """Candidates with evidence, most first (ties: more votes, then pool order)."""
        idx = np.flatnonzero(self.evidence > 0)
        order = np.lexsort((idx, -self.votes[idx], -self.evidence[idx]))
        return idx[order]


def check_mining(top_k: int, quantile: float, threshold: float | None, index: str = "exact") -> None:
    """One-line :class:`InputError` unless the mining settings are usable: before any image is read."""
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise InputError(f"top_k must be an integer >= 1, got {top_k!r}", param="top_k")
    if threshold is None and not (isinstance(quantile, (int, float, np.floating)) and 0.0 < quantile <= 1.0):
        raise InputError(f"quantile must be in (0, 1], got {quantile}", param="quantile")
    if threshold is not None and not (isinstance(threshold, (int, float, np.floating)) and math.isfinite(threshold)):
        raise InputError(
            f"threshold must be a finite number (an ID similarity, a cosine in [-1, 1]), got {threshold}",
            param="threshold",
        )
    if index not in INDEX_KINDS:
        raise InputError(f"unknown index {index!r}; choose one of {', '.join(INDEX_KINDS)}", param="index")
    if index != "exact" and not have_faiss():
        raise InputError(f"index={index!r} needs faiss (pip install faiss-cpu)", param="index")


def ood_weights(
    image_emb: Embeddings, id_emb: Embeddings, *, quantile: float = 0.5, threshold: float | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(w, s, tau)``: each image's ID similarity ``s`` (its largest cosine to an ID class), the
    threshold ``tau`` (``threshold`` or the ``quantile`` of ``s``) and the weights ``max(tau - s, 0)``."""
    if threshold is None and not 0.0 < quantile <= 1.0:
        raise InputError(f"quantile must be in (0, 1], got {quantile}")
    if threshold is not None and not math.isfinite(threshold):
        raise InputError(f"threshold must be a finite number (an ID similarity, a cosine in [-1, 1]), got {threshold}")
    x = as_matrix(image_emb, "image embeddings")
    ids = as_matrix(id_emb, "ID class embeddings")
    if len(x) == 0 or len(ids) == 0:
        raise InputError("mining needs at least one image and one ID class")
    top, _ = knn(x, ids, 1)
    s = top[:, 0].astype(np.float64)
    tau = float(threshold) if threshold is not None else float(np.quantile(s, quantile))
    return np.maximum(tau - s, 0.0), s, tau


def mine_evidence(
    image_emb: Embeddings,
    id_emb: Embeddings,
    candidate_chunks: Iterable[Any],
    *,
    top_k: int = 10,
    quantile: float = 0.5,
    threshold: float | None = None,
    index: str = "exact",
    expected_candidates: int | None = None,
    **index_options: Any,
) -> MiningEvidence:
    """Steps 1-3 of the module docstring on embeddings: L2-normalised image embeddings [n, d],
    ID class embeddings [C, d] and candidate embeddings arriving in chunks [m_j, d] (any
    iterable, e.g. a generator that encodes the pool piece by piece).

    ``index`` and ``index_options`` go to :class:`negvocab.vocab.index.StreamingSearch` (``nlist``,
    ``nprobe``, ``ef_search``, ``storage``, ``recall_sample``, ...).
    """
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
        raise InputError(f"top_k must be an integer >= 1, got {top_k!r}")
    w, s, tau = ood_weights(image_emb, id_emb, quantile=quantile, threshold=threshold)
    voters = np.flatnonzero(w > 0)
    queries = np.asarray(image_emb, dtype=np.float32)[voters]
    search = StreamingSearch(queries, int(top_k), index=index, expected_keys=expected_candidates, **index_options)
    for chunk in candidate_chunks:
        search.add(chunk)
        del chunk  # not held while the next chunk is made: one chunk in memory, not two
    n = search.n_keys
    if n == 0:
        raise InputError("the candidate pool is empty")
    evidence: np.ndarray = np.zeros(n, dtype=np.float64)
    votes: np.ndarray = np.zeros(n, dtype=np.int64)
    I = np.empty((0, min(int(top_k), n)), dtype=np.int64)
    if len(voters):
        _, I = search.result()
        flat = I.ravel()
        ok = flat >= 0  # an approximate index may return fewer than k
        evidence = np.bincount(flat[ok], weights=np.repeat(w[voters], I.shape[1])[ok], minlength=n)
        votes = np.bincount(flat[ok], minlength=n).astype(np.int64)
    log.info(
        "mining: %d of %d images look OOD (tau %.4f); %d of %d candidates got votes",
        len(voters),
        len(w),
        tau,
        int((votes > 0).sum()),
        n,
    )
    return MiningEvidence(evidence, votes, w, s, tau, {**search.describe(), "queries": int(len(voters))}, voters, I)


# -- inputs ---------------------------------------------------------------------------------------
def mining_pool(pool: CandidateSource) -> list[Candidate]:
    """The candidates to mine from: ``"wordnet"`` / ``"wordnet:all"`` (a WordNet preset, see
    :func:`negvocab.wordnet_candidates`), a candidates or vocabulary file, a :class:`Vocabulary`,
    or a list of strings / :class:`Candidate`. Repeats dropped, first kept."""
    if isinstance(pool, str) and pool.split(":")[0] == "wordnet" and not Path(pool).exists():
        return wordnet_candidates(pool.partition(":")[2] or "neglabel")
    if isinstance(pool, (str, os.PathLike)):
        return load_candidates(pool)
    if isinstance(pool, Vocabulary):
        return [Candidate(lab, p or "n", "", "") for lab, p in zip(pool.labels, pool.parts_of_speech(), strict=True)]
    out: dict[str, Candidate] = {}
    for c in pool:
        c = Candidate(c.strip(), "n", "", "") if isinstance(c, str) else c
        if c.text:
            out.setdefault(c.text, c)
    if not out:
        raise InputError("the candidate pool is empty")
    return list(out.values())


def _image_paths(source: Any) -> list[str]:
    """The file paths (or dataset ids) of an image source, for the overlap check."""
    if isinstance(source, (ImageSet, ImageEmbeddings)):
        return list(source.paths)
    if isinstance(source, (str, os.PathLike)):
        return [str(source)] if is_image(Path(source)) else list(open_image_set(source).paths)
    if isinstance(source, Sequence) and all(isinstance(s, (str, os.PathLike)) for s in source):
        return [str(s) for s in source]
    raise InputError(
        f"cannot list the images of a {type(source).__name__}: give a "
        "folder, a list file, paths, an ImageSet or ImageEmbeddings"
    )


def _listed_paths(source: Any) -> list[str] | None:
    """Every path of an image source that lists them (None for a dataset object)."""
    listing = isinstance(source, (ImageSet, ImageEmbeddings, str, os.PathLike))
    if not listing and isinstance(source, Sequence) and all(isinstance(s, (str, os.PathLike)) for s in source):
        listing = True
    return _image_paths(source) if listing else None


def _named_sets(ood: OodSpec) -> list[tuple[str, Any]]:
    """``ood`` as ``[(name, image source)]``: a mapping, one source, or a list of sources and
    ``NAME=PATH`` strings (a bare path is named after its folder, as ``--ood`` does). Two sets of
    one name, or an empty path (``"a="``), are refused: the guard must see every set."""
    if ood is None:
        return []
    if isinstance(ood, Mapping):
        pairs = [(str(k), v) for k, v in ood.items()]
    else:
        sources: list[Any] = [ood]
        if (
            isinstance(ood, (list, tuple))
            and ood
            and all(isinstance(s, (str, os.PathLike)) and not is_image_path(s) for s in ood)
        ):
            sources = list(ood)
        pairs = []
        for src in sources:
            if isinstance(src, str) and "=" in src and not Path(src).exists():
                name, _, src = src.partition("=")
            else:
                name = getattr(src, "name", None) or (Path(src).name if isinstance(src, (str, os.PathLike)) else "ood")
            pairs.append((str(name), src))
    seen: set[str] = set()
    for name, src in pairs:
        if isinstance(src, (str, os.PathLike)) and not str(src).strip():
            raise InputError(f"OOD set {name!r}: an empty path (an unset shell variable?); give NAME=FOLDER")
        if name in seen:
            raise InputError(
                f"two OOD sets are named {name!r}: name each one (NAME=PATH) so that the transductive check sees both"
            )
        seen.add(name)
    return pairs


def is_image_path(source: Any) -> bool:
    """Whether ``source`` names one image file (a list of them is a set of paths, not of sets)."""
    return is_image(Path(source))


def _file_digests(
    paths: Iterable[str], sizes: set[int] | None = None, *, progress: Progress | None = None
) -> Iterator[tuple[str, str]]:
    """``(path, sha256)`` of the readable files among ``paths`` (only those whose size is in ``sizes``)."""
    for p in paths:
        if progress is not None:
            progress.update(1)
        try:
            st = os.stat(p)
        except OSError:
            continue
        if sizes is not None and st.st_size not in sizes:
            continue
        h = hashlib.sha256()
        try:
            with open(p, "rb") as fh:
                for block in iter(functools.partial(fh.read, 1 << 20), b""):
                    h.update(block)
        except OSError:
            continue
        yield p, h.hexdigest()


def _sizes(paths: Iterable[str]) -> set[int]:
    out = set()
    for p in paths:
        with contextlib.suppress(OSError):
            if os.path.isfile(p):
                out.add(os.stat(p).st_size)
    return out


def _resolved(p: str) -> str:
    try:
        return str(Path(p).resolve())
    except OSError:
        return p


def image_overlap(images: Sequence[str], ood: Sequence[str], *, progress: bool = False) -> list[str]:
    """The entries of ``images`` that are also in ``ood``: the same resolved path, or a file with
    the same content (SHA-256; only files of a size both sides have are read)."""
    ood_keys = {_resolved(p) for p in ood} | set(ood)
    same = {p for p in images if p in ood_keys or _resolved(p) in ood_keys}
    common = _sizes(images) & _sizes(ood)
    if common:
        rest = [p for p in images if p not in same]
        with Progress(len(ood) + len(rest), "transductive check: hashing images", "file", bar=progress) as bar:
            ood_hashes = {h for _, h in _file_digests(ood, common, progress=bar)}
            same |= {p for p, h in _file_digests(rest, common, progress=bar) if h in ood_hashes}
    return [p for p in images if p in same]


def transductive_check(
    images: Sequence[str], ood: Any, *, progress: bool = False
) -> tuple[dict[str, Any], dict[str, str]]:
    """``(record, caveats)``: how many of ``images`` each OOD set holds, and the ``transductive``
    caveat (the shared interface of BRIEF/docs: ``settings["caveats"]``) when any does.

    ``images`` are all the mined images, before any is dropped (an unreadable file is left out of
    the embeddings, not of the check); every OOD set is compared, by path and by content."""
    sets = _named_sets(ood)
    if not sets:
        return {"checked": False, "note": "no OOD set given: overlap with the evaluated OOD images not checked"}, {}
    overlap = {name: len(image_overlap(images, _image_paths(src), progress=progress)) for name, src in sets}
    record = {
        "checked": True,
        "by": "resolved path and file content (sha256)",
        "overlap": overlap,
        "images": len(images),
    }
    hit = {n: c for n, c in overlap.items() if c}
    if not hit:
        return record, {}
    which = ", ".join(hit)
    return record, {"transductive": TRANSDUCTIVE_NOTE.format(ood=which, n=max(hit.values()), total=len(images))}


# -- the vocabulary ---------------------------------------------------------------------------------
def _chunked(
    vlm: VLM, cands: Sequence[Candidate], tset: Any, chunk_size: int, batch_size: int | None, progress: bool | None
) -> Iterator[np.ndarray]:
    """Candidate embeddings, ``chunk_size`` labels at a time (each chunk through the cache), with a
    progress line over the whole pool (each chunk's encoding has its own)."""
    with Progress(len(cands), "mining: searching the pool", "candidate", bar=False) as done:
        for start in range(0, len(cands), chunk_size):
            part = cands[start : start + chunk_size]
            yield vlm.encode_text(
                [c.text for c in part], tset, pos=[c.pos for c in part], batch_size=batch_size, progress=progress
            )
            done.update(len(part))


@renamed_kwargs(pool="candidates", chunk_size="text_chunk_size")
def build_mined_vocabulary(
    vlm: VLM,
    images: ImageSource | ImageEmbeddings,
    candidates: CandidateSource,
    size: int | None = None,
    *,
    id_classes: IdClasses | None = None,
    templates: TemplatesSpec = "paper8",
    top_k: int = 10,
    quantile: float = 0.5,
    threshold: float | None = None,
    ood: OodSpec = None,
    index: str = "exact",
    index_options: Mapping[str, Any] | None = None,
    text_chunk_size: int = 65536,
    synonym_filter: bool = True,
    batch_size: int | None = None,
    num_workers: int | None = None,
    progress: bool | None = None,
) -> Vocabulary:
    """Negatives mined from unlabelled ``images`` (see the module docstring).

    Parameters
    ----------
    vlm : VLM
        Encodes the images, the ID class names and the pool (all cached).
    images : folder, list file, paths, ImageSet or ImageEmbeddings
        The unlabelled images of the deployment.
    candidates : "wordnet", "wordnet:all", a candidates/vocabulary file, a Vocabulary or a list of labels
        The candidates (see :func:`mining_pool`).
    size : int, optional
        M, the vocabulary size (default: every candidate with evidence).
    top_k, quantile, threshold
        Candidates each OOD-looking image votes for; what "looks OOD" means (steps 2-3).
    ood : image source, ``{name: source}`` or ``["NAME=PATH", ...]``, optional
        The OOD set(s) this vocabulary will be evaluated on: any overlap with ``images`` marks it
        transductive (``settings["caveats"]``, ``settings["deployable"] = False``).
    index, index_options
        ``"exact"`` (default), ``"ivf"`` or ``"hnsw"`` and their options
        (:class:`negvocab.vocab.index.StreamingSearch`); approximate indexes report their recall@k.

    Returns
    -------
    Vocabulary
        Source ``mined``; ``meta[label]``: rank, evidence, votes, pos; settings: model, templates,
        the mining parameters, threshold, image and pool counts, index (and recall), the filter's
        removals, the transductive check and, when it found an overlap, the caveat.
    """
    _check_sizes(size, text_chunk_size)
    check_mining(top_k, quantile, threshold, index)  # before any image is read or embedded
    id_classes = id_classes if id_classes is not None else imagenet1k()
    tset = resolve_templates(templates)
    cands, report = _filtered_pool(candidates, id_classes, synonym_filter)
    emb, check, caveats = _embed_guarded(
        vlm, images, ood, batch_size=batch_size, num_workers=num_workers, progress=progress
    )
    id_emb = vlm.encode_text(list(id_classes.names), tset, pos="n", batch_size=batch_size, progress=progress)
    found = mine_evidence(
        emb.embeddings,
        id_emb,
        _chunked(vlm, cands, tset, text_chunk_size, batch_size, progress),
        top_k=top_k,
        quantile=quantile,
        threshold=threshold,
        index=index,
        expected_candidates=len(cands),
        **dict(index_options or {}),
    )
    ranked = found.ranking()
    chosen = _chosen(found, ranked, size, len(emb))
    settings: dict[str, Any] = {
        "model": vlm.identity,
        "random_weights": vlm.random_weights,
        "templates": tset.describe(),
        "size": size,
        "top_k": int(top_k),
        "quantile": None if threshold is not None else quantile,
        "threshold": round(found.threshold, 6),
        "images": len(emb),
        "ood_looking_images": int((found.weights > 0).sum()),
        "candidates": len(cands),
        "candidates_with_votes": len(ranked),
        "pool": _pool_name(candidates),  # the file key keeps its name
        "id_classes": id_classes.dataset,
        "index": found.index,
        "selection": SELECTION,
        "transductive_check": check,
    }
    _record_checks(settings, report, caveats)
    labels = [cands[i].text for i in chosen]
    return Vocabulary.from_labels(labels, source="mined", meta=_label_meta(cands, found, chosen), settings=settings)


def _label_meta(cands: list[Candidate], found: MiningEvidence, chosen: np.ndarray) -> dict[str, dict[str, Any]]:
    """``meta[label]`` of the chosen candidates: rank, evidence, votes and part of speech."""
    return {
        cands[i].text: {
            "rank": r,
            "evidence": round(float(found.evidence[i]), 6),
            "votes": int(found.votes[i]),
            "pos": cands[i].pos,
        }
        for r, i in enumerate(chosen, start=1)
    }


def _record_checks(settings: dict[str, Any], report: dict[str, Any] | None, caveats: dict[str, str]) -> None:
    """Add the synonym filter's report and the transductive caveat to ``settings``; a caveat makes the
    vocabulary not deployable, and is logged."""
    if report is not None:
        settings["synonym_filter"] = report
    if caveats:
        settings["caveats"] = caveats
        settings["deployable"] = False
        log.warning("%s", caveats["transductive"])


def _check_sizes(size: int | None, text_chunk_size: int) -> None:
    """Refuse a vocabulary size or a text chunk size that is not an integer >= 1 (size may be None)."""
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
        raise InputError(f"size (M, the vocabulary size) must be an integer >= 1, got {size!r}", param="size")
    if isinstance(text_chunk_size, bool) or not isinstance(text_chunk_size, (int, np.integer)) or text_chunk_size < 1:
        raise InputError(f"text_chunk_size must be an integer >= 1, got {text_chunk_size!r}", param="text_chunk_size")


def _filtered_pool(
    candidates: CandidateSource, id_classes: IdClasses, synonym_filter: bool
) -> tuple[list[Candidate], dict[str, Any] | None]:
    """The mining pool of ``candidates`` and, with ``synonym_filter``, less those naming an ID class
    (with the filter's report; an error when it removes every candidate)."""
    cands = mining_pool(candidates)
    if not synonym_filter:
        return cands, None
    filt = SynonymFilter(id_classes)
    kept, removed = filt.split([c.text for c in cands])
    report = filt.report(kept, removed)
    keep = set(kept)
    cands = [c for c in cands if c.text in keep]
    if not cands:
        raise InputError("the synonym filter removed every candidate: each names an ID class")
    return cands, report


def _embed_guarded(
    vlm: VLM,
    images: ImageSource | ImageEmbeddings,
    ood: OodSpec,
    *,
    batch_size: int | None,
    num_workers: int | None,
    progress: bool | None,
) -> tuple[ImageEmbeddings, dict[str, Any], dict[str, str]]:
    """The embeddings of ``images`` and their transductive check against ``ood`` (``(emb, record,
    caveats)``). The guard sees every image given, before the encoder leaves out any it cannot read;
    a dataset's paths (ids) are known once it is read."""
    if isinstance(images, (str, os.PathLike)) and not is_image(Path(images)):
        images = open_image_set(images)  # a folder or an image list
    listed = _listed_paths(images)
    if listed is not None:
        check, caveats = transductive_check(listed, ood, progress=bool(progress))
        check_interrupt()
    emb = (
        images
        if isinstance(images, ImageEmbeddings)
        else vlm.encode_images(images, batch_size=batch_size, num_workers=num_workers, progress=progress)
    )
    if listed is None:
        check, caveats = transductive_check(emb.paths, ood, progress=bool(progress))
    check_interrupt()
    return emb, check, caveats


def _chosen(found: MiningEvidence, ranked: np.ndarray, size: int | None, n_images: int) -> np.ndarray:
    """The first ``size`` of the ``ranked`` candidates (all without a size); an error when none got a
    vote from the ``n_images`` images, or fewer than ``size`` did."""
    if len(ranked) == 0:
        raise InputError(
            f"no candidate got a vote: none of the {n_images} images looks OOD at "
            f"threshold {found.threshold:.4f}; give more images or a higher threshold"
        )
    if size is not None and size > len(ranked):
        raise InputError(
            f"asked for {size} labels but only {len(ranked)} candidates "
            f"got a vote from the {int((found.weights > 0).sum())} "
            "OOD-looking images; lower size, raise top_k or give more images",
            param=("size", "top_k"),
        )
    return ranked[:size] if size is not None else ranked


def _pool_name(candidates: CandidateSource) -> str:
    """How the settings name the candidate pool: the preset or path, else the type of the object given."""
    if isinstance(candidates, str):
        return candidates
    if isinstance(candidates, os.PathLike):
        return str(candidates)
    return type(candidates).__name__
