"""TANL: test-time activated negative labels, a stream method (docs/methods.md#tanl).

TANL (Zhang et al., "Activation Matters", CVPR 2026, arXiv:2603.25250) scores each test batch with the
``active_size`` negatives of a large corpus (the ~70k WordNet words) that the recent OOD-looking images
activate most and the recent ID-looking images least. Its state is two queues of activations (softmax
over the ID prompts and the whole corpus, corpus columns kept): one of ID-looking images, started from
the ID class prompts, one of OOD-looking images, started from noise-image features; and a queue of
recent scores whose within-class-variance split is the adaptive threshold that says which images look ID
or OOD.

Per batch ``x`` (B, d), with ``s = 1/tau`` (CLIP's logit scale, 100) and ``p(v)`` the softmax of
``s v . [t_1..t_K, n_1..n_N]`` restricted to the corpus columns (the activation of each negative):

1. ``a = mean(Q_ood) - mean(Q_id)``; the negatives ranked by ``a`` (descending), the first
   ``active_size`` scored with :func:`activation_aware`: ``c(v)``.
2. ``c`` of the batch joins the score queue (its last 20,000 entries, the first being the ID prompts'
   and the noise images' scores); the threshold ``th`` is the split of that queue, on the grid
   0, 0.01, ..., 0.99, of least weighted within-class variance (the middle one of equal minima).
3. ID-looking: ``c > th + gap (1 - th)``; OOD-looking: ``c < th - gap th``.
4. ``a' = [w mean(Q_ood) + (1 - w) mean(p(OOD-looking of x))] - [w mean(Q_id) + (1 - w) mean(p(ID-looking of x))]``
   (``w`` = ``memory_weight``; a side without images in the batch keeps its queue mean); the batch is
   scored with the first ``active_size`` negatives by ``a'``: that is the returned score.
5. The ID-looking and OOD-looking images' activations join their queues (their last ``queue_length``).

:func:`activation_aware` is NegLabel's ID mass ``sum_ID e^z / (sum_ID e^z + sum_{j<=e} e^{z_j})`` averaged
over the prefixes ``e = step, 2 step, ...`` of the ranked negatives (``prefix_step = 0``: one softmax
over all of them). Everything is float64; the authors' code casts to float32 on the way, see the
methods document.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from negvocab.core.errors import InputError
from negvocab.scoring.methods import Param
from negvocab.scoring.stream import StreamMethod, register_stream_method

if TYPE_CHECKING:
    import torch

__all__ = [
    "NOISE_KINDS",
    "SCORE_QUEUE_LENGTH",
    "TANL",
    "TANL_PARAMS",
    "THRESHOLD_GRID",
    "activation_aware",
    "best_threshold",
    "noise_image_features",
    "noise_images_input",
    "noise_pixels",
    "register_tanl",
]

#: entries of the score queue the threshold is found on (their code's fixed ``score_queue_len``)
SCORE_QUEUE_LENGTH = 20_000
#: the threshold grid: ``torch.arange(0, 1, 0.01)`` (float32, as their code makes it)
THRESHOLD_GRID = (0.0, 1.0, 0.01)
#: the noise images TANL's network encodes at set-up, three of each kind, in this order
NOISE_KINDS: tuple[str, ...] = ("gaussian", "uniform", "poisson", "gamma", "salt_and_pepper")

_DOC = "TANL (stream): "
TANL_PARAMS: tuple[Param, ...] = (
    Param(
        "active_size",
        int,
        1000,
        _DOC + "negatives of the corpus scored per batch, the most activated by OOD-looking images (their beta).",
        check="min",
        low=1,
    ),
    Param(
        "prefix_step",
        int,
        1,
        _DOC + "activation-aware score over prefixes of this many negatives (their gamma; 0: one softmax).",
        check="min",
        low=0,
    ),
    Param(
        "memory_weight",
        float,
        0.0,
        _DOC + "weight of the queues' mean against the batch's own activations, in [0, 1] (their alpha).",
        check="nonneg",
    ),
    Param(
        "queue_length",
        int,
        300,
        _DOC + "activations kept in each of the ID-looking and OOD-looking queues (their memleng).",
        check="min",
        low=1,
    ),
    Param(
        "confidence_gap",
        float,
        0.5,
        _DOC + "margin around the adaptive threshold th, in [0, 1]: ID-looking above th + gap(1 - th), "
        "OOD-looking below th - gap th (their gap).",
        check="nonneg",
    ),
)


def _torch() -> Any:
    import torch  # deferred: the registry is read without torch

    return torch


def activation_aware(id_logits: torch.Tensor, neg_logits: torch.Tensor, step: int) -> torch.Tensor:
    """TANL's activation-aware score: the ID mass of a softmax over the ID logits (B, K) and a prefix
    of the ranked negative logits (B, m), averaged over the prefixes ``step, 2 step, ..., m``
    (the last one cut at ``m``); ``step = 0``: the one softmax over all ``m``.

    Computed in log space (``logcumsumexp``): one pass over the negatives for every prefix."""
    torch = _torch()
    log_id = torch.logsumexp(id_logits, dim=1, keepdim=True)
    m = neg_logits.shape[1]
    if m == 0:
        return torch.ones(id_logits.shape[0], dtype=id_logits.dtype, device=id_logits.device)
    if step == 0:
        ends = torch.tensor([m - 1], device=neg_logits.device)
    else:
        ends = torch.clamp(torch.arange(step, m + step, step, device=neg_logits.device), max=m) - 1
    log_neg = torch.logcumsumexp(neg_logits, dim=1)[:, ends]
    return torch.sigmoid(log_id - log_neg).mean(dim=1)


def best_threshold(scores: np.ndarray) -> float:
    """The threshold on the grid 0, 0.01, ..., 0.99 that splits ``scores`` into ``>= th`` and ``< th``
    with the least weighted within-class variance ``w0 var0 + w1 var1`` (population variances; a split
    with an empty side is never chosen); of equal minima, the middle one (their ``find_best_threshold``).

    Their weights are float32 (``n1 / n`` of a float32 count): kept, so that equal minima are equal here too.

    >>> best_threshold(np.array([0.1, 0.12, 0.9, 0.95]))  # any cut in (0.12, 0.9] splits them alike
    0.5199999809265137
    """
    torch = _torch()
    grid = torch.arange(*THRESHOLD_GRID).double().numpy()  # the float32 grid of their code, exactly
    v = np.sort(np.asarray(scores, dtype=np.float64))
    n = v.size
    crit = np.full(grid.size, np.inf)
    cache: dict[int, float] = {}
    for t, k in enumerate(np.searchsorted(v, grid, side="left")):  # k values below th: class 0
        if k not in cache:
            w1 = np.float32(np.float32(n - k) / np.float32(n))
            w0 = np.float32(1) - w1
            if w1 == 0 or w0 == 0:
                cache[k] = math.inf
            else:
                lo, hi = v[:k], v[k:]
                cache[k] = float(w0) * float(np.mean((lo - lo.mean()) ** 2)) + float(w1) * float(
                    np.mean((hi - hi.mean()) ** 2)
                )
        crit[t] = cache[k]
    ties = np.flatnonzero(crit == crit.min())
    return float(grid[ties[len(ties) // 2]])


def noise_pixels(seed: int = 0, size: int = 224) -> torch.Tensor:
    """The 15 noise images of TANL's network (3 each of :data:`NOISE_KINDS`, 3 x size x size, values in
    [0, 1], not normalised: their code encodes them as they are), drawn as their code draws them, from
    torch's generator seeded with ``seed`` (the global generator is left as it was)."""
    torch = _torch()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        shape = (3, 3, size, size)

        def minmax(x: Any) -> Any:
            return (x - x.min()) / (x.max() - x.min())

        gaussian = minmax(torch.randn(shape, dtype=torch.float))
        uniform = torch.rand(shape, dtype=torch.float)
        poisson = minmax(torch.poisson(5.0 * torch.ones(shape)))
        gamma = minmax(torch.distributions.Gamma(2, 1).sample(shape))
        salt = torch.rand(shape, dtype=torch.float)
        salt = (salt >= 0.5).float()
    return torch.cat((gaussian, uniform, poisson, gamma, salt), dim=0)


