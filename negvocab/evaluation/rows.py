"""What results rows and results files say besides the metrics.

One row per OOD set and their mean (:func:`ood_rows`), a vocabulary's identity and deployability
columns (:func:`vocab_fields`), the conventions that differ from the anchors' code
(:func:`conventions`, compared in docs/methods.md, section "Conventions and the anchors' code"), and
the run's provenance: versions, command line, bootstrap seed, the ID class list (:func:`run_meta`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.data.benchmarks import GROUPS, RESERVED_SET_NAMES, ood_group
from negvocab.errors import InputError
from negvocab.provenance import command_line, negvocab_version, versions
from negvocab.scoring import metrics as M

if TYPE_CHECKING:
    from negvocab.data.images import ImageSet
    from negvocab.evaluation.encode import EncodedSets
    from negvocab.labels.imagenet import IdClasses
    from negvocab.vlm.images import ImageEmbeddings
    from negvocab.vlm.model import VLM
    from negvocab.vocab import Vocabulary

#: where the conventions are compared with NegLabel's, OpenOOD's and the Hendrycks code
METHODS_SECTION = 'the methods document (negvocab/methods.md; print it: negvocab methods -s conventions), section "Conventions and the anchors\' code"'
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

__all__ = [
    "GROUP_MEANS",
    "MEAN",
    "RANDOM_WEIGHTS_WARNING",
    "SUMMARY_ROWS",
    "METHODS_SECTION",
    "THRESHOLD_RULES",
    "conventions",
    "model_fields",
    "named_ood_sets",
    "ood_rows",
    "run_meta",
    "sets_meta",
    "vocab_fields",
    "vocab_meta",
]


def set_meta(images: ImageSet | ImageEmbeddings, n: int) -> dict[str, Any]:
    """Name, size and provenance of an image set, for results."""
    if not hasattr(images, "info"):  # ImageEmbeddings: encoded before, by the caller
        return {"name": "given embeddings", "n": n, "embeddings_given": True}
    return {"name": images.name, "n": n, **jsonable(images.info)}


def named_ood_sets(ood: Any) -> dict[str, Any]:
    """OOD sets by name: a mapping as given (names non-empty, not ``"mean"``), a list of sets each
    named after itself (names must differ), or one set named after itself (its ``name``; ``"ood"``
    for given embeddings)."""
    if isinstance(ood, (list, tuple)):
        names = [str(getattr(x, "name", "") or "ood") for x in ood]
        if len(set(names)) < len(names):
            raise InputError(
                f"two OOD sets share the name {next(n for n in names if names.count(n) > 1)!r}: pass a mapping name -> set"
            )
        ood = dict(zip(names, ood, strict=True))
    if isinstance(ood, Mapping):
        sets = {str(k): v for k, v in ood.items()}
        if len(sets) < len(ood):  # {1: a, "1": b}: one name for two sets, one of them would be dropped
            raise InputError(
                f"two OOD sets share the name {next(n for n in map(str, ood) if list(map(str, ood)).count(n) > 1)!r}: give each a distinct name"
            )
        if not sets:
            raise InputError("no OOD set given")
        for name in sets:
            if not name.strip() or name in SUMMARY_ROWS:
                raise InputError(
                    f"OOD set name {name!r} is not allowed (names must be non-empty and not {', '.join(map(repr, SUMMARY_ROWS))})"
                )
        return sets
    return {str(getattr(ood, "name", "") or "ood"): ood}


def ood_rows(
    base: Mapping[str, Any],
    s_id: np.ndarray,
    s_ood: Mapping[str, np.ndarray],
    *,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int,
    groups: Mapping[str, str | None] | None = None,
) -> list[dict[str, Any]]:
    """One row per OOD set (the ID scores are the same for each), then their mean if several.

    When the sets span both groups (near- and far-OOD), a ``near-ood`` and a ``far-ood`` row average
    each group's sets, as OpenOOD v1.5 reports them; ``mean`` averages all sets. ``groups``: each
    set's group, that of the benchmark it came from (:func:`negvocab.data.benchmarks.set_groups`;
    a user's own set has none); None looks the names up in the built-in benchmarks (older callers)."""
    rows = []
    for name, s in s_ood.items():
        rep = M.evaluate(s_id, s, tpr=tpr, convention=convention, n_boot=n_boot, seed=seed)  # type: ignore[arg-type]
        rows.append({**base, "ood_set": name, **rep})
    if len(rows) < 2:
        return rows
    of = groups if groups is not None else {n: ood_group(n) for n in s_ood}
    by_group = {g: [n for n in s_ood if of.get(n) == g] for g in GROUPS}
    summaries = [(GROUPS[g], members) for g, members in by_group.items()] if all(by_group.values()) else []
    for name, members in [*summaries, (MEAN, list(s_ood))]:
        rows.append(
            _mean_row(
                base,
                [r for r in rows if r["ood_set"] in members],
                name,
                s_id,
                {n: s_ood[n] for n in members},
                tpr=tpr,
                convention=convention,
                n_boot=n_boot,
                seed=seed,
            )
        )
    return rows


