"""Results rows: the one scores-to-metrics path, and what rows and results files say besides the metrics.

The one scores-to-metrics step of every pipeline (:func:`metrics_row`: a
:class:`~negvocab.evaluation.row.ResultRow`), one row per OOD set and their means (:func:`ood_records`;
:func:`ood_rows` as dicts), a vocabulary's identity and deployability fields (:func:`vocab_identity`;
:func:`vocab_fields` as a ``score`` row's columns), the conventions that differ from the anchors' code
(:func:`conventions`, compared in docs/methods.md, section "Conventions and the anchors' code"), and
the run's provenance: versions, command line, bootstrap seed, the ID class list (:func:`run_meta`).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.provenance import command_line, negvocab_version, versions
from negvocab.data.benchmarks import GROUPS, RESERVED_SET_NAMES, OpenedSets, ood_group
from negvocab.evaluation.accuracy import accuracy_columns, mean_ccr
from negvocab.evaluation.row import INTERVAL_METRICS, ResultRow, file_row
from negvocab.scoring import metrics as M
from negvocab.scoring.methods import PARAMS

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.evaluation.encode import EncodedSets
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

#: where the conventions are compared with NegLabel's, OpenOOD's and the Hendrycks code
METHODS_SECTION = (
    "the methods document (negvocab/methods.md; print it: negvocab "
    'methods -s conventions), section "Conventions and the anchors\' code"'
)
#: how each FPR convention sets the threshold (see negvocab.scoring.metrics)
THRESHOLD_RULES = {
    "paper": "ID-anchored: the (1 - TPR) quantile of the ID scores (numpy linear); FPR = share of OOD scores >= it",
    "hendrycks": "Hendrycks fpr_and_fdr_at_recall: the ROC point (ID positive) whose recall is closest to TPR",
    "openood": "OpenOOD v1.5: OOD positive; the first ROC point catching TPR of the OOD set (a threshold per OOD set)",
}
RANDOM_WEIGHTS_WARNING = "RANDOM WEIGHTS: these numbers are meaningless (a dry run of the pipeline, not a result)"
MEAN = "mean"  # the ood_set of the rows averaging every OOD set
#: the ood_set of the rows averaging the near-OOD and the far-OOD sets (negvocab.data.benchmarks)
GROUP_MEANS: tuple[str, ...] = tuple(GROUPS.values())
#: the ood_set names of summary rows: no OOD set may take one
SUMMARY_ROWS: tuple[str, ...] = RESERVED_SET_NAMES
CCR_COLUMN = M.ccr_column(M.CCR_FPRS[0])  # a row holding it holds every CCR column

__all__ = [
    "GROUP_MEANS",
    "MEAN",
    "RANDOM_WEIGHTS_WARNING",
    "SUMMARY_ROWS",
    "METHODS_SECTION",
    "THRESHOLD_RULES",
    "conventions",
    "metrics_row",
    "model_fields",
    "named_ood_sets",
    "ood_records",
    "ood_rows",
    "summary_intervals",
    "summary_records",
    "summary_sets",
    "seed_sd",
    "seed_spread",
    "SPREAD_METRICS",
    "run_meta",
    "sets_meta",
    "images_meta",
    "vocabularies_meta",
    "vocab_fields",
    "vocab_identity",
    "vocab_meta",
]


def set_meta(images: ImageSet | ImageEmbeddings, n: int) -> dict[str, Any]:
    """Name, size and provenance of an image set, for results."""
    if not hasattr(images, "info"):  # ImageEmbeddings: encoded before, by the caller
        return {"name": "given embeddings", "n": n, "embeddings_given": True}
    named = cast("ImageSet", images)
    return {"name": named.name, "n": n, **jsonable(named.info)}


def named_ood_sets(ood: Any) -> Mapping[str, Any]:
    """OOD sets by name: a mapping as given (names non-empty, not ``"mean"``), a list of sets each
    named after itself (names must differ), or one set named after itself (its ``name``; ``"ood"``
    for given embeddings)."""
    if isinstance(ood, (list, tuple)):
        names = [str(getattr(x, "name", "") or "ood") for x in ood]
        if len(set(names)) < len(names):
            raise InputError(
                "two OOD sets share the name "
                f"{next(n for n in names if names.count(n) > 1)!r}: pass a mapping name -> set"
            )
        ood = dict(zip(names, ood, strict=True))
    if isinstance(ood, Mapping):
        sets = {str(k): v for k, v in ood.items()}
        if len(sets) < len(ood):  # {1: a, "1": b}: one name for two sets, one of them would be dropped
            raise InputError(
                "two OOD sets share the name "
                f"{next(n for n in map(str, ood) if list(map(str, ood)).count(n) > 1)!r}: give each a distinct name"
            )
        if not sets:
            raise InputError("no OOD set given")
        for name in sets:
            if not name.strip() or name in SUMMARY_ROWS:
                raise InputError(
                    f"OOD set name {name!r} is not allowed (names must be "
                    f"non-empty and not {', '.join(map(repr, SUMMARY_ROWS))})"
                )
        if isinstance(ood, OpenedSets):  # keep each set's group (embeddings given for them carry no info)
            return OpenedSets({**sets}, id=ood.id, groups=dict(ood.groups), benchmarks=dict(ood.benchmarks))
        return sets
    return {str(getattr(ood, "name", "") or "ood"): ood}


def metrics_row(
    id_scores: np.ndarray,
    ood_scores: np.ndarray,
    *,
    ood_set: str,
    convention: str,
    tpr: float,
    n_boot: int,
    seed: int,
    intervals: Sequence[str] = INTERVAL_METRICS,
    correct: np.ndarray | None = None,
    ccr: bool = False,
    **identity: Any,
) -> ResultRow:
    """The one scores-to-metrics step of ``score``, ``sweep`` and the grid: the metrics of one OOD set
    against the ID scores under ``convention`` (:func:`negvocab.scoring.metrics.evaluate`), with
    bootstrap intervals over OOD images (``n_boot`` draws from ``seed``, each metric of ``intervals``
    from its own generator of that seed), as a :class:`ResultRow` carrying ``identity`` (its other
    fields: model, vocabulary, method, params, layout, ...). ``correct``: each ID image's zero-shot top-1
    hit (:func:`negvocab.evaluation.accuracy.id_correct`), where the ID labels allow: the row's extra
    fields get ``id_accuracy`` and, with ``ccr`` (a full-spectrum ID set), the CCR columns
    (:func:`negvocab.evaluation.accuracy.accuracy_columns`)."""
    added = accuracy_columns(id_scores, ood_scores, correct, ccr)
    if added:
        identity["extra"] = {**identity.get("extra", {}), **added}
    rep = M.evaluate(id_scores, ood_scores, tpr=tpr, convention=convention, n_boot=n_boot, seed=seed)  # type: ignore[arg-type]
    cis = {m: (float(rep[f"{m}_ci"][0]), float(rep[f"{m}_ci"][1])) for m in ("fpr", "auroc") if f"{m}_ci" in rep}
    if n_boot:
        for name in ("aupr_in", "aupr_out"):
            if name in intervals:
                c = M.bootstrap_ci(
                    name, id_scores, ood_scores, n_boot=n_boot, seed=seed, method=M.aupr_method_for(convention)
                )
                cis[name] = (c.low, c.high)
    cis = {m: cis[m] for m in ("fpr", "auroc", "aupr_in", "aupr_out") if m in cis and m in intervals}
    return ResultRow(
        ood_set=ood_set,
        convention=rep["convention"],
        tpr=rep["tpr"],
        fpr=rep["fpr"],
        auroc=rep["auroc"],
        aupr_in=rep["aupr_in"],
        aupr_out=rep["aupr_out"],
        aupr_method=rep["aupr_method"],
        n_id=rep["n_id"],
        n_ood=rep["n_ood"],
        intervals=cis,
        ci_level=rep.get("ci_level"),
        n_boot=rep.get("n_boot"),
        ci_resample=rep.get("ci_resample"),
        **identity,
    )


def ood_records(
    s_id: np.ndarray,
    s_ood: Mapping[str, np.ndarray],
    *,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int,
    groups: Mapping[str, str | None] | None = None,
    correct: np.ndarray | None = None,
    ccr: bool = False,
    **identity: Any,
) -> list[ResultRow]:
    """One row per OOD set (the ID scores are the same for each, :func:`metrics_row`, with ``correct`` and
    ``ccr`` as there), then their mean if several (CCR: the mean over the sets, as the other metrics).

    When the sets span both groups of the named benchmarks (near-OOD: ``ssb-hard``, ``ninco``,
    ``fi-imagenet-1k``; far-OOD: ``inaturalist``, ``textures``, ``openimage-o``, ``sun``, ``places``,
    ``imagenet-o``; :func:`negvocab.data.benchmarks.ood_group`), a ``near-ood`` and a ``far-ood`` row
    average each group's sets, as OpenOOD v1.5 reports them; ``mean`` averages all sets. ``groups``: each
    set's group, that of the benchmark it came from (:func:`negvocab.data.benchmarks.set_groups`; a
    user's own set has none); None looks the names up in the built-in benchmarks (older callers)."""
    boot: dict[str, Any] = {"tpr": tpr, "convention": convention, "n_boot": n_boot, "seed": seed}
    hits: dict[str, Any] = {"correct": correct, "ccr": ccr}
    rows = [metrics_row(s_id, s, ood_set=name, **boot, **hits, **identity) for name, s in s_ood.items()]
    return [*rows, *summary_records(rows, s_id, s_ood, groups=groups, **boot)]


