"""InterNeg's selection: negatives chosen by their distance to few-shot ID image prototypes (docs/methods.md#interneg).

Xu et al., "Mind the Way You Select Negative Texts: Pursuing the Distance Consistency in OOD
Detection with VLMs", CVPR 2026; as the released code selects (``ZhikangXu0112/InterNeg``,
``openood/networks/clip_fixed_ood_prompt.py`` ``get_selected_ood_text_list`` and
``FixedCLIP_InterNegOODPrompt``, ``openood/networks/clip_for_wordnet_prepare.py``): each ID class's
image prototype P_i is the mean of K labelled ID images' embeddings (the inter-modal criterion compares
texts with images, not with ID texts). A candidate is kept when its cosine to every P_i is below the
ID text's own cosine to P_i; kept candidates are ranked by the mean margin over the classes; M is split
between adjectives and nouns in proportion to how many of each were kept.

It USES LABELLED ID IMAGES (K per class): its vocabularies record ``settings["id_images"]``; it is not
a text-only zero-shot vocabulary. InterNeg's second part (text embeddings inverted from confident OOD
test images) is not implemented (docs/methods.md#interneg says why).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from negvocab.builders.wordnet import _as_candidates
from negvocab.core.errors import InputError
from negvocab.data.images import ImageSet
from negvocab.data.layouts import open_image_set
from negvocab.labels.candidates import Candidate, wordnet_candidates
from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.vlm.templates import resolve_templates
from negvocab.vocab import Vocabulary

if TYPE_CHECKING:
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM

__all__ = [
    "build_interneg_vocabulary",
    "class_prototypes",
    "exact_deduplication",
    "interneg_departures",
    "interneg_margins",
    "interneg_split",
    "shots_per_class",
]

_ROWS = 4096  # candidate rows per block of the candidates x classes product


def class_prototypes(image_emb: np.ndarray, labels: Sequence[int], n_classes: int) -> np.ndarray:
    """Each class's image prototype, float64 [C, d]: the mean of its (unit) image embeddings, L2-normalised."""
    emb = np.asarray(image_emb, dtype=np.float64)
    lab = np.asarray(labels, dtype=np.int64)
    if emb.ndim != 2 or len(emb) != len(lab):
        raise InputError(f"image_emb must be [n, d] with one label per row, got {emb.shape} and {len(lab)} labels")
    counts = np.bincount(lab, minlength=n_classes)[:n_classes]
    if (counts == 0).any():
        raise InputError(f"ID class {int(np.argmin(counts))} has no image; InterNeg needs images of every class")
    sums = np.zeros((n_classes, emb.shape[1]))
    np.add.at(sums, lab, emb)
    proto = sums / counts[:, None]
    return proto / np.linalg.norm(proto, axis=1, keepdims=True)


