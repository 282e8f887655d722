"""ANTS: a negative text space shaped at test time by a multimodal LLM, a stream method
(docs/methods.md#ants).

ANTS (Zhu, Zhang, Jin, Zeng and Zhang, "Adaptive Negative Textual Space Shaping for OOD Detection via
Test-Time MLLM Understanding and Reasoning", CVPR 2026, arXiv:2509.03951) asks a vision-language chat
model for new negatives while the stream runs:

- **far** (their ENS, expressive negative sentences): the images whose base score is below an adaptive
  threshold are cached; once more than 200 are, the model captions each ("Describe this image in fewer
  than eight words."), the captions are encoded and put in a queue of at most 10,000, and the threshold
  moves to the ``ants_eta`` percentile of the low scores seen (below the histogram's steepest step);
  at most ``ants_far_updates`` times.
- **near** (their VSNL, visually similar negative labels): at batch ``ants_near_start`` and every
  ``ants_near_every`` batches after it, the 40 ID classes predicted most often so far, each new one
  sent to the model ("Suggest five different class names that share visual features with ..."); the
  answers of the classes still among the 40 are encoded as ``"The nice {}."``.

Per batch ``x`` (B, d) of unit-norm features, ``z = (1/tau) x . [ID prompts, negatives]``:

1. ``s0``: NegLabel's grouped ID mass over the ID prompts and the ``M`` given negatives, groups of
   ``10000 // ants_groups`` negatives (``M // that`` groups, the last ``M mod groups`` negatives
   dropped, the rest permuted by ``torch.randperm`` seeded 0), the batch's ID class predictions.
2. The batch's images with ``s0`` below the threshold join the far cache; a far update, then a near
   update, run where due (a ``provider``'s answers, encoded by it).
3. ``s_far``: the same grouped mass with the far queue as negatives (a queue no longer than one group:
   one softmax over all of it); ``ants_far_score = activation``: TANL's activation-aware selection of
   the queue's negatives instead (their ``activation_aware_ens``). ``s_near``: the same with the near
   labels. A side without negatives yet gives ``s0``.
4. ``ants_score``: ``far`` returns ``s_far``, ``near`` ``s_near``; ``ada`` returns
   ``w s_far + (1 - w) s_near``, ``w = (1 - mean f) / ((1 - mean f) + (1 - mean n))``, ``f`` and ``n``
   the far and near scores (groups of K; the near labels repeated 10 times) of every image so far.

The model is reached through a *provider* (:class:`ANTSProvider`, the set-up input ``ants_provider``):
``describe`` (stream positions and their predicted ID classes -> captions), ``similar`` (ID class
indices -> labels per class) and ``encode`` (labels, template -> unit text embeddings). Its answers
are the only thing a recorded run replays; the scoring is here.

Equal to the authors' code (``ZhuWenjie98/ANTS``, ``openood/postprocessors/ants_postprocessor.py`` and
``openood/postprocessors/ants/``, MIT licence, Copyright (c) 2021 Jingkang Yang: OpenOOD's; transcribed
with attribution in ``tests/reference/ants.py``) on the same features, stream and answers
(``tests/scoring/test_ants.py``). Where negvocab differs: candidates are stream positions, not image
paths; the model's answers come through the provider (the authors load Qwen2-VL in process); the maths
runs in float64 where theirs runs in the model's dtype, except their activation-aware path's explicit
float32 casts, kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from negvocab.core.errors import InputError
from negvocab.scoring.methods import Param
from negvocab.scoring.stream import StreamMethod, register_stream_method

if TYPE_CHECKING:
    import torch

    from negvocab.core.types import ArrayLike, Embeddings

__all__ = [
    "ANTS",
    "ANTS_PARAMS",
    "ANTSProvider",
    "NEAR_TEMPLATE",
    "ants_labels",
    "register_ants",
]

#: the far queue's length and the group count's numerator (their FAR_QUEUE_MAX_SIZE)
FAR_QUEUE = 10_000
#: a far update needs more cached images than this (their MIN_ENSEMBLE_CANDIDATES)
MIN_CANDIDATES = 200
#: the ID classes a near update asks about: the most predicted (their SIMILAR_CLASS_LIMIT)
NEAR_CLASSES = 40
#: the near labels repeated this often in the adaptive weight's near score (their NEAR_BALANCE_REPEATS)
NEAR_REPEATS = 10
#: the far threshold before the first update (their adaptive_threshold)
FIRST_THRESHOLD = 0.8
#: the prompt of a near label's text embedding (their get_prompt_text_features); far captions have none
NEAR_TEMPLATE = "The nice {}."
ANTS_SCORES: tuple[str, ...] = ("far", "near", "ada")

_DOC = "ANTS (stream): "
ANTS_PARAMS: tuple[Param, ...] = (
    Param("ants_score", str, "far", _DOC + "far (caption negatives), near (similar-class negatives) or ada "
          "(the two mixed by the adaptive weight) (their in_score: far_only, near_only, ada).",
          check="choice", choices=ANTS_SCORES),
    Param("ants_groups", int, 100, _DOC + f"groups of the grouped score: {FAR_QUEUE} // ants_groups negatives "
          "a group (their group_num).", check="range", low=1, high=FAR_QUEUE),
    Param("ants_eta", float, 0.5, _DOC + "percentile (in [0, 1]) of the low base scores that sets the far "
          "threshold (their eta).", check="nonneg"),
    Param("ants_far_updates", int, 20, _DOC + "far (caption) updates at most; 0: none (their ens_stop_step).",
          check="min", low=0),
    Param("ants_far_init", str, "none", _DOC + "the far queue before any caption: none, or the given "
          "negatives (their neglabel_init_flag).", check="choice", choices=("none", "negatives")),
    Param("ants_far_score", str, "grouped", _DOC + "the far score: grouped, or activation (TANL's "
          "activation-aware selection, their activation_aware_ens).", check="choice",
          choices=("grouped", "activation")),
    Param("ants_active", int, 1000, _DOC + "negatives the activation-aware far score keeps (their "
          "activation_negative_count).", check="min", low=1),
    Param("ants_active_step", int, 2, _DOC + "prefix step of the activation-aware far score (their "
          "activation_step).", check="min", low=1),
    Param("ants_active_gap", float, 0.5, _DOC + "margin around the activation threshold, in [0, 1] (their "
          "activation_gap).", check="nonneg"),
    Param("ants_active_queue", int, 20_000, _DOC + "far scores the activation threshold is found on (their "
          "activation_score_queue_size).", check="min", low=1),
    Param("ants_near_start", int, 10, _DOC + "the stream batch (from 1) of the first near update (their "
          "near_label_start_batch).", check="min", low=1),
    Param("ants_near_every", int, 40, _DOC + "stream batches between near updates (their near_label_interval).",
          check="min", low=1),
)  # fmt: skip


@runtime_checkable
class ANTSProvider(Protocol):
    """Where ANTS's new negatives come from: a multimodal LLM (:class:`negvocab.LLMNegatives`), or recorded
    answers. Positions are the images' places in the stream since the last reset (from 0)."""

    def describe(self, positions: Sequence[int], predicted: Sequence[int]) -> list[str]:
        """One caption per image (their describe_images; ``predicted``: each image's ID class)."""
        ...

    def similar(self, classes: Sequence[int]) -> list[list[str]]:
        """Labels visually similar to each ID class (their suggest_similar_classes)."""
        ...

    def encode(self, labels: Sequence[str], template: str | None) -> ArrayLike:
        """Unit-norm text embeddings (len(labels), d) of the labels, each through ``template`` if given."""
        ...


