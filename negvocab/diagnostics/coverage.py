"""Coverage: which OOD classes a vocabulary misses, how much each would help, and what they pass for.

:func:`coverage` takes a VLM, a vocabulary, an ID set and an OOD set whose images carry labels
(an image list's label column, NINCO class folders, a Fi-ImageNet-1k list with labels) and answers,
per OOD class (the scores and thresholds of docs/methods.md, "Scores" and "Metrics"):

- text side: is the label, or a WordNet synonym of it, in the vocabulary (exact coverage, the
  synonym filter's matching rules); the nearest vocabulary label by text cosine;
- image side: the share of its images that pass as ID at the FPR@tpr threshold of the convention,
  the ID class each was taken for, the negatives that fired;
- its marginal gain: FPR@tpr and AUROC with that one label added (:func:`marginal_gains`).

:meth:`Coverage.repair` adds labels greedily (the OOD labels: an ORACLE analysis; or any candidate
pool: deployable). The confusions are the (OOD class -> ID class) pairs most often taken as ID.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from negvocab.core.atomic import write_json, write_text
from negvocab.core.deprecation import renamed_kwargs
from negvocab.core.errors import InputError, ResourceError
from negvocab.core.outdir import staged_folder
from negvocab.core.progress import Progress
from negvocab.diagnostics.gains import (
    MarginalGains,
    RepairCurve,
    check_gains_method,
    marginal_gains,
    repair_curve,
    rows_frame,
)
from negvocab.labels.imagenet import IdClasses, imagenet1k
from negvocab.labels.synonyms import SynonymFilter
from negvocab.labels.wordnet import load_wordnet
from negvocab.report.plots import PLOT_FORMATS, plot_repair
from negvocab.scoring import metrics as M
from negvocab.scoring import scores as S
from negvocab.scoring.methods import PARAMS, scorer_params
from negvocab.vlm.templates import resolve_templates

if TYPE_CHECKING:
    import pandas as pd

    from negvocab.data.images import ImageSet
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

logger = logging.getLogger(__name__)

__all__ = ["COVERAGE_FILES", "ORACLE_REPAIR_NOTE", "Coverage", "coverage"]

#: everything a coverage run writes (an earlier run's repair curve of any format goes when one is replaced)
COVERAGE_FILES = (
    "coverage.csv",
    "confusions.csv",
    "coverage_images.json",
    "repair.csv",
    *(f"repair{s}" for s in PLOT_FORMATS),
    "report.html",
    "coverage.json",
)

ORACLE_REPAIR_NOTE = "ORACLE analysis: labels taken from the evaluated OOD set (not a deployable vocabulary)"
#: text-cosine thresholds of the coverage summary
COSINE_THRESHOLDS = (0.8, 0.9, 0.95)


@dataclass
class _Context:
    """What :meth:`Coverage.repair` needs to score more labels."""

    vlm: Any
    templates: str
    id_img: np.ndarray
    ood_img: np.ndarray
    class_emb: np.ndarray
    neg: np.ndarray
    label_emb: np.ndarray
    vocab_labels: list[str]
    params: dict[str, Any]


@dataclass
class Coverage:
    """The coverage of one vocabulary on one labelled OOD set (see :func:`coverage`).

    ``classes``: one row per OOD class; ``confusions``: (OOD class, ID class, count, mean score) of
    the OOD images taken as ID, most frequent first; ``gains``: :class:`MarginalGains` of the class
    labels (in ``classes`` order); ``summary``: exact and text-cosine coverage, base and oracle FPR,
    share of the oracle gap closed by the top-k additions; ``images``: per-image rows (OOD images,
    and the ID images flagged as OOD) for reports; ``meta``: model, method, settings.

    Parameters
    ----------
    classes : list of dict
        One row per OOD class.
    confusions : list of dict
        (OOD class, ID class, count, mean score) of the OOD images taken as ID.
    gains : MarginalGains
        The gains of the class labels.
    summary : dict
        The summary figures.
    images : list of dict, default []
        Per-image rows.
    meta : dict, default {}
        Model, method, settings.
    oracle_repair : RepairCurve, optional
        The greedy oracle repair curve.
    _ctx : _Context, optional
        What :meth:`repair` needs to score more labels (internal).
    """

    classes: list[dict[str, Any]]
    confusions: list[dict[str, Any]]
    gains: MarginalGains
    summary: dict[str, Any]
    images: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    oracle_repair: RepairCurve | None = None
    _ctx: _Context | None = field(default=None, repr=False)

    @property
    def random_weights(self) -> bool:
        return bool(self.meta.get("random_weights"))

    def to_frame(self) -> pd.DataFrame:
        """The per-class rows as a pandas DataFrame (pandas must be installed)."""
        return rows_frame(self.classes)

    @renamed_kwargs(pool="candidates")
    def repair(self, k: int, candidates: Vocabulary | Sequence[str] | None = None, **kw: Any) -> RepairCurve:
        """Greedy repair curve: the ``k`` labels to add, best first, with FPR@tpr after each.

        ``candidates=None`` draws from the OOD class labels: an ORACLE analysis (marked ``oracle=True``).
        A vocabulary or a list of labels is a candidate pool (deployable unless the vocabulary is
        marked oracle or carries caveats); labels already in the vocabulary are skipped.
        """
        ctx = self._ctx
        if ctx is None:
            raise InputError("this Coverage was read from files: repair needs the model (run negvocab.coverage again)")
        if candidates is None:
            labels = [c["label"] for c in self.classes]
            cand = ctx.label_emb
            oracle = True
        else:
            inside = set(ctx.vocab_labels)
            labels = [x for x in dict.fromkeys(candidates) if x not in inside]
            if not labels:
                raise InputError("the candidate candidates holds no label outside the vocabulary")
            pos = candidates.parts_of_speech() if hasattr(candidates, "parts_of_speech") else None
            if pos is not None:
                by_label = dict(zip(candidates, pos, strict=True))
                pos = [by_label[x] for x in labels]
            cand = ctx.vlm.encode_text(labels, ctx.templates, pos=pos or "n")
            settings = getattr(candidates, "settings", {}) or {}
            oracle = bool(settings.get("oracle") or settings.get("caveats") or settings.get("deployable") is False)
        curve = repair_curve(
            ctx.id_img, ctx.ood_img, ctx.class_emb, ctx.neg, cand, k, labels=labels, method=self.meta["method"],
            convention=self.meta["convention"], tpr=self.meta["tpr"], oracle=oracle, **{**ctx.params, **kw},
        )  # fmt: skip
        if candidates is None:
            curve.meta["note"] = ORACLE_REPAIR_NOTE
        elif oracle:
            curve.meta["note"] = (
                "NOT deployable: the candidate candidates is an oracle or carries caveats "
                + json.dumps(settings.get("caveats") or {})
            )
        return curve

    def write(
        self,
        out_dir: str | os.PathLike[str],
        repair: RepairCurve | None = None,
        *,
        plot_format: str = "png",
        overwrite: bool = False,
    ) -> Path:
        """``coverage.csv`` (classes), ``confusions.csv``, ``coverage_images.json``, the repair curve
        (``repair.csv``, ``repair.<plot_format>``: png, pdf or svg) and ``coverage.json`` (summary,
        meta; the marker), written as a whole (:func:`negvocab.core.outdir.staged_folder`): an earlier
        run is replaced only with ``overwrite``, and none of its files stays beside the new ones."""
        if f".{plot_format}" not in PLOT_FORMATS:
            raise InputError(f"plot format {plot_format!r} is not one of png, pdf, svg")
        with staged_folder(out_dir, COVERAGE_FILES, "coverage.json", overwrite=overwrite) as stage:
            self._write(stage, repair, plot_format)
        return Path(out_dir)

    def _write(self, out: Path, repair: RepairCurve | None, plot_format: str) -> None:
        cols = [
            "label", "n_images", "exact", "covered_by", "nearest", "nearest_cosine", "passing", "passing_share",
            "taken_for", "fired", "fpr_with", "fpr_gain", "auroc_with", "auroc_gain", "random_weights",
        ]  # fmt: skip
        rw = self.random_weights  # carried by every CSV row: the file is read without coverage.json
        flat = [
            {**c, "fired": "; ".join(f"{f['label']} ({f['count']})" for f in c["fired"]), "random_weights": rw}
            for c in self.classes
        ]
        write_text(out / "coverage.csv", _csv_text(flat, cols))
        write_text(out / "confusions.csv", _csv_text(self.confusions, ["ood_class", "id_class", "count", "mean_score"]))
        write_json(out / "coverage_images.json", {"random_weights": self.random_weights, "images": self.images})
        curve = repair or self.oracle_repair
        doc: dict[str, Any] = {
            **self.meta,
            "summary": self.summary,
            "classes": self.classes,
            "confusions": self.confusions,
        }
        if curve is not None:
            marked = [
                {**r, "oracle": curve.oracle, "random_weights": rw} for r in curve.rows
            ]  # ORACLE said in the CSV too
            write_text(
                out / "repair.csv",
                _csv_text(marked, ["step", "label", "fpr", "auroc", "fpr_gain", "oracle", "random_weights"]),
            )
            plot_repair(curve, out / f"repair.{plot_format}", random_weights=self.random_weights)
            doc["repair"] = {
                "rows": curve.rows,
                "oracle": curve.oracle,
                "note": curve.meta.get("note", "candidate pool (deployable)"),
            }
        write_json(out / "coverage.json", json.loads(json.dumps(doc, default=str)))


def _csv_text(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    import csv
    import io

    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------
# text side
# ----------------------------------------------------------------------------------------------
def _wordnet_synonyms(label: str) -> tuple[str, ...]:
    """The lemma names of the first (most frequent) WordNet noun sense of ``label``, spaces for
    underscores; just the label when WordNet has none or is not installed."""
    try:
        synsets = load_wordnet().synsets(label.strip().replace(" ", "_"), pos="n")
    except (ResourceError, LookupError, OSError) as e:
        logger.info("WordNet unavailable (%s): exact coverage matches the OOD labels only", e)
        return (label,)
    if not synsets:
        return (label,)
    return tuple(dict.fromkeys([label, *(x.replace("_", " ") for x in synsets[0].lemma_names())]))


def exact_coverage(class_labels: Sequence[str], vocab_labels: Iterable[str]) -> list[str | None]:
    """For each OOD class label, the vocabulary label that names it (the label or a WordNet synonym
    of it, matched as the synonym filter matches: case, punctuation, plurals), or None."""
    space = IdClasses(
        wnids=tuple(f"ood{i:05d}" for i in range(len(class_labels))),
        names=tuple(class_labels),
        synonyms=tuple(_wordnet_synonyms(x) for x in class_labels),
        dataset="ood-classes",
    )
    flt = SynonymFilter(space)
    out: list[str | None] = [None] * len(class_labels)
    for label in vocab_labels:
        match = flt.explain(label)
        if match is not None and out[match.class_index] is None:
            out[match.class_index] = label
    return out


# ----------------------------------------------------------------------------------------------
# coverage
# ----------------------------------------------------------------------------------------------
def _labels_by_row(ood_set: ImageSet, ids: Sequence[str]) -> list[str]:
    if not ood_set.labels:
        raise InputError(
            f"the OOD set {ood_set.name!r} has no labels: coverage needs labelled OOD images (an image list "
            "with a label column, NINCO-style class folders, or a Fi-ImageNet-1k list with labels)"
        )
    label_of = dict(zip(ood_set.ids, ood_set.labels, strict=True))
    return [label_of[i] or "(unlabelled)" for i in ids]


def _check_coverage_args(tpr: float, top_k: Sequence[int], explain_k: int) -> None:
    """One-line :class:`InputError` for a bad ``tpr``, ``top_k`` or ``explain_k`` of :func:`coverage`."""
    M._check_tpr(tpr)
    bad = [k for k in top_k if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1]
    if isinstance(top_k, (str, bytes)) or bad:
        raise InputError(f"top_k must be whole numbers >= 1 (repair-curve lengths), got {top_k!r}", param="top_k")
    if isinstance(explain_k, bool) or not isinstance(explain_k, (int, np.integer)) or explain_k < 1:
        raise InputError(f"explain_k must be an integer >= 1, got {explain_k!r}", param="explain_k")


def coverage(
    vlm: VLM,
    vocab: Vocabulary,
    id_set: ImageSet,
    ood_set: ImageSet,
    method: str = "neglabel",
    *,
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    params: Mapping[str, Any] | None = None,
    convention: str = "paper",
    tpr: float = 0.95,
    top_k: Sequence[int] = (1, 5, 10),
    explain_k: int = 5,
    progress: bool = False,
    name: str | None = None,
) -> Coverage:
    """What ``vocab`` misses on the labelled ``ood_set`` (see the module docstring).

    Per class: ``exact``/``covered_by`` (the vocabulary label naming it), ``nearest``/``nearest_cosine``
    (text side), ``passing``/``passing_share`` (images taken as ID at the threshold), ``taken_for``
    (the ID classes those passing images were taken for, most frequent first), ``fired`` (the top
    negative of each of its images, most frequent first), ``fpr_with``/``fpr_gain``/``auroc_with``/
    ``auroc_gain`` (the metrics with its label added alone). ``name``: the set's name in the results
    (``--ood NAME=PATH``; default the image set's own name).

    ``params`` go to the scorer (tau, groups, grouping, seed, beta, T, penalty_T). ``top_k``: the
    summary reports the share of the oracle gap (FPR with the vocabulary vs with the vocabulary plus
    every OOD label) closed by the first k labels of the greedy oracle repair curve.

    Parameters
    ----------
    vlm : VLM
        The model that encodes the images and the labels.
    vocab : Vocabulary
        The vocabulary examined.
    id_set : ImageSet
        The ID images.
    ood_set : ImageSet
        The OOD images, labelled by class.
    method : str, default "neglabel"
        The method that scores them.
    id_classes : IdClasses, optional
        The ID classes (default ImageNet-1k).
    templates : str, default "paper8"
        The prompt templates that encode the class names and labels.
    params : mapping, optional
        Go to the scorer.
    convention : str, default "paper"
        The metrics' convention (see :mod:`negvocab.scoring.metrics`).
    tpr : float, default 0.95
        The true-positive rate that sets the threshold.
    top_k : sequence of int, default (1, 5, 10)
        The repair curve's lengths at which the summary reports the share of the oracle gap closed.
    explain_k : int, default 5
        Top negatives and ID classes kept per image (:func:`negvocab.scoring.explain.explain`).
    progress : bool, default False
        Show progress bars and a line as each analysis step ends.
    name : str, optional
        The set's name in the results (default the image set's own name).
    """
    # long: the Parameters section is a third of it; the body is the analysis steps in order, each a call
    method = check_gains_method(method, {}, what="coverage needs")  # before any model work
    convention = M.check_convention(convention)
    own = getattr(vlm, "logit_scale", None)  # a method's model_scale parameter takes it, as in score
    params = {k: v for k, v in scorer_params(method, params or {}, own).items() if k != "topk"}
    _check_coverage_args(tpr, top_k, explain_k)  # before any image is read
    resolve_templates(templates)
    id_classes = id_classes if id_classes is not None else imagenet1k()
    if not ood_set.labels:
        _labels_by_row(ood_set, [])
    id_e = vlm.encode_images(id_set, progress=progress)
    ood_e = vlm.encode_images(ood_set, progress=progress)
    labels = _labels_by_row(ood_set, ood_e.ids)
    class_names = list(dict.fromkeys(labels))
    id_names = list(id_classes.names)
    class_emb = vlm.encode_text(id_names, templates, pos="n", progress=progress)
    neg = vlm.encode_text(list(vocab.labels), templates, pos=vocab.parts_of_speech(), progress=progress)
    label_emb = vlm.encode_text(class_names, templates, pos="n", progress=progress)
    id_img, ood_img = id_e.embeddings, ood_e.embeddings
    n_id = len(id_img)
    kw = {**params, "device": vlm.device}

    # the analysis after the encodings: a progress line as each step ends (with progress), so a
    # large set is never silent for its whole analysis
    what = f"coverage of {name or ood_set.name or 'the OOD set'}: scores, gains, oracle, explanations"
    steps = Progress(4, what, "step", bar=False, log_every=0.0 if progress else None)
    images = np.concatenate([id_img, ood_img])
    s = np.asarray(S.score(method, images, class_emb, neg, **kw))
    s_id, s_ood = s[:n_id], s[n_id:]
    op = M.operating_point(s_id, s_ood, tpr, convention=convention)  # type: ignore[arg-type]
    steps.update(1)
    gains = marginal_gains(id_img, ood_img, class_emb, neg, label_emb, method, convention, tpr=tpr, **kw)
    steps.update(1)
    s_or = np.asarray(S.score(method, images, class_emb, np.concatenate([neg, label_emb]), **kw))
    oracle_fpr = M.fpr_at_tpr(s_or[:n_id], s_or[n_id:], tpr, convention=convention)  # type: ignore[arg-type]
    steps.update(1)

    # image side: the ID class each OOD image was taken for, the negatives that fired
    tau = float(params.get("tau", cast(float, PARAMS["tau"].default)))  # tau's default is a float

    ex_kw: dict[str, Any] = {"id_labels": id_names, "neg_labels": list(vocab.labels), "k": explain_k, "tau": tau}
    ex_ood = S.explain(ood_img, class_emb, neg, **ex_kw, device=vlm.device)
    flagged = np.flatnonzero(op.id_flagged)
    ex_id = S.explain(id_img[flagged], class_emb, neg, **ex_kw, device=vlm.device) if flagged.size else []
    steps.update(1)
    steps.close()
    rows_img = [
        _image_row("ood", iid, path, labels[j], float(s_ood[j]), bool(op.ood_passing[j]), ex_ood[j])
        for j, (iid, path) in enumerate(zip(ood_e.ids, ood_e.paths, strict=True))
    ]
    rows_img += [
        _image_row("id", id_e.ids[i], id_e.paths[i], None, float(s_id[i]), True, e)
        for e, i in zip(ex_id, flagged, strict=True)
    ]
    classes, text_cos = _class_rows(class_names, labels, vocab, label_emb, neg, op.ood_passing, rows_img, gains)
    confusions = _confusions(rows_img)
    oracle_curve, closed = _oracle_repair(
        id_img, ood_img, class_emb, neg, label_emb, top_k, class_names, method, convention, tpr,
        gains.base_fpr - oracle_fpr, gains.base_fpr, kw,
    )  # fmt: skip
    summary = _summary(classes, text_cos, len(labels), gains, op, oracle_fpr, closed)
    sets = {
        "id_set": {"name": id_set.name, "n": n_id},
        "ood_set": {"name": name or ood_set.name, "n": len(labels)},  # the name given (--ood NAME=...) wins
    }
    meta = _coverage_meta(vlm, vocab, method, params, templates, convention, tpr, sets, id_classes)
    ctx = _Context(vlm, templates, id_img, ood_img, class_emb, neg, label_emb, list(vocab.labels), kw)
    return Coverage(classes, confusions, gains, summary, rows_img, meta, oracle_curve, ctx)


def _summary(
    classes: Sequence[Mapping[str, Any]],
    text_cos: np.ndarray,
    n_img: int,
    gains: MarginalGains,
    op: Any,
    oracle_fpr: float,
    closed: Mapping[str, float | None],
) -> dict[str, Any]:
    """The summary of :func:`coverage`: how much of the OOD classes the vocabulary covers, the metrics, the oracle."""
    return {
        "n_classes": len(classes),
        "n_ood_images": n_img,
        "exact_coverage": sum(c["exact"] for c in classes) / len(classes),
        "exact_coverage_images": sum(c["n_images"] for c in classes if c["exact"]) / n_img,
        "cosine_coverage": {str(t): float(np.mean(text_cos.max(1) >= t)) for t in COSINE_THRESHOLDS},
        "fpr": gains.base_fpr,
        "auroc": gains.base_auroc,
        "threshold": op.threshold,
        "passing_share": float(op.ood_passing.mean()),
        "oracle_fpr": oracle_fpr,
        "oracle_note": "FPR with the vocabulary plus every OOD class label (an ORACLE: it knows the answer)",
        "gap_closed_by_top_k": dict(closed),
    }


def _coverage_meta(
    vlm: VLM,
    vocab: Vocabulary,
    method: str,
    params: Mapping[str, Any],
    templates: str,
    convention: str,
    tpr: float,
    sets: Mapping[str, Any],
    id_classes: IdClasses,
) -> dict[str, Any]:
    """What a coverage run was: model, vocabulary, method and its settings, the ``sets`` (``id_set``,
    ``ood_set``: name and size) and the ID label space."""
    meta: dict[str, Any] = {
        "kind": "coverage",
        "model": vlm.name,
        "pretrained": vlm.pretrained,
        "random_weights": bool(vlm.random_weights),
        "method": method,
        "params": params,
        "templates": templates,
        "convention": convention,
        "tpr": tpr,
        "vocabulary": {"source": vocab.source, "sha256": vocab.sha256, "size": len(vocab)},
        **sets,
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
    }
    if vlm.random_weights:
        from negvocab.evaluation.evaluate import RANDOM_WEIGHTS_WARNING

        meta["warning"] = RANDOM_WEIGHTS_WARNING
    return meta


def _class_rows(
    class_names: Sequence[str],
    labels: Sequence[str],
    vocab: Vocabulary,
    label_emb: np.ndarray,
    neg: np.ndarray,
    ood_passing: np.ndarray,
    rows_img: Sequence[Mapping[str, Any]],
    gains: MarginalGains,
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """One row per OOD class (see :func:`coverage`), and the cosines of the class names to the vocabulary's labels."""
    covered = exact_coverage(class_names, vocab.labels)
    text_cos = label_emb.astype(np.float64) @ neg.astype(np.float64).T
    nearest = text_cos.argmax(1)
    classes: list[dict[str, Any]] = []
    by_class: dict[str, list[int]] = defaultdict(list)
    for j, lab in enumerate(labels):
        by_class[lab].append(j)
    for c, lab in enumerate(class_names):
        members = by_class[lab]
        passing = [j for j in members if ood_passing[j]]
        taken = Counter(rows_img[j]["id_class"] for j in passing)
        fired = Counter(rows_img[j]["top_negatives"][0]["label"] for j in members if rows_img[j]["top_negatives"])
        classes.append(
            {
                "label": lab,
                "n_images": len(members),
                "exact": covered[c] is not None,
                "covered_by": covered[c] or "",
                "nearest": vocab.labels[int(nearest[c])],
                "nearest_cosine": float(text_cos[c, nearest[c]]),
                "passing": len(passing),
                "passing_share": len(passing) / len(members),
                "taken_for": [{"label": k, "count": v} for k, v in taken.most_common(3)],
                "fired": [{"label": k, "count": v} for k, v in fired.most_common(3)],
                "fpr_with": float(gains.fpr[c]),
                "fpr_gain": float(gains.fpr_gain[c]),
                "auroc_with": float(gains.auroc[c]),
                "auroc_gain": float(gains.auroc_gain[c]),
            }
        )
    for row in classes:
        row["taken_for"] = "; ".join(f"{x['label']} ({x['count']})" for x in row["taken_for"])
    return classes, text_cos


