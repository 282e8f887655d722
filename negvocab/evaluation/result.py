"""One evaluation call's arguments (:class:`EvaluationRun`) and its result (:class:`Evaluation`), shared by
the batch and the test-time parts of :func:`negvocab.evaluate_vocabularies`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.evaluation.row import ResultRow, file_row

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.evaluation.tuning import Tuning
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

__all__ = ["Evaluation"]


@dataclass
class Evaluation:
    """Scores, metrics and explanations of one ``negvocab score`` run.

    ``rows``: one metrics dict per (method, vocabulary, OOD set), with a ``"mean"`` row per (method,
    vocabulary) when there are several OOD sets; ``scores``: key -> {"id": [n_id], "ood": [n_ood]}
    (every OOD set, in order); ``id_images``/``ood_images``: (id, path) of the scored images, aligned
    with the scores; ``ood_sets``: each OOD set's name and size, in the order of ``ood_images``;
    ``explanations``: vocabulary name -> one dict per OOD image; ``meta``: model, data, settings;
    ``id_explanations``: vocabulary name -> one dict per ID image flagged as OOD by one of its runs
    (:func:`flagged_id_images`: lowest score first, capped).
    """

    rows: list[dict[str, Any]]
    scores: dict[str, dict[str, np.ndarray]] = field(repr=False)
    id_images: list[tuple[str, str]] = field(repr=False)
    ood_images: list[tuple[str, str]] = field(repr=False)
    explanations: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)
    meta: dict[str, Any] = field(default_factory=dict, repr=False)
    ood_sets: dict[str, int] = field(default_factory=dict)
    id_explanations: dict[str, list[dict[str, Any]]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.ood_sets:
            self.ood_sets = {"ood": len(self.ood_images)}
        self.rows = [file_row(r) for r in self.rows]  # batch and test-time rows: the one row of every results file

    def __repr__(self) -> str:
        names = {r.get("vocabulary") or "-" for r in self.rows}
        return (
            f"Evaluation({len(self.rows)} rows: methods {sorted({r['method'] for r in self.rows})}, "
            f"vocabularies {sorted(names)}; {len(self.id_images)} ID images, OOD sets {self.ood_sets}; "
            f"scores for {len(self.scores)} keys{'; RANDOM WEIGHTS' if self.random_weights else ''})"
        )

    @property
    def random_weights(self) -> bool:
        return bool(self.meta.get("random_weights"))

    @property
    def records(self) -> list[ResultRow]:
        """:attr:`rows` as typed records (:class:`negvocab.ResultRow`)."""
        return [ResultRow.from_dict(r) for r in self.rows]

    def ood_set_of_images(self) -> list[str]:
        """The OOD set name of each image of ``ood_images``."""
        return [name for name, n in self.ood_sets.items() for _ in range(n)]

    def with_fields(self, fields: Mapping[str, Any]) -> Evaluation:
        """The same evaluation with ``fields`` recorded in every row: where the rows' settings came from
        (``negvocab score --authors``: ``authors`` and ``authors_setting``), so every table of them says so."""
        return dataclasses.replace(self, rows=[{**r, **fields} for r in self.rows])


@dataclass(frozen=True)
class EvaluationRun:
    """One :func:`evaluate_vocabularies` call's arguments, which every job shares, batch and test-time alike."""

    vlm: VLM
    id_set: ImageSet | ImageEmbeddings
    ood_set: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings] | Sequence[ImageSet]
    vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary]
    id_classes: IdClasses | None
    templates: str
    params: dict[str, Any]
    convention: str
    tpr: float
    n_boot: int
    seed: int
    progress: bool
    tuned: tuple[Tuning, ...]


def tunings_by_key(tuned: Sequence[Tuning], keys: Sequence[str], test_sets: Sequence[object]) -> dict[str, Tuning]:
    """The tunings by the scores key they apply to, each for a (method, vocabulary) scored here and each
    split disjoint from the test images, else one :class:`InputError`."""
    out = {t.key: t for t in tuned}
    unknown = [k for k in out if k not in keys]
    if unknown:
        raise InputError(f"tuned: {unknown[0]} is not scored in this run; scored: {', '.join(keys)}", param="tuned")
    test_paths = [str(p) for s in test_sets for p in getattr(s, "paths", [])]
    for t in out.values():
        t.check_disjoint(test_paths)
    return out


def named_vocabularies(vocabs: Mapping[str, Vocabulary] | Sequence[Vocabulary]) -> dict[str, Vocabulary]:
    """Vocabularies by name: the given names, else ``<source>-<hash>``."""
    if isinstance(vocabs, Mapping):
        return {_vocab_name(k, v): v for k, v in vocabs.items()}
    return {_vocab_name("", v): v for v in vocabs}


def _vocab_name(name: str, vocab: Vocabulary) -> str:
    return name or f"{vocab.source}-{vocab.short_hash}"
