"""Vocabulary-size sweeps over a VLM: metrics for every size M of one ranked vocabulary, from one pass.

:func:`sweep_vocabulary` encodes the images and the ranked labels once and scores every M with
:func:`negvocab.sweep`; references (e.g. GPT, oracle) are scored at their full size.
:func:`negvocab.write_sweep` (:mod:`negvocab.report.results`) writes the folder and its plot.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from negvocab.builders.registry import get_builder, list_builders
from negvocab.core.errors import InputError
from negvocab.evaluation import records
from negvocab.evaluation.accuracy import accuracy_summary, full_spectrum, id_correct
from negvocab.evaluation.checks import common_mistakes
from negvocab.evaluation.encode import encode_labels, encode_run, run_id_classes
from negvocab.evaluation.row import ResultRow
from negvocab.scoring import metrics as M
from negvocab.scoring.detector import make_detector
from negvocab.scoring.methods import check_evaluation, check_shared, get_method, scorer_params
from negvocab.scoring.providers import InputContext, setup_inputs
from negvocab.vlm.templates import resolve_templates

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["SweepResult", "is_ranked", "sweep_vocabulary"]


@dataclass
class SweepResult:
    """FPR/AUROC against the vocabulary size M for one ranked vocabulary, with optional references."""

    rows: list[dict[str, Any]]
    references: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def random_weights(self) -> bool:
        return bool(self.meta.get("random_weights"))

    @property
    def records(self) -> list[ResultRow]:
        """:attr:`rows`, then :attr:`references`, as typed records (:class:`negvocab.ResultRow`)."""
        return [ResultRow.from_dict(r) for r in [*self.rows, *self.references]]


def is_ranked(vocab: Vocabulary) -> bool:
    """Whether the vocabulary's order is a ranking (its first M are the vocabulary of size M): ranks in its
    metadata, or its source is that of a registered builder that ranks its labels (WordNet, a plug-in's)."""
    if vocab.labels and all("rank" in vocab.meta.get(x, {}) for x in vocab.labels):
        return True
    return any(b.ranked and b.source == vocab.source for b in map(get_builder, list_builders()))


def _checked_order(vocab: Vocabulary, order: str) -> bool:
    """Whether ``vocab`` is ranked (:func:`is_ranked`), ``order`` checked: ``ranked`` refuses a union (it has
    no farthest-first order) and warns about another unranked vocabulary; ``given`` sweeps any."""
    if order not in ("ranked", "given"):
        raise InputError(f"unknown sweep order {order!r}; choose ranked or given")
    ranked_order = is_ranked(vocab)
    if order == "ranked" and not ranked_order:
        if vocab.source == "union":
            raise InputError(
                "a union vocabulary has no farthest-first order, so its first M labels are no pool of size M: "
                "sweep a ranked (WordNet) vocabulary, or pass order='given' to sweep the file order",
                param="order",
            )
        logger.warning(
            "sweeping a %s vocabulary that carries no ranking: its first M labels are in file order, "
            "not farthest first (build a ranked one with `negvocab build wordnet`)",
            vocab.source,
        )
    return ranked_order


def sweep_vocabulary(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_set: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings] | Sequence[ImageSet],
    vocab: Vocabulary,
    sizes: str | Iterable[int],
    *,
    method: str = "neglabel",
    references: Mapping[str, Vocabulary] | None = None,
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    params: Mapping[str, Any] | None = None,
    convention: str = "paper",
    tpr: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    name: str | None = None,
    order: str = "ranked",
    progress: bool = False,
) -> SweepResult:
    """Metrics for every vocabulary size M (the first M labels of ``vocab``), from one pass of
    :func:`negvocab.sweep`; ``references`` (e.g. GPT, oracle) are scored at their full size.

    Rows carry ``id_accuracy`` where the ID set's labels name the ID classes (the meta its record) and,
    on a full-spectrum ID set, CCR (``ccr@1e-4`` ... ``ccr@1e-1``), as
    :func:`negvocab.evaluate_vocabularies` gives them.

    Parameters
    ----------
    vlm : VLM
        The model that encodes the images and the labels.
    id_set : ImageSet or ImageEmbeddings
        The ID images, as in :func:`evaluate_vocabularies`.
    ood_set : ImageSet, ImageEmbeddings, mapping name -> set, or sequence of ImageSet
        One OOD set or several by name, as in :func:`evaluate_vocabularies`: rows per set and their mean.
    vocab : Vocabulary
        The vocabulary swept.
    sizes : str or iterable of int
        The sizes M: ``"1000,2000,5k"`` or integers, each from 1 to ``len(vocab)``.
    method : str, default "neglabel"
        A method a sweep can serve.
    references : mapping name -> Vocabulary, optional
        Vocabularies scored at their full size beside the sweep.
    id_classes, templates, params, convention, tpr, n_boot, seed
        As in :func:`evaluate_vocabularies`: the ID classes, the prompt templates, the scorer's
        parameters, the metrics' convention, the TPR at which FPR is read, the bootstrap resamples (of
        the OOD images) for the intervals and their seed.
    name : str, optional
        Names the swept vocabulary in rows and legends (default its source).
    order : str, default "ranked"
        ``"ranked"`` sweeps a farthest-first ranking; a union (which has none) is refused, another
        unranked vocabulary warned about. ``"given"`` sweeps the file order of any vocabulary, and
        says so in the rows.
    progress : bool, default False
        Show progress bars.

    Returns
    -------
    SweepResult
    """
    # long: the pipeline in order, as evaluate_vocabularies, for every vocabulary size M
    from negvocab.scoring.prefix_scores import check_sweep_method, parse_sizes, sweep

    method = check_sweep_method(method)  # a method a sweep cannot serve: one line, before any model work
    check_evaluation(convention=convention, tpr=tpr, n_boot=n_boot, seed=seed)  # before any image is read
    check_shared(params or {})
    resolve_templates(templates)  # a bad preset or template file fails here, not after the image encoding
    wanted = parse_sizes(sizes, len(vocab))
    ranked_order = _checked_order(vocab, order)
    params = dict(params or {})
    convention = M.check_convention(convention)
    id_classes = run_id_classes(id_classes, id_set)
    common_mistakes(
        vlm, id_set, records.named_ood_sets(ood_set), {"swept": vocab, **(references or {})}, id_classes, templates
    )
    t0 = time.perf_counter()
    enc, class_emb = encode_run(vlm, id_set, records.named_ood_sets(ood_set), id_classes, templates, progress=progress)
    correct = id_correct(id_set, enc.id_images, enc.images[: enc.n_id], class_emb, id_classes)  # as evaluate's
    accuracy = accuracy_summary(correct)  # the zero-shot top-1 over the ID classes: the same for every M
    hits = {"correct": None if correct is None else correct[0], "ccr": full_spectrum(id_set)}
    ranked = vlm.encode_text(
        list(vocab.labels[: max(wanted)]), templates, pos=vocab.parts_of_speech()[: max(wanted)], progress=progress
    )
    kw = scorer_params(method, params, getattr(vlm, "logit_scale", None))  # as evaluate_vocabularies
    inputs = get_method(method).inputs  # NegRefine's pair texts: over the swept labels, then each reference's
    names = list(id_classes.names)
    pairs = setup_inputs(inputs, InputContext(vlm, templates, names, vocab.labels[: max(wanted)]), method=method)
    by_m = sweep(enc.images, class_emb, ranked, wanted, method=method, device=vlm.device, **kw, **pairs)
    common = {"method": method, **records.model_fields(vlm), "params": kw, "templates": templates}
    boot: dict[str, Any] = {"tpr": tpr, "convention": convention, "n_boot": n_boot, "seed": seed, "groups": enc.groups}
    boot.update(hits)  # id_accuracy where the ID labels allow; CCR (per M: it depends on the scores) on full spectrum
    vname = name or vocab.source
    order_name = "ranked" if ranked_order else "given"
    rows = []
    for m, s in by_m.items():
        identity = {"M": m, **common, "vocabulary": vname, **records.vocab_identity(vocab), "order": order_name}
        s_id, s_sets = enc.split(s)
        rows += [r.to_dict() for r in records.ood_records(s_id, s_sets, **boot, **identity, layout="sweep")]
    refs = []
    for rname, ref in (references or {}).items():
        neg = encode_labels(vlm, ref, templates, progress)
        pairs = setup_inputs(inputs, InputContext(vlm, templates, names, ref.labels), method=method)
        s = make_detector(method, {**kw, "device": vlm.device}).setup(class_emb, neg, **pairs).score_batch(enc.images)
        identity = {"M": len(ref), **common, "vocabulary": rname, **records.vocab_identity(ref)}
        s_id, s_sets = enc.split(s)
        refs += [r.to_dict() for r in records.ood_records(s_id, s_sets, **boot, **identity, layout="reference")]
    meta = {
        **records.run_meta(vlm, id_classes, templates, convention, tpr, kw, seed, n_boot),
        "method": method,
        "params": kw,
        **({"id_accuracy": dict(accuracy)} if accuracy is not None else {}),
        "vocabulary": {"name": vname, "order": order_name, **records.vocab_meta(vocab)},
        "references": {k: records.vocab_meta(v) for k, v in (references or {}).items()},
        "n_id": enc.n_id,
        "n_ood": len(enc.ood_images),
        **records.images_meta(id_set, records.named_ood_sets(ood_set), enc),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if vlm.random_weights:
        meta["warning"] = records.RANDOM_WEIGHTS_WARNING
    return SweepResult(rows, refs, meta)