def _oracle_repair(
    id_img: np.ndarray,
    ood_img: np.ndarray,
    class_emb: np.ndarray,
    neg: np.ndarray,
    label_emb: np.ndarray,
    top_k: Sequence[int],
    class_names: Sequence[str],
    method: str,
    convention: str,
    tpr: float,
    gap: float,
    base_fpr: float,
    kw: Mapping[str, Any],
) -> tuple[RepairCurve | None, dict[str, float | None]]:
    """The greedy oracle repair curve up to ``max(top_k)`` labels, and the share of the oracle ``gap``
    (FPR with the vocabulary minus FPR with every OOD label) its first k labels close, per k (none
    without ``top_k``)."""
    if not top_k:
        return None, {}
    oracle_curve = repair_curve(
        id_img, ood_img, class_emb, neg, label_emb, max(top_k), labels=class_names, method=method,
        convention=convention, tpr=tpr, oracle=True, **kw,
    )  # fmt: skip
    oracle_curve.meta["note"] = ORACLE_REPAIR_NOTE
    closed: dict[str, float | None] = {}
    for k in top_k:
        fpr_k = oracle_curve.rows[min(k, len(oracle_curve.rows) - 1)]["fpr"]
        closed[str(k)] = (base_fpr - fpr_k) / gap if gap > 0 else None
    return oracle_curve, closed


def _image_row(
    split: str, iid: str, path: str, label: str | None, score: float, misjudged: bool, ex: Mapping[str, Any]
) -> dict[str, Any]:
    top_id = ex["top_id"][0] if ex["top_id"] else {"label": "", "cosine": float("nan")}
    return {
        "set": split,
        "image": iid,
        "path": path,
        "label": label,
        "score": score,
        "misjudged": misjudged,  # OOD passing as ID, or ID flagged as OOD
        "id_class": top_id["label"],
        "id_cosine": top_id["cosine"],
        "top_negatives": [{"label": x["label"], "cosine": x["cosine"]} for x in ex["top_negatives"]],
    }


def _confusions(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """(OOD class -> ID class) pairs of the OOD images taken as ID: count and mean score, most first."""
    pairs: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["set"] == "ood" and r["misjudged"]:
            pairs[(r["label"], r["id_class"])].append(r["score"])
    out: list[dict[str, Any]] = [
        {"ood_class": a, "id_class": b, "count": len(v), "mean_score": float(np.mean(v))} for (a, b), v in pairs.items()
    ]
    out.sort(key=lambda r: (-r["count"], -r["mean_score"], r["ood_class"]))
    return out