def interneg_margins(
    candidate_emb: np.ndarray, id_text_emb: np.ndarray, prototypes: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """InterNeg's inter-modal criterion: ``(margin [n] float64, kept [n] bool)``.

    base_i = cos(t_i, P_i) (ID text i to its own prototype); a candidate c is kept when
    cos(t_c, P_i) < base_i for every class i; margin(c) = mean_i (base_i - cos(t_c, P_i)), large = far.
    """
    cand = np.asarray(candidate_emb, dtype=np.float64)
    proto = np.asarray(prototypes, dtype=np.float64)
    base = np.sum(np.asarray(id_text_emb, dtype=np.float64) * proto, axis=1)
    margin = np.empty(len(cand))
    kept = np.empty(len(cand), dtype=bool)
    for start in range(0, len(cand), _ROWS):
        sims = cand[start : start + _ROWS] @ proto.T
        kept[start : start + _ROWS] = np.all(sims < base, axis=1)
        margin[start : start + _ROWS] = (base - sims).mean(axis=1)
    return margin, kept


def interneg_split(margin: np.ndarray, kept: np.ndarray, is_adj: np.ndarray, size: int) -> list[int]:
    """InterNeg's cut of ``size`` labels: ``int(size * (a / (a + n)))`` of the a kept adjectives and the
    rest of the n kept nouns, each by margin descending; the adjectives first, as InterNeg concatenates."""
    adj = np.flatnonzero(kept & is_adj)
    noun = np.flatnonzero(kept & ~is_adj)
    if len(adj) + len(noun) == 0:
        raise InputError("no candidate passes InterNeg's criterion (every one is nearer some ID prototype)")
    n_adj = int(size * (len(adj) / (len(adj) + len(noun))))
    adj = adj[np.argsort(-margin[adj], kind="stable")][:n_adj]
    noun = noun[np.argsort(-margin[noun], kind="stable")][: size - n_adj]
    return [int(i) for i in adj] + [int(i) for i in noun]


def exact_deduplication(cands: Sequence[Candidate], id_names: Sequence[str]) -> tuple[list[Candidate], int]:
    """InterNeg's ``Deduplication(noun_list, classnames)`` before its criterion: the candidates whose
    text is an ID class name, exactly, dropped; and how many went. (Candidates hold each text once.)

    Without it a candidate equal to an ID class meets the criterion against itself computed twice
    (``cos(t_c, P_i) < base_i`` with ``t_c = t_i``), and float rounding decides."""
    names = set(id_names)
    kept = [c for c in cands if c.text not in names]
    return kept, len(cands) - len(kept)


def _pool(
    candidates: Iterable[Candidate | str], id_classes: IdClasses, synonym_filter: bool
) -> tuple[list[Candidate], int]:
    """The candidates InterNeg's criterion sees: exact ID names dropped (:func:`exact_deduplication`),
    then synonym-filtered where asked; and how many exact ID names went."""
    cands, exact = exact_deduplication(_as_candidates(candidates), id_classes.names)
    if synonym_filter:
        plain = Vocabulary.from_labels([c.text for c in cands], source="interneg")
        kept_texts = set(SynonymFilter(id_classes).apply(plain).labels)
        cands = [c for c in cands if c.text in kept_texts]
    return cands, exact


def interneg_departures(synonym_filter: bool, split: str) -> list[str]:
    """What an InterNeg build does that InterNeg's code does not (empty: its construction), for its record."""
    out = ["synonym filter on (InterNeg's code drops exact ID names only)"] if synonym_filter else []
    return out + ([f"split {split} (InterNeg's code: interneg)"] if split != "interneg" else [])


def shots_per_class(images: ImageSet, id_classes: IdClasses, shots: int | None) -> tuple[ImageSet, list[int]]:
    """The first ``shots`` images of each ID class in ``images`` (all with None) and their class indices;
    labels name a class by wnid or by name."""
    if images.labels is None:
        raise InputError(
            f"id_images {images.name!r} has no labels; give class folders or an image list with labels",
            param="id_images",
        )
    lookup = {w: i for i, w in enumerate(id_classes.wnids)}
    for i, name in enumerate(id_classes.names):
        lookup.setdefault(_key(name), i)
    taken = [0] * len(id_classes)
    keep, classes = [], []
    for j, label in enumerate(images.labels):
        c = lookup.get(label, lookup.get(_key(label)))
        if c is None:
            raise InputError(
                f"id_images: label {label!r} is not an ID class (a wnid or a class name)", param="id_images"
            )
        if shots is None or taken[c] < shots:
            taken[c] += 1
            keep.append(j)
            classes.append(c)
    return images.select(keep), classes


def _key(name: str) -> str:
    """A class name as folder names and name files both spell it: ``Grace_Hopper`` = ``grace hopper``."""
    return " ".join(name.replace("_", " ").lower().split())


def _image_set(id_images: str | Path | ImageSet) -> ImageSet:
    if isinstance(id_images, ImageSet):
        return id_images
    path = Path(id_images)
    return open_image_set(path, layout="classes" if path.is_dir() else "auto")


def build_interneg_vocabulary(
    vlm: VLM,
    size: int | None = None,
    *,
    id_images: str | Path | ImageSet,
    shots: int | None = 16,
    split: Literal["interneg", "ranked"] = "interneg",
    templates: str | Sequence[str] = "interneg",
    preset: str = "neglabel",
    candidates: Iterable[Candidate | str] | None = None,
    id_classes: IdClasses | None = None,
    synonym_filter: bool = True,
    batch_size: int | None = None,
    num_workers: int | None = None,
    progress: bool | None = None,
) -> Vocabulary:
    """InterNeg's negatives (docs/methods.md#interneg) from ``shots`` labelled ID images per class.

    ``id_images``: class folders, an image list with labels, or an ImageSet (labels: wnids or class
    names of ``id_classes``). Candidates (default ``wordnet_candidates(preset)``) less the exact ID
    class names (and adjectives equal to a noun: :func:`exact_deduplication`, InterNeg's code), then
    synonym-filtered (negvocab's, InterNeg has none; ``synonym_filter=False`` drops exact ID names
    only), and ID names are encoded with ``templates`` (default ``"interneg"``: ``The nice {}.`` for
    nouns and ID names, ``This is a {} photo.`` for adjectives); the images with the model. ``size=None``
    returns every kept candidate by margin descending (a ranking: ``.head(M)``); ``size`` with
    ``split="interneg"`` is InterNeg's cut (:func:`interneg_split`), with ``"ranked"`` the first M.

    The vocabulary records ``settings["id_images"]`` (shots, images, classes, a hash of the paths):
    it is built from labelled ID images, not from text alone; ``settings["departures_from_interneg"]``
    names what differs from InterNeg's code (empty: its construction).

    Parameters
    ----------
    vlm : VLM
        The model that encodes the images, the candidates and the ID class names.
    size : int, optional
        The vocabulary size M (>= 1); None returns every kept candidate, ranked.
    id_images : str, Path or ImageSet
        The labelled ID images: class folders, an image list with labels, or an ImageSet (labels:
        wnids or class names of ``id_classes``).
    shots : int, optional, default 16
        Images per class (>= 1); None takes all.
    split : {"interneg", "ranked"}, default "interneg"
        With ``size``: InterNeg's cut (:func:`interneg_split`) or the ranking's first M.
    templates : str or sequence of str, default "interneg"
        The prompt templates that encode candidates and ID class names.
    preset : str, default "neglabel"
        The WordNet candidate preset, when ``candidates`` is None.
    candidates : iterable of Candidate or str, optional
        Candidate labels instead of the preset's.
    id_classes : IdClasses, optional
        The ID classes (default ImageNet-1k).
    synonym_filter : bool, default True
        Drop candidates that name an ID class by negvocab's synonym filter (False: exact ID names only).
    batch_size : int, optional
        The encoder batch size.
    num_workers : int, optional
        Image loading workers (``vlm.encode_images``'s).
    progress : bool, optional
        Show progress bars (the encoder's default when None).
    """
    # long: InterNeg's recipe in order (images, prototypes, candidates, encode, criterion, cut); each a call
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1):
        raise InputError(f"size (M, the vocabulary size) must be an integer >= 1, got {size!r}", param="size")
    if shots is not None and shots < 1:
        raise InputError(f"shots must be an integer >= 1 or None (all), got {shots!r}", param="shots")
    if split not in ("interneg", "ranked"):
        raise InputError(f"split must be interneg or ranked, got {split!r}", param="split")
    id_classes = id_classes if id_classes is not None else imagenet1k()
    chosen, classes = shots_per_class(_image_set(id_images), id_classes, shots)
    emb = vlm.encode_images(chosen, batch_size=batch_size, num_workers=num_workers, progress=progress)
    row_class = dict(zip(chosen.paths, classes, strict=True))
    prototypes = class_prototypes(emb.embeddings, [row_class[p] for p in emb.paths], len(id_classes))

    cands, exact = _pool(wordnet_candidates(preset) if candidates is None else candidates, id_classes, synonym_filter)
    if not cands:
        raise InputError("no candidates to rank (candidates is empty)", param="candidates")
    texts = [c.text for c in cands]
    is_adj = np.array([c.pos in ("a", "s") for c in cands])
    tset = resolve_templates(templates)
    pos = ["a" if a else "n" for a in is_adj]
    cand_emb = vlm.encode_text(texts, tset, pos=pos, batch_size=batch_size, progress=progress)
    id_emb = vlm.encode_text(list(id_classes.names), tset, pos="n", batch_size=batch_size, progress=progress)
    margin, kept = interneg_margins(cand_emb, id_emb, prototypes)

    ranking = [int(i) for i in np.flatnonzero(kept)[np.argsort(-margin[kept], kind="stable")]]
    if size is None:
        picked = ranking
    elif split == "ranked":
        picked = ranking[:size]
    else:
        picked = interneg_split(margin, kept, is_adj, size)
    if not picked:
        raise InputError("no candidate passes InterNeg's criterion (every one is nearer some ID prototype)")
    rank_of = {i: r for r, i in enumerate(ranking, start=1)}
    meta = {
        texts[i]: {"rank": rank_of[i], "margin": float(margin[i]), "pos": pos[i], "synset": cands[i].synset}
        for i in picked
    }
    digest = hashlib.sha256("\n".join(sorted(emb.paths)).encode("utf-8")).hexdigest()
    settings: dict[str, Any] = {
        "model": vlm.identity,
        "random_weights": vlm.random_weights,
        "templates": tset.describe(),
        "preset": "custom candidates" if candidates is not None else preset,
        "size": size,
        "split": split if size is not None else "ranked",
        "n_candidates": len(cands),
        "exact_id_names_dropped": exact,
        "departures_from_interneg": interneg_departures(synonym_filter, split if size is not None else "interneg"),
        "kept": {"adjectives": int((kept & is_adj).sum()), "nouns": int((kept & ~is_adj).sum())},
        "id_images": {
            "uses_id_images": True,
            "shots": shots,
            "images": len(emb.paths),
            "failed": len(emb.failed),
            "classes": len(id_classes),
            "source": chosen.name,
            "paths_sha256": digest,
            "note": "built from labelled ID images (few-shot prototypes): not a text-only zero-shot vocabulary",
        },
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
        "id_class_list": id_classes.to_record(),
        "selection": "InterNeg: below every ID text's cosine to its image prototype, by mean margin",
    }
    return Vocabulary.from_labels([texts[i] for i in picked], source="interneg", meta=meta, settings=settings)