def summary_records(
    rows: Sequence[ResultRow],
    s_id: np.ndarray | Mapping[str, np.ndarray] | None,
    s_ood: Mapping[str, np.ndarray] | None,
    groups: Mapping[str, str | None] | None = None,
    *,
    intervals: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
    **boot: Any,
) -> list[ResultRow]:
    """The summary rows over the per-set ``rows`` (one per OOD set of ``s_ood``): ``near-ood`` and
    ``far-ood`` where the sets span both groups, then ``mean`` (:func:`summary_sets`; ``groups`` as
    :func:`ood_records`), each averaging its sets' metrics, its bootstrap intervals (``boot``: ``tpr``,
    ``convention``, ``n_boot``, ``seed``) averaged draw by draw (:func:`summary_intervals`). ``s_id``: the ID
    scores every set was scored against, or each set's own (name -> scores: a test-time method sees one
    stream per OOD set). ``intervals``: each summary row's intervals computed before (a grid stores them
    beside its cells), by the row's name; then no scores are needed (``s_id``, ``s_ood`` None: the sets are
    the rows' own) and a row without stored intervals is one without a bootstrap. Batch and test-time
    evaluation and grids summarise by it."""
    names = list(s_ood) if s_ood is not None else list(dict.fromkeys(r.ood_set for r in rows))
    of = groups if groups is not None else {n: ood_group(n) for n in names}
    out = []
    for name, members in summary_sets(names, of):
        picked = [r for r in rows if r.ood_set in members]
        n_boot = int(boot.get("n_boot") or 0)
        if intervals is not None:
            cis = dict(intervals.get(name) or {})
            n_boot = n_boot if cis else 0
        elif n_boot and s_id is not None and s_ood is not None:
            ci_level = picked[0].ci_level or 0.95
            cis = summary_intervals(s_id, {n: s_ood[n] for n in members}, ci_level=ci_level, **boot)
        else:
            cis = {}
        out.append(_mean_row(picked, name, cis, convention=boot["convention"], n_boot=n_boot))
    return out


