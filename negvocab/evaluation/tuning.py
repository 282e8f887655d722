"""A tuning split for methods with knobs, as OpenOOD's automatic parameter search.

OpenOOD v1.5 (``Evaluator.hyperparam_search``) scores its validation ID list and validation OOD list with
every combination of a postprocessor's ``args_dict`` grid and keeps the one of highest AUROC (the first on a
tie), before the test sets are scored. :func:`tune_params` does the same over negvocab's method registry:
the grid is the method's :func:`negvocab.adapters.zeroshot.search_grid` (its pytorch-ood hyper-parameter
space) unless one is given, each combination is scored by :func:`evaluate_vocabularies` on the tuning sets
only, and the answer (:class:`Tuning`) names the chosen parameters with their provenance: the split (its
sets, sizes and a digest of its image paths), the grid, the criterion and every trial. Passed to
``evaluate_vocabularies(tuned=...)``, its parameters score the test sets, whose images must be disjoint from
the tuning split's (else one :class:`InputError`), and each row records that it was tuned, where, by what
criterion and over which search space. Test-time (stream) methods tune over the grid given for them (their
authors' grids are hand-picked, never a default), each combination streamed as the test sets will be. A
criterion may name several metrics (``fpr,auroc``: the lowest FPR, ties broken by the highest AUROC).
Tuning on the test sets themselves is refused unless asked for by name (``on_test=True``); its rows then
say ``tuned_on_test`` and every table marks them (:data:`negvocab.evaluation.kinds.TEST_TUNED_MARK`).
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import InputError
from negvocab.core.types import ParamValue
from negvocab.evaluation.evaluate import evaluate_vocabularies
from negvocab.evaluation.records import MEAN, named_ood_sets
from negvocab.scoring.methods import (
    PARAMS,
    Method,
    batch_method,
    canonical_method,
    check_params,
    get_method,
    params_for,
)
from negvocab.scoring.providers import image_inputs

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

__all__ = [
    "TUNING_CRITERIA", "Tuning", "check_criterion", "check_disjoint", "check_tuning", "criterion_metrics",
    "tune_methods", "tune_params",
]  # fmt: skip

#: what a tuning split may maximise (True) or minimise (False): OpenOOD's APS maximises AUROC
TUNING_CRITERIA: dict[str, bool] = {"auroc": True, "aupr_in": True, "aupr_out": True, "fpr": False}


@dataclass(frozen=True)
class Tuning:
    """The parameters a tuning split chose for one (method, vocabulary), and how.

    ``params``: the chosen combination (the grid's parameters over ``base``, the parameters given);
    ``value``: the criterion's first metric there, on the tuning split (the mean over its OOD sets with
    several); ``criterion``: its metrics, comma-separated, the first deciding and the next breaking ties;
    ``grid``: parameter -> values tried; ``trials``: one ``{"params", criterion}`` per combination, in grid
    order (the first parameter varies slowest); ``split``: the tuning sets' names, sizes and the SHA-256 of
    their sorted image paths; ``paths``: those paths (for :func:`check_disjoint`; not recorded);
    ``on_test``: the split is the test sets, asked for by name (never silently: rows and tables say so).

    Parameters
    ----------
    method : str
        The method tuned.
    vocabulary : str
        The vocabulary's name ("" for a method without one).
    params : mapping
        The chosen combination.
    criterion : str
        The criterion's metrics, comma-separated.
    value : float
        The criterion's first metric at the chosen combination, on the tuning split.
    grid : mapping name -> tuple of values
        The values tried per parameter.
    trials : tuple of mappings
        One ``{"params", criterion}`` per combination, in grid order.
    split : mapping
        The tuning sets' names, sizes and the SHA-256 of their sorted image paths.
    paths : frozenset of str, default frozenset()
        The tuning sets' image paths (not recorded).
    on_test : bool, default False
        The split is the test sets.
    """

    method: str
    vocabulary: str
    params: Mapping[str, ParamValue]
    criterion: str
    value: float
    grid: Mapping[str, tuple[ParamValue, ...]]
    trials: tuple[Mapping[str, Any], ...]
    split: Mapping[str, Any]
    paths: frozenset[str] = field(default=frozenset(), repr=False)
    on_test: bool = False

    @property
    def key(self) -> str:
        """The scores key of the (method, vocabulary) it tuned: ``method@vocabulary`` or ``method``."""
        return f"{self.method}@{self.vocabulary}" if self.vocabulary else self.method

    @property
    def space(self) -> str:
        """The search space in words: ``name=v1,v2; name=v1`` in grid order."""
        return "; ".join(f"{k}={','.join(map(str, v))}" for k, v in self.grid.items())

    def row_fields(self) -> dict[str, Any]:
        """What a result row scored with these parameters records: the criterion and value on the tuning
        split, the split in words (``tuned_on``), the search space (``tuning_space``) and whether the split
        was the test sets (``tuned_on_test``); the trials go to the run's metadata."""
        ood = ", ".join(f"{n} ({k})" for n, k in self.split["ood"].items())
        where = "the test sets: " if self.on_test else ""
        return {
            "tuned": True,
            "tuned_on": f"{where}{self.split['id']} ({self.split['n_id']}) vs {ood}; "
            f"paths sha256 {self.split['sha256'][:12]}",
            "tuning_criterion": self.criterion,
            "tuning_value": self.value,
            "tuning_space": self.space,
            "tuned_on_test": self.on_test,
        }

    def check_disjoint(self, test_paths: Sequence[str]) -> None:
        """One :class:`InputError` if a test image is also an image of the tuning split: the test sets must
        never tune the parameters they are scored with (paths compared absolute and normalised), unless the
        tuning was asked for on them by name (``on_test``)."""
        if not self.on_test:
            _refuse_shared(self.paths, test_paths, f"the tuning split of {self.key}")

    def record(self) -> dict[str, Any]:
        """The whole provenance as JSON-ready data (a results.json's ``meta["tuning"][key]``)."""
        return {
            "method": self.method,
            "vocabulary": self.vocabulary,
            "params": {k: v for k, v in self.params.items() if isinstance(v, (int, float, str, bool)) or v is None},
            "criterion": self.criterion,
            "value": self.value,
            "grid": {k: list(v) for k, v in self.grid.items()},
            "trials": [dict(t) for t in self.trials],
            "split": dict(self.split),
            "on_test": self.on_test,
        }