def ants_labels(labels: Iterable[str | None]) -> list[str]:
    """Answers cleaned as ANTS cleans them: stripped, a final period dropped, spaces collapsed, empty
    ones dropped, the first of those equal up to case kept (their normalize_labels).

    >>> ants_labels([" A red  car.", "a red car", "", "Dog"])
    ['A red car', 'Dog']
    """
    out: list[str] = []
    seen: set[str] = set()
    for label in labels:
        if label is None:
            continue
        cleaned = " ".join(str(label).strip().rstrip(".").split())
        if cleaned and cleaned.casefold() not in seen:
            out.append(cleaned)
            seen.add(cleaned.casefold())
    return out


def _torch() -> Any:
    import torch  # deferred: the registry is read without torch

    return torch


def grouped_id_mass(logits: torch.Tensor, k: int, group_size: int) -> torch.Tensor:
    """The ID mass of a softmax over the K ID logits and one group of negatives, averaged over the
    groups: ``M // group_size`` groups (at least one), the last ``M mod groups`` negatives dropped,
    the rest permuted by ``torch.randperm`` seeded 0 (their grouped_negative_score)."""
    torch = _torch()
    pos, neg = logits[:, :k], logits[:, k:]
    groups = max(1, neg.shape[1] // group_size)
    rest = neg.shape[1] % groups
    if rest:
        neg = neg[:, :-rest]
    perm = torch.randperm(neg.shape[1], generator=torch.Generator(device="cpu").manual_seed(0))
    grouped = neg[:, perm.to(neg.device)].reshape(pos.shape[0], groups, -1)
    full = torch.cat((pos.unsqueeze(1).expand(-1, groups, -1), grouped), dim=-1)
    return full.softmax(dim=-1)[:, :, :k].sum(dim=-1).mean(dim=-1)


def activation_threshold(scores: torch.Tensor) -> float:
    """The split of ``scores`` (float32) on the grid 0, 0.01, ..., 0.99 of least weighted within-class
    variance, the first of equal minima; the median where no split has two sides (their
    find_activation_threshold)."""
    torch = _torch()
    values = scores.detach().float().flatten()
    best, best_var = float(values.median()), float("inf")
    for th in torch.arange(0.0, 1.0, 0.01, device=values.device):
        high = values >= th
        if not high.any() or high.all():
            continue
        lo, hi = values[~high], values[high]
        var = float((lo.numel() * lo.var(unbiased=False) + hi.numel() * hi.var(unbiased=False)) / values.numel())
        if var < best_var:
            best, best_var = float(th), var
    return best


def prefix_id_mass(logits: torch.Tensor, k: int, step: int) -> torch.Tensor:
    """The ID mass over the ranked negatives' prefixes ``step, 2 step, ...`` and the whole list,
    averaged, in float32 (their cumulative_negative_score)."""
    torch = _torch()
    n_neg = logits.shape[1] - k
    e = (logits.float() - logits.float().amax(dim=1, keepdim=True)).exp()
    id_sum = e[:, :k].sum(dim=1, keepdim=True)
    cum = e[:, k:].cumsum(dim=1)
    ends = torch.arange(step - 1, n_neg, step, device=logits.device)
    if ends.numel() == 0 or int(ends[-1]) != n_neg - 1:
        ends = torch.cat((ends, torch.tensor([n_neg - 1], device=logits.device, dtype=ends.dtype)))
    return (id_sum / (id_sum + cum[:, ends])).mean(dim=1)


class ANTS(StreamMethod):
    """ANTS's far (caption) and near (similar-class) negatives over the test stream (the module
    docstring gives the steps). Set up with ``setup(id_emb, neg_emb, ants_provider=provider)``.

    Parameters
    ----------
    **params
        The method's parameters, as :func:`negvocab.make_stream` gives them (the registry's defaults
        filled in): those of :data:`ANTS_PARAMS` and ``tau`` (the softmax temperature, 0.01).
    """

    inputs = ("ants_provider",)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        for name in ("ants_eta", "ants_active_gap"):
            if name in params and not 0 <= float(params[name]) <= 1:
                raise InputError(f"{name} must be in [0, 1], got {params[name]}")

    def check_input(self, name: str, value: object, dim: int) -> object:
        """The provider, checked to have ``describe``, ``similar`` and ``encode``."""
        if not isinstance(value, ANTSProvider):
            raise InputError(
                f"{name} must have describe, similar and encode (an ANTSProvider), got {type(value).__name__}"
            )
        return value

    def init_state(self) -> None:
        tt = _torch()
        dev = self.id_emb.device if isinstance(self.id_emb, tt.Tensor) else tt.device("cpu")
        self.dev, self.provider = dev, self.extra["ants_provider"]
        self.ids = self._tensor(self.id_emb)
        self.negs = self._tensor(self.neg_emb)
        self.k, self.scale = int(self.ids.shape[0]), 1.0 / float(self.params["tau"])
        self.group = max(1, FAR_QUEUE // int(self.params["ants_groups"]))
        self.threshold, self.far_done, self.batch = FIRST_THRESHOLD, 0, 0
        self.all_conf: list[float] = []
        self.active_conf: list[torch.Tensor] = []
        self.far_seen: list[torch.Tensor] = []
        self.near_seen: list[torch.Tensor] = []
        self.candidates: list[tuple[int, int]] = []
        self.predictions: list[int] = []
        self.far: torch.Tensor | None = self.negs if self.params["ants_far_init"] == "negatives" else None
        self.near: torch.Tensor | None = None
        self.near_labels: list[str] = []
        self.similar_cache: dict[int, list[str]] = {}
        self.far_labels: list[tuple[int, str]] = []

    def _tensor(self, x: Any) -> torch.Tensor:
        torch = _torch()
        return torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x).to(self.dev, torch.float64)

    def _bank_score(self, x: torch.Tensor, bank: torch.Tensor | None, group: int) -> torch.Tensor | None:
        """The ID mass against a bank of negatives: one softmax where it fits one group, else grouped
        (their score_with_negative_features); None without a bank."""
        torch = _torch()
        if bank is None or bank.numel() == 0:
            return None
        logits = self.scale * x @ torch.cat((self.ids, bank)).T
        if bank.shape[0] <= group:
            return logits.softmax(dim=-1)[:, : self.k].sum(dim=-1)
        return grouped_id_mass(logits, self.k, group)

    def step(self, image_emb: Embeddings) -> np.ndarray:
        """Score a batch: the base score, the caches and updates, the far and near scores, fused."""
        torch = _torch()
        x = self._tensor(image_emb)
        self.batch += 1
        logits = self.scale * x @ torch.cat((self.ids, self.negs)).T
        predicted = logits[:, : self.k].softmax(dim=1).argmax(dim=1).tolist()
        base = grouped_id_mass(logits, self.k, self.group)
        self.predictions.extend(predicted)
        self.all_conf.extend(base.tolist())
        self._collect(predicted, base)
        self._far_update()
        self._near_update()
        far = self._bank_score(x, self.far, self.group)
        if self.params["ants_far_score"] == "activation" and far is not None:
            far = self._activation_far(x, far)
        near = self._bank_score(x, self.near, self.group)
        out = self._fuse(x, base, far, near)
        if torch.isnan(out).any():
            raise FloatingPointError("ANTS produced NaN scores")
        return out.double().cpu().numpy()

    def _collect(self, predicted: list[int], base: torch.Tensor) -> None:
        """The batch's images below the far threshold join the far cache (while updates are left)."""
        if self.far_done >= int(self.params["ants_far_updates"]):
            return
        for i, (c, s) in enumerate(zip(predicted, base.tolist(), strict=True)):
            if s < self.threshold:
                self.candidates.append((self.n_seen + i, c))

    def _far_update(self) -> None:
        """Past MIN_CANDIDATES cached images: the threshold moved, the cache captioned, encoded, queued."""
        if self.far_done >= int(self.params["ants_far_updates"]) or len(self.candidates) <= MIN_CANDIDATES:
            return
        torch = _torch()
        self.threshold = far_threshold(self.all_conf, float(self.params["ants_eta"]))
        positions, classes = [p for p, _ in self.candidates], [c for _, c in self.candidates]
        captions = self.provider.describe(positions, classes)
        labels = ants_labels(captions)
        self.far_labels.extend(_sources(positions, captions, labels))
        self.candidates.clear()
        if labels:
            new = self._unit_rows(self.provider.encode(labels, None), len(labels))
            both = new if self.far is None else torch.cat((new, self.far))
            self.far = both[-FAR_QUEUE:]  # their queue: the new rows first, the last FAR_QUEUE kept
        self.far_done += 1

    def _near_update(self) -> None:
        """At the due batches: the most predicted ID classes, the new ones asked about, encoded."""
        start, every = int(self.params["ants_near_start"]), int(self.params["ants_near_every"])
        if self.batch < start or (self.batch - start) % every:
            return
        active = [c for c, _ in Counter(self.predictions).most_common(NEAR_CLASSES)]
        new = [c for c in active if c not in self.similar_cache]
        answers = self.provider.similar(new)
        if len(answers) != len(new):
            raise InputError(f"the ANTS provider gave {len(answers)} answers for {len(new)} ID classes")
        for c, labels in zip(new, answers, strict=True):
            self.similar_cache[c] = ants_labels(labels)
        for c in [c for c in self.similar_cache if c not in set(active)]:
            del self.similar_cache[c]
        self.near_labels = ants_labels(lab for labels in self.similar_cache.values() for lab in labels)
        enc = self.provider.encode(self.near_labels, NEAR_TEMPLATE) if self.near_labels else None
        self.near = None if enc is None else self._unit_rows(enc, len(self.near_labels))

    def _unit_rows(self, emb: Any, n: int) -> torch.Tensor:
        """A provider's embeddings as float64 rows, checked: n rows of the ID embeddings' dimension."""
        rows = self._tensor(emb)
        if rows.ndim != 2 or rows.shape != (n, self.ids.shape[1]):
            raise InputError(
                f"the ANTS provider's encode gave shape {tuple(rows.shape)} for {n} labels; "
                f"expected ({n}, {self.ids.shape[1]})"
            )
        return rows

    def _activation_far(self, x: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
        """TANL's selection over the far queue (their _activation_aware_far_score): the queue's
        negatives most activated by this batch's low-scored images less its high-scored ones."""
        torch = _torch()
        self.active_conf.extend(reference.unbind())
        self.active_conf = self.active_conf[-int(self.params["ants_active_queue"]) :]
        th = activation_threshold(torch.stack(self.active_conf))
        gap = float(self.params["ants_active_gap"])
        high, low = reference > th + gap * (1.0 - th), reference < th - gap * th
        if not bool(high.any()) or not bool(low.any()):
            return reference
        assert self.far is not None  # the caller checked: a far score exists
        logits = self.scale * x @ torch.cat((self.ids, self.far)).T
        p = logits.float().softmax(dim=1)[:, self.k :]
        relevance = p[low].mean(dim=0) - p[high].mean(dim=0)
        keep = relevance.topk(min(int(self.params["ants_active"]), relevance.numel())).indices
        chosen = torch.cat((logits[:, : self.k], logits[:, self.k :][:, keep]), dim=1)
        return prefix_id_mass(chosen, self.k, int(self.params["ants_active_step"]))

    def _fuse(
        self, x: torch.Tensor, base: torch.Tensor, far: torch.Tensor | None, near: torch.Tensor | None
    ) -> torch.Tensor:
        """The score ``ants_score`` asks for; ``ada``: the adaptive weight over every image so far."""
        torch = _torch()
        mode = self.params["ants_score"]
        far, near_s = (base if far is None else far), (base if near is None else near)
        if mode == "far":
            return far
        if mode == "near":
            return near_s
        far_b = self._bank_score(x, self.far, self.k)
        near_b = self._bank_score(x, None if self.near is None else self.near.repeat(NEAR_REPEATS, 1), self.k)
        self.far_seen.extend((base if far_b is None else far_b).unbind())
        self.near_seen.extend((base if near_b is None else near_b).unbind())
        u_far = 1.0 - torch.stack(self.far_seen).mean()
        u_near = 1.0 - torch.stack(self.near_seen).mean()
        den = u_far + u_near
        w = 0.5 if float(den.abs()) < torch.finfo(den.dtype).eps else float(u_far / den)
        return w * far + (1.0 - w) * near_s

    def summary(self) -> dict[str, float | int]:
        """The far threshold, updates done, the far queue's and the near labels' sizes."""
        return {
            "far_threshold": float(self.threshold),
            "far_updates": self.far_done,
            "far_negatives": 0 if self.far is None else int(self.far.shape[0]),
            "near_negatives": len(self.near_labels),
        }


def far_threshold(scores: Sequence[float], eta: float) -> float:
    """The far threshold (their update_adaptive_threshold): in float32, the histogram of the scores on
    0, 0.1, ..., 1 (numpy's bins), the bin edge after its steepest count step, and the ``eta``
    percentile of the scores below that edge (of all scores where none is)."""
    values = np.asarray(scores, dtype=np.float32)
    bins = np.arange(0.0, 1.1, 0.1)
    counts, _ = np.histogram(values, bins)
    upper = float(bins[np.argmax(np.abs(np.diff(counts))) + 1])
    low = values[values < upper]
    return float(np.percentile(low if low.size else values, eta * 100.0))


def _sources(positions: Sequence[int], captions: Sequence[str], kept: Sequence[str]) -> list[tuple[int, str]]:
    """Each kept label with the stream position of the first image whose caption gave it."""
    first: dict[str, int] = {}
    for p, c in zip(positions, captions, strict=False):
        key = " ".join(str(c).strip().rstrip(".").split()).casefold()
        first.setdefault(key, p)
    return [(first.get(lab.casefold(), -1), lab) for lab in kept]


def register_ants() -> None:
    """Register ``ants`` through the public :func:`negvocab.register_stream_method` (called on import
    of :mod:`negvocab.scoring`; tests that clear the registry call it again)."""
    register_stream_method(
        "ants",
        "negvocab.scoring.ants:ANTS",
        params=(*ANTS_PARAMS, "tau"),
        needs_negatives=True,
        paper="Zhu et al., Adaptive Negative Textual Space Shaping for OOD Detection via Test-Time MLLM "
        "Understanding and Reasoning, CVPR 2026 (arXiv:2509.03951)",
        replace=True,
    )


register_ants()