#: the metrics a spread over stream seeds reports
SPREAD_METRICS: tuple[str, ...] = ("fpr", "auroc", "aupr_in", "aupr_out")


def seed_spread(rows: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """One result over several stream seeds (``rows``: its row per seed, in ``seeds`` order): each metric's
    mean, sample standard deviation, minimum and maximum (float64), and the seeds. ``score`` and grids
    report a test-time method's spread by this one rule."""
    out: dict[str, Any] = {"stream_seed": None, "stream_seeds": list(seeds), "n_stream_seeds": len(seeds)}
    for m in SPREAD_METRICS:
        v = np.array([r[m] for r in rows], dtype=np.float64)
        out[m] = float(v.mean())
        out.update({f"{m}_std": float(v.std(ddof=1)), f"{m}_min": float(v.min()), f"{m}_max": float(v.max())})
    return out


def seed_sd(row: Mapping[str, Any], metric: str) -> tuple[float, int] | None:
    """A row's spread over stream seeds (:func:`seed_spread`): ``metric``'s sample standard deviation
    and the number of seeds; None where the row is no spread (a batch row, one stream seed)."""
    sd, n = row.get(f"{metric}_std"), row.get("n_stream_seeds") or len(row.get("stream_seeds") or ())
    if isinstance(sd, bool) or not isinstance(sd, (int, float)) or sd != sd or not n:
        return None
    return float(sd), int(n)


def summary_sets(names: Sequence[str], groups: Mapping[str, str | None]) -> list[tuple[str, list[str]]]:
    """The summary rows over the OOD sets ``names`` and the sets each averages: ``near-ood`` and
    ``far-ood`` when the sets span both groups (``groups``: each set's group), then ``mean`` over all;
    none for a single set. ``score``, ``sweep`` and grids summarise by this one rule."""
    if len(names) < 2:
        return []
    by_group = {g: [n for n in names if groups.get(n) == g] for g in GROUPS}
    summaries = [(GROUPS[g], members) for g, members in by_group.items()] if all(by_group.values()) else []
    return [*summaries, (MEAN, list(names))]


def ood_rows(
    base: Mapping[str, Any], s_id: np.ndarray, s_ood: Mapping[str, np.ndarray], **boot: Any
) -> list[dict[str, Any]]:
    """:func:`ood_records` as results rows (:meth:`ResultRow.to_dict`) with the fields of ``base`` (a row's
    identity and extra fields, in any results file's encoding). ``boot``: :func:`ood_records`'s keywords
    ``tpr``, ``convention``, ``n_boot``, ``seed`` and ``groups``."""
    return [file_row({**r.to_dict(), **base}) for r in ood_records(s_id, s_ood, **boot, method="")]


def _mean_row(
    members: Sequence[ResultRow], name: str, cis: Mapping[str, tuple[float, float]], *, convention: str, n_boot: int
) -> ResultRow:
    """The row ``name`` averaging the metrics of the ``members`` rows, with the intervals of the mean
    ``cis`` (``n_boot`` draws; 0: not bootstrapped). Its ``cell``: the digest of its members' cells (a
    grid's), None where they have none."""
    first = members[0]
    ccr = [r.extra for r in members] if all(CCR_COLUMN in r.extra for r in members) else []
    return first.replace(
        extra={**first.extra, **(mean_ccr(ccr) if ccr else {})},  # id_accuracy: the same for every set
        ood_set=name,
        convention=convention,
        fpr=float(np.mean([r.fpr for r in members])),
        auroc=float(np.mean([r.auroc for r in members])),
        aupr_in=float(np.mean([r.aupr_in for r in members])),
        aupr_out=float(np.mean([r.aupr_out for r in members])),
        aupr_method=None,
        n_ood=sum(r.n_ood for r in members),
        n_ood_sets=len(members),
        ood_sets=None if name == MEAN else tuple(r.ood_set for r in members),
        intervals=dict(cis),
        ci_level=first.ci_level if n_boot else None,
        n_boot=int(n_boot) if n_boot else None,
        ci_resample="ood, within each set" if n_boot else None,
        cell=_cells_digest(members) if any(r.cell for r in members) else None,
    )


def _cells_digest(members: Sequence[ResultRow]) -> str:
    """The digest of the member cells of a grid's summary row (16 hex digits)."""
    return hashlib.sha256(" ".join(sorted(str(r.cell or "") for r in members)).encode()).hexdigest()[:16]


def summary_intervals(
    s_id: np.ndarray | Mapping[str, np.ndarray],
    s_ood: Mapping[str, np.ndarray],
    *,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int = 0,
    ci_level: float = 0.95,
    quantiles: tuple[float, float] | None = None,
) -> dict[str, tuple[float, float]]:
    """Bootstrap intervals of the mean over OOD sets (every metric of :data:`INTERVAL_METRICS`): each
    set's OOD images resampled as for its own row (same seed, same draws, against its ID scores: ``s_id``,
    or each set's own by name), the metric averaged over the sets draw by draw, at ``ci_level``
    (``quantiles``: the two quantiles taken instead, as a grid has always taken them, 0.025 and 0.975).
    A metric some set cannot resample (an empty set) has none."""
    out: dict[str, tuple[float, float]] = {}
    alpha = 1.0 - ci_level
    ids = s_id if isinstance(s_id, Mapping) else dict.fromkeys(s_ood, s_id)
    aupr = {"method": M.aupr_method_for(convention)}
    for key, kw in (
        ("fpr", {"tpr": tpr, "convention": convention}),
        ("auroc", {}),
        ("aupr_in", aupr),
        ("aupr_out", aupr),
    ):
        got = [M.bootstrap_values(key, ids[n], s, n_boot=n_boot, seed=seed, **kw) for n, s in s_ood.items()]
        draws = [d for d in got if d is not None]
        if len(draws) == len(got):
            low, high = np.quantile(np.mean(draws, axis=0), quantiles or [alpha / 2, 1 - alpha / 2])
            out[key] = (float(low), float(high))
    return out


def conventions(convention: str, templates: str, params: Mapping[str, Any], tpr: float) -> dict[str, Any]:
    """The settings that make these numbers differ from the anchors' code, and where they are compared."""
    grouping = params.get("grouping") or PARAMS["grouping"].default
    groups = params.get("groups") or PARAMS["groups"].default
    return {
        "convention": convention,
        "threshold": f"{THRESHOLD_RULES[convention]} (TPR {tpr:g})",
        "grouping": f"{grouping}, G={groups} (NegLabel and NegLabel+EOE)",
        "templates": templates,
        "see": METHODS_SECTION,
    }


def vocab_meta(vocab: Vocabulary) -> dict[str, Any]:
    """A vocabulary in results: identity, deployability and where it came from."""
    out: dict[str, Any] = {
        "source": vocab.source,
        "sha256": vocab.sha256,
        "size": len(vocab),
        "deployable": vocab.deployable,
        "caveats": vocab.caveats,
    }
    out["oracle"] = "oracle" in vocab.caveats
    for key in ("file_sha256", "candidates_sha256", "path", "candidates_file", "id_images"):  # id_images: InterNeg
        if key in vocab.settings:
            out[key] = vocab.settings[key]
    prov = vocab.settings.get("provenance")
    if isinstance(prov, list) and prov:
        out["written_by"] = prov[-1]
    return out


def run_meta(
    vlm: VLM,
    id_classes: IdClasses,
    templates: str,
    convention: str,
    tpr: float,
    params: Mapping[str, Any],
    seed: int,
    n_boot: int,
) -> dict[str, Any]:
    """What every results/sweep file starts with: versions, command line, model, settings, ID classes."""
    return {
        "negvocab_version": negvocab_version(),
        "versions": versions(),
        "command": command_line(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **model_fields(vlm),
        "model_identity": vlm.identity,
        "templates": templates,
        "id_classes": getattr(id_classes, "dataset", "imagenet1k"),
        "id_class_list": id_classes.to_record(),
        "convention": convention,
        "tpr": tpr,
        "conventions": conventions(convention, templates, params, tpr),
        "bootstrap": {"n_boot": n_boot, "seed": seed, "resample": "ood"},
    }


def vocab_fields(vocab: Vocabulary | None) -> dict[str, Any]:
    """A vocabulary's columns in a results row: identity and deployability (``caveats``: ``"kind: text;
    kind: text"``), as :meth:`ResultRow.to_dict` writes them from :func:`vocab_identity`."""
    ident = vocab_identity(vocab)
    nan = float("nan")
    blank = ResultRow("", "", "paper", 0.95, nan, nan, nan, nan, 0, 0, **ident)
    row = blank.to_dict()
    keys = ("vocab_source", "vocab_hash", "vocab_size", "oracle", "deployable", "caveats")
    return {k: row[k] for k in keys} | ({"random_weights": True} if ident.get("random_weights") else {})


def vocab_identity(vocab: Vocabulary | None) -> dict[str, Any]:
    """A vocabulary's fields of a :class:`ResultRow` (none for mcm, glmcm: the record's defaults);
    ``random_weights`` only when a random model built it (it overrides the scoring model's False)."""
    if vocab is None:
        return {}
    caveats = dict(vocab.caveats)
    return {
        "vocab_source": vocab.source,
        "vocab_hash": vocab.short_hash,
        "vocab_size": len(vocab),
        "deployable": not caveats,
        "caveats": caveats,
        **({"random_weights": True} if vocab.random_weights else {}),
    }


def grouping_params(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The grouping settings of the first row that used them."""
    for r in rows:
        params = r.get("params") or {}
        if "groups" in params or "grouping" in params:
            return params
    return {}


def jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def model_fields(vlm: VLM) -> dict[str, Any]:
    return {"model": vlm.name, "pretrained": vlm.pretrained, "random_weights": bool(vlm.random_weights)}


def sets_meta(id_set: Any, ood_sets: Mapping[str, Any], enc: EncodedSets) -> dict[str, Any]:
    """The image sets in results: ``id_set``, ``ood_sets`` by name, and ``ood_set`` (the one set, or "mean")."""
    per = {name: set_meta(st, enc.sizes[name]) for name, st in ood_sets.items()}
    return {
        "id_set": set_meta(id_set, enc.n_id),
        "ood_set": next(iter(per.values())) if len(per) == 1 else MEAN,
        "ood_sets": per,
    }


def images_meta(id_set: Any, ood_sets: Mapping[str, Any], enc: EncodedSets) -> dict[str, Any]:
    """The image sets in results (:func:`sets_meta`) and the images that could not be read."""
    return {**sets_meta(id_set, ood_sets, enc), "failed_images": enc.failed()}


def vocabularies_meta(named: Mapping[str, Vocabulary]) -> dict[str, Any]:
    """The vocabularies of a run in results (:func:`vocab_meta` by name) and whether all are deployable."""
    return {
        "vocabularies": {k: vocab_meta(v) for k, v in named.items()},
        "deployable": all(v.deployable for v in named.values()),
    }
