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
    "ActivationQueue",
    "activation_aware",
    "best_threshold",
    "noise_image_features",
    "noise_images_input",
    "noise_pixels",
    "prefix_mass",
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
    return prefix_mass(_torch().logsumexp(id_logits, dim=1), neg_logits, step)


def prefix_mass(log_id: torch.Tensor, neg_logits: torch.Tensor, step: int) -> torch.Tensor:
    """:func:`activation_aware` from the log of the ID mass ``log sum_ID e^z`` (B,) instead of the ID
    logits: TANL computes it once per batch and reads both of the batch's scores off it."""
    torch = _torch()
    m = neg_logits.shape[1]
    if m == 0:
        return torch.ones(log_id.shape[0], dtype=log_id.dtype, device=log_id.device)
    if step == 0:
        ends = torch.tensor([m - 1], device=neg_logits.device)
    else:
        ends = torch.clamp(torch.arange(step, m + step, step, device=neg_logits.device), max=m) - 1
    log_neg = torch.logcumsumexp(neg_logits, dim=1)[:, ends]
    return torch.sigmoid(log_id[:, None] - log_neg).mean(dim=1)


class ActivationQueue:
    """The last ``length`` activation rows (n, N) and their running sum: a ring buffer, so that a batch
    adds and drops rows without copying the queue, and the mean is read off the sum (recomputed
    from the rows each time the whole ring has been rewritten, so rounding does not accumulate).

    Holds the same rows as ``torch.cat([queue, rows])[-length:]``; their order in the ring differs,
    which no mean sees."""

    def __init__(self, rows: torch.Tensor, length: int) -> None:
        self.length = int(length)
        self.rows = rows.new_empty((self.length, rows.shape[1]))
        self.total = rows.new_zeros(rows.shape[1])
        self.count = self.pos = self.since_sum = 0
        self.push(rows)

    def __len__(self) -> int:
        return self.count

    def push(self, rows: torch.Tensor, total: torch.Tensor | None = None) -> None:
        """Append ``rows`` (r, N), dropping the oldest beyond ``length``; ``total``: their sum over
        the rows when the caller has it."""
        if rows.shape[0] > self.length:
            rows, total = rows[-self.length :], None
        r = rows.shape[0]
        if r == 0:
            return
        slots = (self.pos + _torch().arange(r, device=rows.device)) % self.length
        free = self.length - self.count  # the first ``free`` slots written are empty, the rest dropped
        self.since_sum += r
        fresh = self.since_sum >= self.length  # every row rewritten since the last full sum
        if not fresh:
            if r > free:
                self.total -= self.rows[slots[free:]].sum(dim=0)
            self.total += rows.sum(dim=0) if total is None else total
        self.rows[slots] = rows
        self.count, self.pos = min(self.length, self.count + r), (self.pos + r) % self.length
        if fresh:
            self.total, self.since_sum = self.rows[: self.count].sum(dim=0), 0

    def mean(self) -> torch.Tensor:
        return self.total / self.count


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
    ks, where = np.unique(np.searchsorted(v, grid, side="left"), return_inverse=True)  # k values below th
    # each split's two population variances from running sums of the centred values (one pass over
    # the queue, not one per split); a side of equal values gets exactly 0, as the direct formula gives
    y = v - v.mean() if n else v
    s1, s2 = np.concatenate([[0.0], np.cumsum(y)]), np.concatenate([[0.0], np.cumsum(y * y)])
    n0, n1 = ks.astype(np.float64), (n - ks).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        var0 = np.maximum(s2[ks] / n0 - (s1[ks] / n0) ** 2, 0.0)
        var1 = np.maximum((s2[n] - s2[ks]) / n1 - ((s1[n] - s1[ks]) / n1) ** 2, 0.0)
    last = np.clip(ks - 1, 0, max(n - 1, 0))
    if n:
        var0[v[last] == v[0]] = 0.0
        var1[v[np.minimum(ks, n - 1)] == v[-1]] = 0.0
    w1 = (n - ks).astype(np.float32) / np.float32(max(n, 1))  # float32 as theirs: equal splits tie
    w0 = np.float32(1) - w1
    per_k = np.where((w1 == 0) | (w0 == 0), np.inf, w0.astype(np.float64) * var0 + w1.astype(np.float64) * var1)
    crit = per_k[where]
    ties = np.flatnonzero(crit == crit.min())
    return float(grid[ties[len(ties) // 2]])


def noise_pixels(seed: int = 0, size: int = 224) -> torch.Tensor:
    """The 15 noise images of TANL's network (3 each of :data:`NOISE_KINDS`, 3 x size x size, values in
    [0, 1], not normalised: their code encodes them as they are), drawn as their code draws them, from
    torch's generator seeded with ``seed`` (the global generator is left as it was).

    Parameters
    ----------
    seed : int, default 0
        Seed of the draws.
    size : int, default 224
        Height and width of each image.
    """
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
    which ID prompts stay in a queue shorter than K).

    Parameters
    ----------
    active_size : int, default 1000
        Negatives of the corpus scored per batch, the most activated by OOD-looking images (their beta).
    prefix_step : int, default 1
        Activation-aware score over prefixes of this many negatives (their gamma; 0: one softmax).
    memory_weight : float, default 0.0
        Weight of the queues' mean against the batch's own activations, in [0, 1] (their alpha).
    queue_length : int, default 300
        Activations kept in each of the ID-looking and OOD-looking queues (their memleng).
    confidence_gap : float, default 0.5
        Margin around the adaptive threshold th, in [0, 1]: ID-looking above th + gap(1 - th),
        OOD-looking below th - gap th (their gap).
    tau : float, default 0.01
        The softmax temperature.
    seed : int, default 0
        TANL's set-up seed (see above).
    """

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

    def _forget_setup(self) -> None:
        """A new set-up: the state before the first batch is computed once per set-up."""
        self._initial: tuple[Any, ...] | None = None

    def init_state(self) -> None:
        """The queues (ID prompts' and noise images' activations, shuffled by ``seed``, the last
        ``queue_length`` kept) and the score queue (the ID prompts' and noise images' scores).
        Computed at set-up (the activations of the K prompts are K images' matmul) and copied on reset."""
        if self._initial is None:
            self._initial = self._first_state()
        rows_id, rows_ood, start = self._initial
        self.q_id = ActivationQueue(rows_id, self.queue_length)
        self.q_ood = ActivationQueue(rows_ood, self.queue_length)
        self.score_queue = start.copy()
        self.threshold = math.nan

    def _first_state(self) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
        torch = _torch()
        ids, corpus, noise = self._tensors()
        self.k = ids.shape[0]
        self.all = torch.cat([ids, corpus])
        self.m = min(self.active_size, corpus.shape[0])
        gen = torch.Generator().manual_seed(self.seed)
        perm_pos = torch.randperm(self.k, generator=gen)[-self.queue_length :].to(self.all.device)
        perm_neg = torch.randperm(noise.shape[0], generator=gen)[-self.queue_length :].to(self.all.device)
        z_ids, z_noise = self._logits(ids), self._logits(noise)
        rows_id = self._activations(z_ids[1], perm_pos)[0]
        rows_ood = self._activations(z_noise[1], perm_neg)[0]
        order = self._rank(rows_ood.mean(0) - rows_id.mean(0))
        start = torch.cat([self._score(*z_ids, order), self._score(*z_noise, order)])
        return rows_id, rows_ood, start.cpu().numpy()

    def _logits(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The one matmul of a batch: ``log sum_ID e^z`` (n,) and the logits ``z = s x . [ID; corpus]``
        (n, K + N); both scores and the activations are read off them."""
        z = self.scale * x @ self.all.T
        return _torch().logsumexp(z[:, : self.k], dim=1), z

    def _activations(self, z: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Softmax of ``z`` at ``rows``, corpus columns (n, N), and their sum over the rows (N,)."""
        act = _torch().softmax(z[rows], dim=1)[:, self.k :]
        return act, act.sum(dim=0)

    def _rank(self, activation: torch.Tensor) -> torch.Tensor:
        """The first ``active_size`` corpus rows by ``activation``, largest first (ties: lower row first)."""
        return _torch().argsort(activation, descending=True, stable=True)[: self.m]

    def _score(self, log_id: torch.Tensor, z: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        return prefix_mass(log_id, z[:, self.k + order], self.prefix_step)

    # -- one batch ----------------------------------------------------------------------------------
    def step(self, image_emb: np.ndarray | torch.Tensor) -> torch.Tensor:
        """Score a batch (see the module docstring, steps 1 to 5), then update the queues: one matmul,
        the activations of the batch's ID- and OOD-looking images, two rankings of the corpus."""
        torch = _torch()
        x = torch.as_tensor(np.asarray(image_emb) if not isinstance(image_emb, torch.Tensor) else image_emb)
        log_id, z = self._logits(x.to(self.all.device, torch.float64))
        mean_id, mean_ood = self.q_id.mean(), self.q_ood.mean()
        first = self._score(log_id, z, self._rank(mean_ood - mean_id))
        self.score_queue = np.concatenate([self.score_queue, first.cpu().numpy()])[-SCORE_QUEUE_LENGTH:]
        th = self.threshold = best_threshold(self.score_queue)
        looks_id = torch.nonzero(first > th + self.gap * (1 - th)).flatten()
        looks_ood = torch.nonzero(first < th - self.gap * th).flatten()
        act_id, sum_id = self._activations(z, looks_id)
        act_ood, sum_ood = self._activations(z, looks_ood)
        if len(looks_id):
            mean_id = self.weight * mean_id + (1 - self.weight) * (sum_id / len(looks_id))
        if len(looks_ood):
            mean_ood = self.weight * mean_ood + (1 - self.weight) * (sum_ood / len(looks_ood))
        scores = self._score(log_id, z, self._rank(mean_ood - mean_id))
        self.q_id.push(act_id, sum_id)
        self.q_ood.push(act_ood, sum_ood)
        return scores

    def summary(self) -> dict[str, float | int]:
        """The threshold last found and the queues' fill."""
        return {
            "threshold": self.threshold,
            "id_queue": len(self.q_id),
            "ood_queue": len(self.q_ood),
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