def _image_size(vlm: Any) -> int:
    size = getattr(getattr(vlm.model, "visual", None), "image_size", 224)
    return int(size[0] if isinstance(size, (tuple, list)) else size)


def noise_image_features(vlm: Any, seed: int = 0) -> np.ndarray:
    """The unit-norm image features (15, d) of TANL's noise images, encoded by ``vlm`` (a
    :class:`negvocab.VLM`) as TANL's code encodes them: the [0, 1] pixels as they are, at the model's
    input size, without the preprocessing's normalisation."""
    pixels = noise_pixels(seed, size=_image_size(vlm)).to(vlm.device)
    with _torch().no_grad(), vlm.autocast():
        feats = vlm.model.encode_image(pixels)
    return vlm.unit_rows(feats, "images").numpy()


def noise_images_input(context: Any) -> np.ndarray:
    """The set-up input ``noise_images`` (:mod:`negvocab.scoring.providers`): the noise-image features
    of the context's model, seeded by the method's ``seed``."""
    return noise_image_features(context.vlm, int(context.params.get("seed", 0)))


class TANL(StreamMethod):
    """TANL over a negative corpus: ``setup(id_emb, corpus_emb, noise_images=...)``, then batches.

    ``neg_emb`` is the whole corpus TANL chooses from (their ID-far NegLabel selection then the
    rest of the WordNet words); ``noise_images`` the unit-norm image features of the 15 noise images
    (:func:`noise_pixels` encoded by the model: :func:`noise_image_features`).
    ``seed`` is TANL's set-up seed (the method parameter ``seed``, which NegLabel reads as its grouping
    seed): it seeds the one random step of the set-up (the order of the initial queues, which decides
    which ID prompts stay in a queue shorter than K)."""

    inputs = ("noise_images",)

    def __init__(
        self,
        *,
        active_size: int = 1000,
        prefix_step: int = 1,
        memory_weight: float = 0.0,
        queue_length: int = 300,
        confidence_gap: float = 0.5,
        tau: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__(
            active_size=active_size,
            prefix_step=prefix_step,
            memory_weight=memory_weight,
            queue_length=queue_length,
            confidence_gap=confidence_gap,
            tau=tau,
            seed=seed,
        )
        for name, value in (("memory_weight", memory_weight), ("confidence_gap", confidence_gap)):
            if not 0 <= value <= 1:
                raise InputError(f"{name} must be in [0, 1], got {value}")
        self.needs_negatives = True
        self.scale = 1.0 / float(tau)
        self.active_size, self.prefix_step = int(active_size), int(prefix_step)
        self.weight, self.gap = float(memory_weight), float(confidence_gap)
        self.queue_length, self.seed = int(queue_length), int(seed)

    # -- set-up -------------------------------------------------------------------------------------
    def _tensors(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        torch = _torch()
        dev = next((a.device for a in (self.neg_emb, self.id_emb) if isinstance(a, torch.Tensor)), None)
        dev = dev or torch.device("cpu")

        def f64(a: Any) -> Any:
            return torch.as_tensor(np.asarray(a) if not isinstance(a, torch.Tensor) else a).to(dev, torch.float64)

        return f64(self.id_emb), f64(self.neg_emb), f64(self.extra["noise_images"])

    def init_state(self) -> None:
        """The queues (ID prompts' and noise images' activations, shuffled by ``seed``, the last
        ``queue_length`` kept) and the score queue (the ID prompts' and noise images' scores)."""
        torch = _torch()
        self.ids, self.corpus, noise = self._tensors()
        self.k = self.ids.shape[0]
        self.all = torch.cat([self.ids, self.corpus])
        self.m = min(self.active_size, self.corpus.shape[0])
        gen = torch.Generator().manual_seed(self.seed)
        perm_pos = torch.randperm(self.k, generator=gen)[-self.queue_length :].to(self.all.device)
        perm_neg = torch.randperm(noise.shape[0], generator=gen)[-self.queue_length :].to(self.all.device)
        self.q_id = self._activations(self.ids[perm_pos])
        self.q_ood = self._activations(noise[perm_neg])
        order = self._rank(self.q_ood.mean(0) - self.q_id.mean(0))
        start = torch.cat([self._score(self.ids, order), self._score(noise, order)])
        self.score_queue = start.cpu().numpy()
        self.threshold = math.nan

    def _activations(self, x: torch.Tensor) -> torch.Tensor:
        """Softmax of ``s x . [ID; corpus]``, corpus columns (n, N)."""
        return (self.scale * x @ self.all.T).softmax(dim=1)[:, self.k :]

    def _rank(self, activation: torch.Tensor) -> torch.Tensor:
        """The first ``active_size`` corpus rows by ``activation``, largest first (ties: lower row first)."""
        return _torch().argsort(activation, descending=True, stable=True)[: self.m]

    def _score(self, x: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        return activation_aware(self.scale * x @ self.ids.T, self.scale * x @ self.corpus[order].T, self.prefix_step)

    # -- one batch ----------------------------------------------------------------------------------
    def step(self, image_emb: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Score a batch (see the module docstring, steps 1 to 5), then update the queues."""
        torch = _torch()
        x = torch.as_tensor(np.asarray(image_emb) if not isinstance(image_emb, torch.Tensor) else image_emb)
        x = x.to(self.all.device, torch.float64)
        act = (self.scale * x @ self.all.T).softmax(dim=1)[:, self.k :]
        mean_id, mean_ood = self.q_id.mean(0), self.q_ood.mean(0)
        first = self._score(x, self._rank(mean_ood - mean_id))
        self.score_queue = np.concatenate([self.score_queue, first.cpu().numpy()])[-SCORE_QUEUE_LENGTH:]
        th = self.threshold = best_threshold(self.score_queue)
        looks_id = first > th + self.gap * (1 - th)
        looks_ood = first < th - self.gap * th
        if bool(looks_id.any()):
            mean_id = self.weight * mean_id + (1 - self.weight) * act[looks_id].mean(0)
        if bool(looks_ood.any()):
            mean_ood = self.weight * mean_ood + (1 - self.weight) * act[looks_ood].mean(0)
        scores = self._score(x, self._rank(mean_ood - mean_id))
        self.q_id = torch.cat([self.q_id, act[looks_id]])[-self.queue_length :]
        self.q_ood = torch.cat([self.q_ood, act[looks_ood]])[-self.queue_length :]
        return scores

    def summary(self) -> dict[str, float | int]:
        """The threshold last found and the queues' fill."""
        return {
            "threshold": self.threshold,
            "id_queue": int(self.q_id.shape[0]),
            "ood_queue": int(self.q_ood.shape[0]),
            "active_size": self.m,
        }


def register_tanl() -> None:
    """Register ``tanl`` through the public :func:`negvocab.register_stream_method` (called on import
    of :mod:`negvocab.scoring`; tests that clear the registry call it again)."""
    register_stream_method(
        "tanl",
        "negvocab.scoring.tanl:TANL",
        params=(*TANL_PARAMS, "tau", "seed"),
        needs_negatives=True,
        paper="Zhang et al., Activation Matters: Test-time Activated Negative Labels for OOD Detection with "
        "Vision-Language Models, CVPR 2026 (arXiv:2603.25250)",
        replace=True,
    )


register_tanl()