def _mean_row(
    base: Mapping[str, Any],
    members: Sequence[Mapping[str, Any]],
    name: str,
    s_id: np.ndarray,
    s_ood: Mapping[str, np.ndarray],
    *,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """The row ``name`` averaging the metrics of the ``members`` rows (their bootstrap CIs draw by draw)."""
    mean = {**base, "ood_set": name, "convention": convention, "tpr": members[0]["tpr"]}
    for key in ("fpr", "auroc", "aupr_in", "aupr_out"):
        mean[key] = float(np.mean([r[key] for r in members]))
    mean.update(n_id=members[0]["n_id"], n_ood=sum(r["n_ood"] for r in members), n_ood_sets=len(members))
    if name != MEAN:
        mean["ood_sets"] = [str(r["ood_set"]) for r in members]
    if n_boot:
        mean.update(
            _mean_cis(s_id, s_ood, members[0]["ci_level"], tpr=tpr, convention=convention, n_boot=n_boot, seed=seed)
        )
    return mean


def _mean_cis(
    s_id: np.ndarray,
    s_ood: Mapping[str, np.ndarray],
    level: float,
    *,
    tpr: float,
    convention: str,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    """Bootstrap intervals of the mean over OOD sets: each set's OOD images resampled as for its own
    row (same seed, same draws), the metric averaged over the sets draw by draw."""
    out: dict[str, Any] = {}
    alpha = 1.0 - level
    for key, kw in (("fpr", {"tpr": tpr, "convention": convention}), ("auroc", {})):
        draws = [M.bootstrap_values(key, s_id, s, n_boot=n_boot, seed=seed, **kw) for s in s_ood.values()]
        if all(d is not None for d in draws):
            low, high = np.quantile(np.mean(draws, axis=0), [alpha / 2, 1 - alpha / 2])
            out[f"{key}_ci"] = [float(low), float(high)]
    return {**out, "ci_level": level, "n_boot": int(n_boot), "ci_resample": "ood, within each set"}


def conventions(convention: str, templates: str, params: Mapping[str, Any], tpr: float) -> dict[str, Any]:
    """The settings that make these numbers differ from the anchors' code, and where they are compared."""
    grouping = params.get("grouping") or "stratified"
    groups = params.get("groups") or 100
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
    for key in ("file_sha256", "candidates_sha256", "path", "candidates_file"):
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
    """A vocabulary's columns: identity and deployability (``caveats``: the kinds, ``;``-separated)."""
    if vocab is None:  # mcm, glmcm: no negatives, nothing to caveat
        return {
            "vocab_source": "",
            "vocab_hash": "",
            "vocab_size": 0,
            "oracle": False,
            "deployable": True,
            "caveats": "",
        }
    caveats = vocab.caveats
    return {
        "vocab_source": vocab.source,
        "vocab_hash": vocab.short_hash,
        "vocab_size": len(vocab),
        "oracle": "oracle" in caveats,
        "deployable": not caveats,
        "caveats": ";".join(caveats),
        **(
            {"random_weights": True} if vocab.random_weights else {}
        ),  # built by a random model: overrides the scoring model's False
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