def check_disjoint(tuning_sets: Sequence[object], test_sets: Sequence[object]) -> None:
    """One :class:`InputError` if an image of the test sets (ImageSets or embeddings: their ``paths``) is in
    the tuning sets: checked before a model is loaded (``negvocab score --tune-id``) and again by
    ``evaluate_vocabularies(tuned=...)``."""
    tuning = frozenset(p for s in tuning_sets for p in _paths(s))
    _refuse_shared(tuning, [p for s in test_sets for p in _paths(s)], "the tuning split")


def _refuse_shared(tuning: frozenset[str], test_paths: Sequence[str], what: str) -> None:
    shared = sorted(tuning & {_norm_path(p) for p in test_paths})
    if shared:
        raise InputError(
            f"tuned: {len(shared)} test image(s) are also in {what} (e.g. {shared[0]}); "
            "tune on a validation split disjoint from the test sets",
            param="tuned",
        )


def _norm_path(path: object) -> str:
    return os.path.normpath(os.path.abspath(str(path)))


def _paths(image_set: object) -> list[str]:
    return [_norm_path(p) for p in getattr(image_set, "paths", [])]


def _split(id_set: object, ood_sets: Mapping[str, object]) -> tuple[dict[str, Any], frozenset[str]]:
    paths = [*_paths(id_set), *(p for s in ood_sets.values() for p in _paths(s))]
    digest = hashlib.sha256("\n".join(sorted(paths)).encode()).hexdigest()
    split = {
        "id": str(getattr(id_set, "name", "") or "id"),
        "n_id": len(_paths(id_set)),
        "ood": {n: len(_paths(s)) for n, s in ood_sets.items()},
        "sha256": digest,
    }
    return split, frozenset(paths)


