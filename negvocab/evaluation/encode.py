"""The image sets of a scoring run, embedded once: the ID set and each named OOD set.

:func:`encode_sets` encodes (through the cache) or checks given embeddings, and stacks ID then every
OOD set, so one scoring pass covers all sets and :meth:`EncodedSets.split` gives each set its scores.
:func:`encode_run` is the first step of every pipeline (``score``'s batch and test-time methods, ``sweep``):
the image sets and the ID class prompts, embedded; :func:`run_id_classes` the ID classes they name.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.data.benchmarks import id_classes_of, set_groups
from negvocab.labels.imagenet import imagenet1k
from negvocab.vlm.images import ImageEmbeddings

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["EncodedSets", "encode_labels", "encode_run", "encode_set", "encode_sets", "run_id_classes"]


def encode_set(
    vlm: VLM, images: ImageSet | ImageEmbeddings, local: bool, progress: bool
) -> tuple[ImageEmbeddings, list[tuple[str, str]]]:
    """The embeddings of an image set (encoded, or given) and its (id, path) rows."""
    if isinstance(images, ImageEmbeddings):
        if local and images.local is None:
            raise InputError("glmcm needs local (patch) features: encode the images with local_features=True")
        if images.embeddings.shape[1] != vlm.dim:
            raise InputError(
                f"the given image embeddings have dimension {images.embeddings.shape[1]}, {vlm.name} embeds in "
                f"{vlm.dim}: pass embeddings of the same model"
            )
        made_by, ours = _image_identity(images.model or {}), _image_identity(vlm.identity)
        for field_ in made_by:
            if made_by[field_] != ours.get(field_):
                raise InputError(
                    f"the given image embeddings were made by another model ({field_} differs from {vlm.name}'s): "
                    "encode the images with this VLM, or score with the VLM that made them"
                )
        emb = images
    else:
        emb = vlm.encode_images(images, local_features=local, progress=progress)
    return emb, list(zip(emb.ids, emb.paths, strict=True))


def _image_identity(identity: Mapping[str, Any]) -> dict[str, Any]:
    """What decides an image embedding: model name, weights and preprocessing values (not where the
    preprocessing came from)."""
    out = {k: identity[k] for k in ("name", "weights") if k in identity}
    if isinstance(identity.get("preprocessing"), Mapping):
        out["preprocessing"] = {k: v for k, v in identity["preprocessing"].items() if k != "from"}
    return out


@dataclass
class EncodedSets:
    """The ID set and every OOD set, embedded: ``images`` stacks ID then each OOD set in order."""

    id_emb: ImageEmbeddings
    id_images: list[tuple[str, str]]
    ood_embs: dict[str, ImageEmbeddings]
    ood_images: list[tuple[str, str]]
    sizes: dict[str, int]
    images: np.ndarray
    groups: dict[str, str | None] = field(default_factory=dict)  # each OOD set's group (its benchmark's)

    @property
    def n_id(self) -> int:
        return len(self.id_images)

    def split(self, s: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Scores of all images -> (ID scores, {OOD set: scores})."""
        out, start = {}, self.n_id
        for name, n in self.sizes.items():
            out[name] = s[start : start + n]
            start += n
        return s[: self.n_id], out

    def failed(self) -> list[list[str]]:
        return [list(x) for x in (*self.id_emb.failed, *(f for e in self.ood_embs.values() for f in e.failed))]


def encode_sets(vlm: VLM, id_set: Any, ood_sets: Mapping[str, Any], local: bool, progress: bool) -> EncodedSets:
    t0 = time.perf_counter()
    id_emb, id_images = encode_set(vlm, id_set, local, progress)
    ood_embs, ood_images, sizes = {}, [], {}
    for name, st in ood_sets.items():
        ood_embs[name], imgs = encode_set(vlm, st, local, progress)
        ood_images += imgs
        sizes[name] = len(imgs)
    logger.info(
        "embedded %d ID and %d OOD images (%d sets) in %.1fs",
        len(id_images),
        len(ood_images),
        len(sizes),
        time.perf_counter() - t0,
    )
    images = np.concatenate([id_emb.embeddings, *(e.embeddings for e in ood_embs.values())])
    return EncodedSets(id_emb, id_images, ood_embs, ood_images, sizes, images, set_groups(ood_sets))


def run_id_classes(id_classes: IdClasses | None, id_set: Any) -> IdClasses:
    """The ID classes of a run: as given, else those the ID set's benchmark names (CUB-200's, ...), else
    ImageNet-1k's."""
    return id_classes if id_classes is not None else (id_classes_of(id_set) or imagenet1k())


def encode_run(
    vlm: VLM,
    id_set: Any,
    ood_sets: Mapping[str, Any],
    id_classes: IdClasses,
    templates: str,
    *,
    local: bool = False,
    progress: bool = False,
) -> tuple[EncodedSets, np.ndarray]:
    """The first step of every scoring pipeline: the image sets (:func:`encode_sets`; ``local``: with
    their patch features) and the ID class names' prompts (``templates``), embedded through the cache."""
    enc = encode_sets(vlm, id_set, ood_sets, local, progress)
    return enc, vlm.encode_text(list(id_classes.names), templates, pos="n", progress=progress)


def encode_labels(vlm: VLM, vocab: Vocabulary, templates: str, progress: bool = False) -> np.ndarray:
    """A vocabulary's label prompts (``templates``, each label's part of speech), embedded through the cache."""
    return vlm.encode_text(list(vocab.labels), templates, pos=vocab.parts_of_speech(), progress=progress)