def _grid(method: str, grid: Mapping[str, Sequence[ParamValue]] | None, base: Mapping[str, Any]) -> dict[str, tuple]:
    """The grid to search: the given one (each parameter the method's, each list non-empty, each value allowed)
    or the method's :func:`~negvocab.adapters.zeroshot.search_grid` around ``base``."""
    if grid is None:
        from negvocab.adapters.zeroshot import search_grid  # defers torch

        return {k: tuple(v) for k, v in search_grid(method, base).items()}
    entry = get_method(method)
    out: dict[str, tuple] = {}
    for name, values in grid.items():
        if name not in entry.params:
            raise InputError(
                f"grid: {entry.name} has no parameter {name!r}; its parameters: {', '.join(entry.params) or 'none'}",
                param="grid",
            )
        out[name] = _values(name, values)
    return out


def _values(name: str, values: object) -> tuple:
    """A grid's values of ``name``: a non-empty list, each value allowed by the parameter's declared range."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise InputError(f"grid: {name} must be a non-empty list of values, got {values!r}", param="grid")
    spec = PARAMS.get(name)  # a plug-in's options model checks its own (check_params, per combination)
    for v in values:
        if spec is None:
            break
        try:
            spec.validate(v)
        except InputError as e:
            raise InputError(f"grid: {e}", param="grid") from None
    return tuple(values)


def check_tuning(
    methods: Sequence[str], grid: Mapping[str, Sequence[ParamValue]] | None, criterion: str
) -> list[Method]:
    """The registry entries of ``methods``, every tuning argument checked before a model or an image is
    touched: each parameter of ``grid`` a knob of some method here and each value in its declared range, the
    criterion known, and a grid given for every test-time (stream) method (one :class:`InputError` each)."""
    entries = [get_method(canonical_method(m)) for m in methods]
    given = dict(grid or {})
    unknown = sorted(set(given) - {p for e in entries for p in e.params})
    if unknown:
        raise InputError(
            f"grid: no method tuned here takes {unknown[0]!r}; their parameters: "
            + "; ".join(f"{e.name}: {', '.join(e.params) or 'none'}" for e in entries),
            param="grid",
        )
    for name, values in given.items():
        _values(name, values)
    check_criterion(criterion)
    for e in entries:
        if e.kind == "stream" and not set(given) & set(e.params):
            raise InputError(
                f"grid: {e.name} is a test-time method: name its search space (e.g. "
                f"{next(p for p in e.params if p not in ('tau', 'seed'))}=V1,V2); it has no default grid",
                param="grid",
            )
    return entries


def tune_params(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_sets: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings],
    vocabulary: Vocabulary | None = None,
    method: str = "neglabel",
    *,
    grid: Mapping[str, Sequence[ParamValue]] | None = None,
    params: Mapping[str, ParamValue] | None = None,
    criterion: str = "auroc",
    vocabulary_name: str = "",
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    convention: str = "paper",
    tpr: float = 0.95,
    stream: Mapping[str, Any] | None = None,
    on_test: bool = False,
) -> Tuning:
    """Choose ``method``'s parameters on a tuning split: ``id_set`` against ``ood_sets`` (validation sets,
    never the test sets unless ``on_test``), every combination of ``grid`` (default: the method's search
    grid around ``params``; a test-time method needs one) scored without bootstrap, the best by ``criterion``
    (:func:`criterion_metrics`; ``auroc``, as OpenOOD's APS; the first in grid order on a tie).
    ``vocabulary``: the negatives of a method that takes them (``vocabulary_name``: its name in the runs it
    will score, default ``<source>-<hash>``). ``stream``: a test-time method's stream, as
    :func:`negvocab.evaluate_vocabularies` takes it (``stream_batch``, ``order``, ``stream_seed``,
    ``id_ood_ratio``).

    Parameters
    ----------
    vlm : VLM
        The model that encodes the images and the labels.
    id_set : ImageSet or ImageEmbeddings
        The tuning split's ID images.
    ood_sets : ImageSet, ImageEmbeddings or mapping name -> set
        The tuning split's OOD (validation) sets.
    vocabulary : Vocabulary, optional
        The negatives of a method that takes them.
    method : str, default "neglabel"
        The method tuned.
    grid : mapping name -> sequence of values, optional
        The values tried per parameter (default: the method's search grid around ``params``).
    params : mapping, optional
        Fixed parameters, and the centre of the default grid.
    criterion : str, default "auroc"
        What the best combination maximises (:func:`criterion_metrics`).
    vocabulary_name : str, default ""
        The vocabulary's name in the runs it will score (default ``<source>-<hash>``).
    id_classes : IdClasses, optional
        The ID classes; default those the ID set's benchmark names, else ImageNet-1k's.
    templates : str, default "paper8"
        The prompt templates that encode the class names and labels.
    convention : str, default "paper"
        The metrics' convention.
    tpr : float, default 0.95
        The true-positive rate at which FPR is read.
    stream : mapping, optional
        A test-time method's stream (``stream_batch``, ``order``, ``stream_seed``, ``id_ood_ratio``).
    on_test : bool, default False
        Allow tuning on test sets.
    """
    method = canonical_method(method)
    entry = get_method(method)
    if entry.kind != "stream":
        batch_method(method, "tune_params")
    check_tuning([method], grid if grid is not None or entry.kind != "stream" else {}, criterion)
    base = check_params(method, dict(params or {}))
    if entry.needs_negatives and vocabulary is None:
        raise InputError(f"{method} needs a negative vocabulary to tune (vocabulary)", param="vocabulary")
    vname = ""
    if entry.needs_negatives and vocabulary is not None:
        vname = vocabulary_name or f"{vocabulary.source}-{vocabulary.short_hash}"
    sets = named_ood_sets(ood_sets)
    search = _grid(method, grid, base)
    embedded = _embed_split(vlm, id_set, sets, bool(image_inputs(entry.inputs)))
    run = {"id_classes": id_classes, "templates": templates, "convention": convention, "tpr": tpr}
    score = _scorer(vlm, entry, (vname, vocabulary), embedded, run, stream)
    return _search(method, base, search, vname, score, criterion, (*_split(id_set, sets), on_test))


def criterion_metrics(criterion: str) -> tuple[str, ...]:
    """The metrics of a criterion, the first deciding and each next one breaking the ties left:
    ``"fpr,auroc"`` -> ``("fpr", "auroc")``."""
    return tuple(c.strip() for c in str(criterion).split(","))


def check_criterion(criterion: str) -> None:
    """``criterion`` if each of its metrics (comma-separated, none twice) is one of :data:`TUNING_CRITERIA`,
    else one :class:`InputError`."""
    names = criterion_metrics(criterion)
    if any(n not in TUNING_CRITERIA for n in names) or len(set(names)) < len(names):
        raise InputError(
            f"criterion must be one of {', '.join(TUNING_CRITERIA)} or several, comma-separated (fpr,auroc: "
            f"the lowest FPR, ties broken by the highest AUROC), got {criterion!r}",
            param="criterion",
        )


#: what scores one combination of a grid: its parameters -> the rows of the tuning split
_Score = Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]]


def _scorer(
    vlm: VLM,
    entry: Method,
    vocab: tuple[str, Vocabulary | None],
    embedded: Mapping[str, ImageEmbeddings | ImageSet],
    run: Mapping[str, Any],
    stream: Mapping[str, Any] | None,
) -> _Score:
    """How one combination of ``entry``'s grid is scored on the embedded tuning split: a batch method by
    :func:`evaluate_vocabularies`, a test-time method by the same with ``stream`` (each OOD set streamed as
    the test sets will be); no bootstrap, no explanations."""
    vname, vocabulary = vocab
    vocabs = {vname: vocabulary} if vname and vocabulary is not None else {}
    oods = {n: e for n, e in embedded.items() if n != "id"}
    if entry.kind == "stream":
        if stream is None:
            raise InputError(f"{entry.name} is a test-time method: give its stream to tune it", param="stream")
        return lambda chosen: (
            evaluate_vocabularies(
                vlm, embedded["id"], oods, vocabs, [entry.name], stream=stream, params=chosen, n_boot=0, **run
            ).rows
        )
    return lambda chosen: (
        evaluate_vocabularies(
            vlm, embedded["id"], oods, vocabs, [entry.name], params=chosen, n_boot=0, explain_k=0, **run
        ).rows
    )


def _search(
    method: str,
    base: Mapping[str, Any],
    search: Mapping[str, tuple[ParamValue, ...]],
    vname: str,
    score: _Score,
    criterion: str,
    split: tuple[dict[str, Any], frozenset[str], bool],
) -> Tuning:
    """Score every combination of ``search`` and keep the best by ``criterion``: its metrics compared in
    turn (the first on a tie of all: only a strictly better one replaces it)."""
    metrics = criterion_metrics(criterion)
    trials: list[dict[str, Any]] = []
    best: tuple[tuple[float, ...], float, dict[str, Any]] | None = None
    for combo in itertools.product(*search.values()):
        tried = dict(zip(search, combo, strict=True))
        chosen = check_params(method, {**base, **tried})
        rows = score(chosen)
        summary = next((r for r in rows if r["ood_set"] == MEAN), rows[0])  # one OOD set: its row
        values = {m: float(summary[m]) for m in metrics}
        trials.append({"params": tried, **values})
        rank = tuple(v if TUNING_CRITERIA[m] else -v for m, v in values.items())
        if best is None or rank > best[0]:
            best = (rank, values[metrics[0]], chosen)
    assert best is not None  # the product of non-empty value lists is never empty
    info, paths, on_test = split
    return Tuning(method, vname, best[2], criterion, best[1], dict(search), tuple(trials), info, paths, on_test)


def _embed_split(
    vlm: VLM, id_set: ImageSet | ImageEmbeddings, sets: Mapping[str, ImageSet | ImageEmbeddings], local: bool
) -> dict[str, ImageEmbeddings | ImageSet]:
    """The tuning split's embeddings by ``"id"`` and OOD set name, encoded once for every grid combination."""
    return {"id": _embedded(vlm, id_set, local), **{n: _embedded(vlm, s, local) for n, s in sets.items()}}


def _embedded(vlm: VLM, images: ImageSet | ImageEmbeddings, local: bool) -> ImageEmbeddings | ImageSet:
    """An image set's embeddings, encoded once for the whole grid (embeddings pass through)."""
    if hasattr(images, "embeddings"):
        return images
    return vlm.encode_images(images, local_features=local)


def tune_methods(
    vlm: VLM,
    id_set: ImageSet | ImageEmbeddings,
    ood_sets: ImageSet | ImageEmbeddings | Mapping[str, ImageSet | ImageEmbeddings],
    vocabularies: Mapping[str, Vocabulary],
    methods: Sequence[str],
    *,
    grid: Mapping[str, Sequence[ParamValue]] | None = None,
    params: Mapping[str, ParamValue] | None = None,
    criterion: str = "auroc",
    id_classes: IdClasses | None = None,
    templates: str = "paper8",
    convention: str = "paper",
    tpr: float = 0.95,
    stream: Mapping[str, Any] | None = None,
    on_test: bool = False,
) -> list[Tuning]:
    """:func:`tune_params` for every (method, vocabulary) a run scores (``negvocab score --tune-*``): a batch
    method's search grid around its share of ``params``, with the values of ``grid`` replacing those of the
    parameters it names; a test-time method's grid is its share of ``grid`` (one is needed), streamed as
    ``stream`` says; a batch method without knobs (an empty grid) is not tuned. ``vocabularies``: name ->
    vocabulary, as ``evaluate_vocabularies`` takes them. ``on_test``: the split is the test sets, asked for
    by name (the rows say so)."""
    from negvocab.adapters.zeroshot import search_grid  # defers torch

    entries = check_tuning(methods, grid, criterion)
    given = dict(grid or {})
    sets = named_ood_sets(ood_sets)
    split = (*_split(id_set, sets), on_test)
    run = {"id_classes": id_classes, "templates": templates, "convention": convention, "tpr": tpr}
    embedded = _embed_split(vlm, id_set, sets, any(image_inputs(e.inputs) for e in entries))
    out = []
    for entry in entries:
        base = params_for(entry.name, params or {})
        own = {k: v for k, v in given.items() if k in entry.params}
        search = _grid(entry.name, own if entry.kind == "stream" else {**search_grid(entry.name, base), **own}, base)
        if not search:
            continue
        for vocab in vocabularies.items() if entry.needs_negatives else [("", None)]:
            score = _scorer(vlm, entry, vocab, embedded, run, stream)
            out.append(_search(entry.name, base, search, vocab[0], score, criterion, split))
    return out
