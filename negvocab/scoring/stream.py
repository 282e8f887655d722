"""Test-time (stream) methods: state kept over an ordered stream of test batches.

A batch method (:func:`negvocab.score`) scores any set of images at once, and an image's score does
not depend on the other images. A *stream* method (AdaNeg's memory bank, TANL's per-batch choice of
negatives, OODD's queue) learns from the test images as they come, so its scores depend on which
images came before, in what order and in what batches. This module makes that a first-class kind
of registry entry (``Method.kind == "stream"``), shaped like pytorch-ood's ``Detector``
(``fit_features`` / ``predict_features``) and OpenOOD's postprocessors (``setup`` / ``postprocess``
/ ``reset_memory``).

The protocol (one evaluation):

1. **Set-up, on the ID side only.** :meth:`StreamMethod.setup` takes the ID class prompt embeddings
   ``id_emb`` (K, d), the negative label embeddings ``neg_emb`` (M, d; a method that chooses among
   them, as TANL, takes its whole corpus here), optionally few-shot ID image features ``id_images``
   (n, d), and any further inputs the class names in ``inputs`` (TANL: noise-image features). No
   test image is seen.
2. **One stream.** The ID and OOD test images of one evaluation form ONE stream: ID rows then OOD
   rows (:func:`negvocab.evaluate_stream` concatenates them, one stream per OOD set, each from a
   fresh state, as the authors reset their memory per ID/OOD pair), permuted by
   :func:`stream_order` (``order="shuffled"``: a numpy ``default_rng(seed)`` permutation;
   ``"id_first"`` / ``"ood_first"``: all ID rows then all OOD rows, or the reverse, each part
   shuffled by the seed; ``"given"``: kept in order), then cut into consecutive batches of
   ``stream_batch`` images (the last may be smaller). The ID:OOD mix may first be subsampled to a ratio
   (:func:`stream_mix`, seeded). A temporal-shift run (``phases``, :data:`STREAM_PHASES`) instead feeds
   the OOD sets' streams one after another, in the phase order, with no reset between them
   (:func:`phase_sets`; ``run_stream(..., reset=False)``).
3. **Batch by batch.** :meth:`StreamMethod.score_batch` is called once per batch, in stream order.
   The scores of batch ``b`` may depend on batches ``0..b`` and on nothing later: a batch is scored
   with what the method has seen so far, then the method's state holds that batch too. Whether a
   batch's own images enter its scores is the method's (and its authors') choice: the toy of the
   tests scores then updates; AdaNeg's code writes a batch into its memory and then scores it; TANL's
   uses the batch's own activations to pick the negatives it scores it with. Either way a result
   depends on the order, the batch size and the seed, and :func:`run_stream` records all three.
4. **Scores in the original order.** :func:`run_stream` returns the scores aligned with the rows it
   was given (the permutation inverted), so ID and OOD scores split as for a batch method.

>>> import numpy as np
>>> stream_order(5, order="shuffled", seed=0).tolist()
[2, 4, 3, 0, 1]
>>> stream_order(3, order="given", seed=0).tolist()
[0, 1, 2]
>>> stream_order(5, order="ood_first", seed=0, n_id=2).tolist()  # rows 0, 1 are ID: they come last
[4, 2, 3, 0, 1]

The authors' own streams (AdaNeg's and TANL's evaluator): ``ConcatDataset([ood, id])`` in a
``DataLoader(shuffle=True)`` with no seed of its own: a shuffled stream, its permutation unrecorded.
negvocab's ``"shuffled"`` is that protocol with the permutation seeded and recorded.
"""

from __future__ import annotations

import logging
import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, TypeVar, overload

import numpy as np

from negvocab.core.deprecation import rename_keys, renamed_kwargs
from negvocab.core.errors import InputError
from negvocab.core.progress import Progress
from negvocab.core.registry import decorator, resolve_target
from negvocab.core.types import ArrayLike, Embeddings, ParamValue
from negvocab.scoring.methods import METHODS, PARAMS, Method, Param, check_params, get_method, register_method

logger = logging.getLogger(__name__)

__all__ = [
    "PHASE_SETS",
    "STREAM_DEFAULTS",
    "STREAM_ORDERS",
    "STREAM_PHASES",
    "StreamMethod",
    "StreamResult",
    "check_kind",
    "check_ratio",
    "check_stream",
    "make_stream",
    "phase_sets",
    "register_stream_method",
    "run_stream",
    "stream_class",
    "stream_mix",
    "stream_order",
    "stream_settings",
]

#: how the stream is ordered: a seeded permutation; all ID then all OOD images (or the reverse), each
#: part shuffled by the seed; or the rows as given
STREAM_ORDERS: tuple[str, ...] = ("shuffled", "given", "id_first", "ood_first")
#: the orders that need to know which rows are ID (``n_id``)
SPLIT_ORDERS: tuple[str, ...] = ("id_first", "ood_first")
#: the temporal-shift phase orders of OpenOOD-VLM (``configs/datasets/imagenet/imagenet_temshift_<name>.yml``):
#: the far-OOD sets one after another, each a phase (that set's stream with the ID set), the state carried
#: from one phase to the next; a letter per set, :data:`PHASE_SETS`
STREAM_PHASES: tuple[str, ...] = ("ptis", "spti", "tisp")
#: the OOD set of each phase letter (negvocab's names of the MOS four; their yml's ``dtd`` is ``textures``)
PHASE_SETS: dict[str, str] = {"p": "places", "t": "textures", "i": "inaturalist", "s": "sun"}
_SET_ALIASES: dict[str, str] = {"dtd": "textures", "texture": "textures", "places365": "places", "inat": "inaturalist"}


def _unwrap(x: Any) -> Any:
    """The array behind an ``ImageEmbeddings`` (``.embeddings``); arrays and tensors as they are."""
    if hasattr(x, "embeddings") and not hasattr(x, "shape"):
        return x.embeddings
    return x


def _rows(x: Any, name: str, dim: int | None = None) -> Any:
    """``x`` unwrapped, checked to be a 2-D array (of ``dim`` columns when given)."""
    x = _unwrap(x)
    if x is None:
        raise InputError(f"{name} is missing")
    if not hasattr(x, "shape"):
        x = np.asarray(x, dtype=np.float64)
    if len(x.shape) != 2:
        raise InputError(f"{name} must be a 2-D array (rows x dimension), got shape {tuple(x.shape)}")
    if dim is not None and x.shape[1] != dim:
        raise InputError(f"{name} has dimension {x.shape[1]}, the ID embeddings {dim}: use one model's embeddings")
    return x


def _integer(value: Any, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InputError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


@renamed_kwargs(batch_size="stream_batch")
def check_stream(*, stream_batch: Any = 1, order: Any = "shuffled", seed: Any = 0) -> tuple[int, str, int]:
    """``(stream_batch, order, seed)`` if allowed, else one-line :class:`InputError` naming the parameter."""
    if not isinstance(order, str) or order not in STREAM_ORDERS:
        raise InputError(f"unknown order {order!r}; choose one of {', '.join(STREAM_ORDERS)}")
    return _integer(stream_batch, "stream_batch", 1), order, _integer(seed, "seed", 0)


def stream_order(n: int, *, order: str = "shuffled", seed: int = 0, n_id: int | None = None) -> np.ndarray:
    """The stream as a permutation of ``range(n)``: position ``k`` of the stream is row ``perm[k]``.

    ``"shuffled"``: ``numpy.random.default_rng(seed).permutation(n)``; ``"given"``: ``arange(n)``
    (the seed plays no part); ``"id_first"`` / ``"ood_first"`` (the first ``n_id`` rows are ID):
    ``rng = default_rng(seed)``, ``a = rng.permutation(n_id)``, ``b = n_id + rng.permutation(n - n_id)``,
    then ``a, b`` or ``b, a``.

    Parameters
    ----------
    n : int
        Rows in the stream.
    order : str, default "shuffled"
        ``"shuffled"``, ``"given"``, ``"id_first"`` or ``"ood_first"``.
    seed : int, default 0
        Seed of the permutations.
    n_id : int, optional
        The first ``n_id`` rows are ID (``id_first`` and ``ood_first`` need it).
    """
    n = _integer(n, "n", 0)
    _, order, seed = check_stream(order=order, seed=seed)
    if order == "given":
        return np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    if order in SPLIT_ORDERS:
        if n_id is None:
            raise InputError(f"order {order!r} needs n_id, the number of ID rows (they come first in the rows)")
        n_id = _integer(n_id, "n_id", 0)
        if n_id > n:
            raise InputError(f"n_id must be at most the {n} rows, got {n_id}")
        a, b = rng.permutation(n_id), n_id + rng.permutation(n - n_id)
        return np.concatenate([a, b] if order == "id_first" else [b, a]).astype(np.int64)
    return rng.permutation(n).astype(np.int64)


def stream_mix(n_id: int, n_ood: int, *, ratio: float | None = None, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The ID and OOD rows a stream keeps for an ID:OOD ``ratio`` (None: all of both), sorted.

    The side in excess is subsampled without replacement (``numpy.random.default_rng(seed)``) so that
    ``n_id_kept / n_ood_kept`` is ``ratio`` to within one image; the other side is kept whole.

    Parameters
    ----------
    n_id : int
        ID images available.
    n_ood : int
        OOD images available.
    ratio : float, optional
        ID images per OOD image (None: all of both).
    seed : int, default 0
        Seed of the subsample.

    Examples
    --------
    >>> [a.tolist() for a in stream_mix(4, 2, ratio=1.0, seed=0)]
    [[2, 3], [0, 1]]
    """
    n_id, n_ood = _integer(n_id, "n_id", 0), _integer(n_ood, "n_ood", 0)
    all_id, all_ood = np.arange(n_id, dtype=np.int64), np.arange(n_ood, dtype=np.int64)
    if ratio is None:
        return all_id, all_ood
    ratio = check_ratio(ratio)
    rng = np.random.default_rng(_integer(seed, "seed", 0))
    if n_id > ratio * n_ood:  # too many ID images
        keep = max(1, round(ratio * n_ood)) if n_ood else 0
        return np.sort(rng.choice(n_id, size=min(keep, n_id), replace=False)).astype(np.int64), all_ood
    keep = max(1, round(n_id / ratio)) if n_id else 0
    return all_id, np.sort(rng.choice(n_ood, size=min(keep, n_ood), replace=False)).astype(np.int64)


def phase_sets(phases: str, names: Sequence[str]) -> list[str]:
    """The OOD sets ``names`` in the order of the phase order ``phases`` (one of :data:`STREAM_PHASES`),
    each matched by its name (case aside; ``dtd`` is ``textures``); a phase without its set, or a set
    in no phase, is one line.

    Parameters
    ----------
    phases : str
        A phase order, one of :data:`STREAM_PHASES` (``"ptis"``, ...).
    names : sequence of str
        The OOD sets' names, one for each phase.

    Examples
    --------
    >>> phase_sets("ptis", ["iNaturalist", "SUN", "Places", "dtd"])
    ['Places', 'dtd', 'iNaturalist', 'SUN']
    """
    if not isinstance(phases, str) or phases not in STREAM_PHASES:
        raise InputError(f"unknown stream phases {phases!r}; choose one of {', '.join(STREAM_PHASES)}", param="phases")
    by_set: dict[str, str] = {}
    for name in names:
        key = str(name).lower()
        by_set[_SET_ALIASES.get(key, key)] = name
    want = [PHASE_SETS[letter] for letter in phases]
    missing, extra = [w for w in want if w not in by_set], sorted(set(by_set) - set(want))
    if missing or extra:
        raise InputError(
            f"stream phases {phases!r} run the OOD sets {', '.join(want)}, one phase each; "
            f"got {', '.join(map(str, names))}" + (f" (missing {', '.join(missing)})" if missing else ""),
            param="phases",
        )
    return [by_set[w] for w in want]


#: the stream settings a grid's test-time method (or any caller of :func:`stream_settings`) gets by default
STREAM_DEFAULTS: dict[str, Any] = {"order": "shuffled", "stream_batch": 256, "seed": 0, "id_ood_ratio": None}


def stream_settings(settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Stream settings (``order``, ``stream_batch``, ``seed``, ``id_ood_ratio``) checked, the defaults of
    :data:`STREAM_DEFAULTS` (256: AdaNeg's batch) filling the rest; an unknown key is one line. The old
    key ``batch_size`` is read as ``stream_batch`` for one release (a DeprecationWarning).

    Parameters
    ----------
    settings : mapping, optional
        Some of ``order``, ``stream_batch``, ``seed``, ``id_ood_ratio``.
    """
    settings = rename_keys(settings or {}, {"batch_size": "stream_batch"}, "stream settings")
    unknown = sorted(set(settings) - set(STREAM_DEFAULTS))
    if unknown:
        raise InputError(f"unknown stream setting(s) {', '.join(unknown)}; allowed: {', '.join(STREAM_DEFAULTS)}")
    full = {**STREAM_DEFAULTS, **settings}
    full["stream_batch"], full["order"], full["seed"] = check_stream(
        stream_batch=full["stream_batch"], order=full["order"], seed=full["seed"]
    )
    if full["id_ood_ratio"] is not None:
        full["id_ood_ratio"] = check_ratio(full["id_ood_ratio"])
    return full


def check_ratio(ratio: Any) -> float:
    """An ID:OOD ratio if allowed (a finite number > 0), else one-line :class:`InputError`."""
    ok = isinstance(ratio, numbers.Real) and not isinstance(ratio, bool) and math.isfinite(ratio) and float(ratio) > 0
    if not ok:
        raise InputError(
            f"id_ood_ratio must be a number > 0 (ID images per OOD image), got {ratio!r}", param="id_ood_ratio"
        )
    return float(ratio)


class StreamMethod:
    """A test-time method: set up on the ID side, then fed the test stream batch by batch.

    A subclass takes its parameters as keywords in ``__init__`` (``make_stream`` passes the
    registry's defaults for those not given), names any set-up inputs beside the embeddings in
    ``inputs``, and implements two hooks:

    - :meth:`init_state`: the state before the first batch (called by :meth:`reset`; :meth:`setup`
      resets). It may read ``self.id_emb``, ``self.neg_emb``, ``self.id_images``, ``self.extra``.
    - :meth:`step`: scores one batch (float64 per image, high = ID) from the state, and updates the
      state with the batch (in the order the method defines; never with later batches).

    Arrays are kept as given (numpy or torch, on their device): a method computes where it likes.

    Parameters
    ----------
    **params
        The method's parameters, kept in ``self.params``.
    """

    #: names of the set-up inputs beside ``id_emb``, ``neg_emb`` and ``id_images`` (TANL: "noise_images")
    inputs: ClassVar[tuple[str, ...]] = ()
    #: whether a score depends on the batches before it (a batch method's detector: False)
    stateful: ClassVar[bool] = True

    def __init__(self, **params: ParamValue) -> None:
        self.params: dict[str, Any] = dict(params)
        self.name: str = type(self).__name__
        self.needs_negatives: bool = False
        self.id_emb: Any = None
        self.neg_emb: Any = None
        self.id_images: Any = None
        self.extra: dict[str, Any] = {}
        self.n_seen = 0
        self.n_batches = 0
        self._ready = False

    # -- the public protocol ------------------------------------------------------------------
    def setup(
        self,
        id_emb: Embeddings,
        neg_emb: Embeddings | None = None,
        *,
        id_images: Embeddings | None = None,
        **inputs: Any,
    ) -> Self:
        """Set up on the ID side (no test image): class prompt embeddings (K, d), negatives (M, d),
        optional few-shot ID image features (n, d) and the inputs the class names; then :meth:`reset`.
        Returns ``self``."""
        id_emb = _rows(id_emb, "id_emb")
        dim = id_emb.shape[1]
        if neg_emb is None and self.needs_negatives:
            raise InputError(f"{self.name} needs negative label embeddings (neg_emb)")
        unknown = sorted(set(inputs) - set(self.inputs))
        if unknown:
            raise InputError(
                f"{self.name}: unexpected set-up input(s) {', '.join(unknown)}; "
                f"accepted: {', '.join(self.inputs) or 'none'}"
            )
        missing = [k for k in self.inputs if inputs.get(k) is None]
        if missing:
            raise InputError(f"{self.name} needs the set-up input(s) {', '.join(missing)}")
        self.id_emb = id_emb
        self.neg_emb = None if neg_emb is None else _rows(neg_emb, "neg_emb", dim)
        self.id_images = None if id_images is None else _rows(id_images, "id_images", dim)
        self.extra = {k: self.check_input(k, v, dim) for k, v in inputs.items()}
        self._ready = True
        self._forget_setup()
        self.reset()
        return self

    def _forget_setup(self) -> None:
        """Drop what a method derived from an earlier set-up (called by :meth:`setup` before :meth:`reset`);
        a method that keeps set-up work across resets overrides it."""

    def reset(self) -> None:
        """Forget every test image (the state after :meth:`setup`); :func:`run_stream` calls it first."""
        self._need_setup()
        self.n_seen = 0
        self.n_batches = 0
        self.init_state()

    def score_batch(self, image_emb: Embeddings, **batch_inputs: Any) -> np.ndarray:
        """Score the next batch of the stream (n, d) with what the method has seen, then keep it in the
        state. ``batch_inputs``: per-image inputs that come with the batch (GL-MCM's patch features
        ``local``), passed to :meth:`step`. Returns float64 (n,), high = ID."""
        self._need_setup()
        batch = _rows(image_emb, "image_emb", self.id_emb.shape[1])
        n = batch.shape[0]
        out = self.step(batch, **batch_inputs) if batch_inputs else self.step(batch)
        if hasattr(out, "detach"):  # a torch tensor, anywhere
            out = out.detach().cpu().double().numpy()
        scores = np.asarray(out, dtype=np.float64)
        if scores.shape != (n,):
            raise InputError(
                f"{self.name}.step returned shape {scores.shape} for a batch of {n} images; expected ({n},)"
            )
        self.n_seen += n
        self.n_batches += 1
        return scores

    def state_dict(self) -> dict[str, Any]:
        """A summary of the state (for logs and results): what was seen, and :meth:`summary`."""
        return {"method": self.name, "n_seen": self.n_seen, "n_batches": self.n_batches, **self.summary()}

    # -- the hooks a method implements ----------------------------------------------------------
    def check_input(self, name: str, value: object, dim: int) -> object:
        """A set-up input as the method keeps it: by default a 2-D array of ``dim`` columns."""
        return _rows(value, name, dim)

    def init_state(self) -> None:
        """Build the state before the first test batch (the set-up inputs are on ``self``)."""

    def step(self, image_emb: Embeddings) -> ArrayLike:
        """Score one batch from the state and update the state with it: (n,) scores, high = ID."""
        raise NotImplementedError(f"{type(self).__name__} must implement step(image_emb)")

    def summary(self) -> dict[str, Any]:
        """Extra entries of :meth:`state_dict` (sizes of memories, the current threshold, ...)."""
        return {}

    def _need_setup(self) -> None:
        if not self._ready:
            raise InputError(f"{self.name} is not set up: call setup(id_emb, neg_emb) before scoring a stream")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"


@dataclass(frozen=True)
class StreamResult:
    """Scores of one stream, aligned with the rows given to :func:`run_stream`.

    ``stream``: the order the rows were fed (position -> row); ``provenance``: ``order``,
    ``batch_size`` (the stream batch), ``seed`` (None for ``"given"``), ``n``, ``n_batches``, ``method``; ``state``: the
    method's :meth:`StreamMethod.state_dict` after the last batch.

    Parameters
    ----------
    scores : ndarray
        One score per row, in the rows' order.
    stream : ndarray
        The order the rows were fed (position -> row).
    provenance : dict
        ``order``, ``batch_size``, ``seed``, ``n``, ``n_batches``, ``method``.
    state : dict, default {}
        The method's state after the last batch.
    """

    scores: np.ndarray = field(repr=False)
    stream: np.ndarray = field(repr=False)
    provenance: dict[str, Any]
    state: dict[str, Any] = field(default_factory=dict)


@renamed_kwargs(batch_size="stream_batch")
def run_stream(
    method: StreamMethod,
    image_emb: Embeddings,
    *,
    stream_batch: int,
    order: str = "shuffled",
    seed: int = 0,
    n_id: int | None = None,
    reset: bool = True,
    progress: bool = False,
) -> StreamResult:
    """Feed ``image_emb`` (n, d) to a set-up ``method`` as one stream, from a fresh state.

    ``reset=False``: from the state the method holds instead, as a later phase of a temporal-shift
    stream goes on from the phase before (:func:`phase_sets`).

    The rows are permuted by :func:`stream_order` (``order``, ``seed``), cut into consecutive batches
    of ``stream_batch`` images and scored in that order with :meth:`StreamMethod.score_batch`; the scores come
    back in the original row order. ``n_id``: the first ``n_id`` rows are ID (the orders ``id_first``
    and ``ood_first`` need it). See the module docstring for the protocol. A long stream logs its
    images per second and ETA every 30 s (:mod:`negvocab.core.progress`); ``progress`` also draws a
    bar on a terminal.

    Parameters
    ----------
    method : StreamMethod
        A set-up stream method.
    image_emb : array or tensor, shape (n, d)
        The stream's images.
    stream_batch : int
        Images per stream batch.
    order : str, default "shuffled"
        The stream's order (:func:`stream_order`).
    seed : int, default 0
        Seed of the order.
    n_id : int, optional
        The first ``n_id`` rows are ID.
    reset : bool, default True
        Start from a fresh state; False goes on from the state the method holds.
    progress : bool, default False
        Draw a progress bar on a terminal.

    Examples
    --------
    >>> import numpy as np
    >>> class Count(StreamMethod):  # score = how many images came before this batch
    ...     def step(self, x):
    ...         return np.full(len(x), float(self.n_seen))
    >>> m = Count().setup(np.eye(2))
    >>> r = run_stream(m, np.eye(2)[[0, 1, 0, 1, 0]], stream_batch=2, order="given")
    >>> r.scores.tolist(), r.provenance["n_batches"]
    ([0.0, 0.0, 2.0, 2.0, 4.0], 3)
    """
    if not isinstance(method, StreamMethod):
        raise InputError(
            "run_stream takes a StreamMethod (make one with "
            f"negvocab.make_stream(name, **params)), got {type(method).__name__}"
        )
    stream_batch, order, seed = check_stream(stream_batch=stream_batch, order=order, seed=seed)
    x = _rows(image_emb, "image_emb")
    n = x.shape[0]
    perm = stream_order(n, order=order, seed=seed, n_id=n_id)
    if reset:
        method.reset()
    parts = []
    with Progress(n, f"{method.name} stream", "image", bar=progress) as bar:
        for i in range(0, n, stream_batch):
            parts.append(method.score_batch(x[perm[i : i + stream_batch]]))
            bar.update(len(parts[-1]))
    in_stream = np.concatenate(parts) if parts else np.zeros(0)
    scores = np.empty(n, dtype=np.float64)
    scores[perm] = in_stream  # stream position k holds row perm[k]
    provenance = {
        "method": method.name,
        "order": order,
        "batch_size": stream_batch,  # the record keeps its key (results files read it)
        "seed": None if order == "given" else seed,
        "n": n,
        "n_batches": len(parts),
    }
    if order in SPLIT_ORDERS:
        provenance["n_id"] = n_id
    if not reset:
        provenance["reset"] = False
    logger.info("%s: %d images in %d batches of %d (%s)", method.name, n, len(parts), stream_batch, order)
    return StreamResult(scores, perm, provenance, method.state_dict())


# ----------------------------------------------------------------------------------------------
# the registry
# ----------------------------------------------------------------------------------------------
C = TypeVar("C", bound=type)


@overload
def register_stream_method(
    name: str, cls_or_target: type[StreamMethod] | str, *, params: Sequence[Param | str] = (), **kw: Any
) -> Method: ...
@overload
def register_stream_method(name: str, *, params: Sequence[Param | str] = (), **kw: Any) -> Callable[[C], C]: ...
def register_stream_method(  # type: ignore[misc]  # the overloads' **kw stand for the keywords below
    name: str,
    cls_or_target: type[StreamMethod] | str | None = None,
    *,
    params: Sequence[Param | str] = (),
    needs_negatives: bool = False,
    paper: str = "",
    aliases: Sequence[str] = (),
    options: type | None = None,
    replace: bool = False,
) -> Method | Callable[[C], C]:
    """Register a test-time method: a :class:`StreamMethod` subclass, or its ``"pkg.module:Class"``
    (imported on first use), in the one method registry (``kind="stream"``). Given no class, it is a
    decorator that registers the class below it and returns it::

        @negvocab.register_stream_method("mine", params=[negvocab.Param("decay", float, 0.9, "...")])
        class Mine(negvocab.StreamMethod): ...

    ``params``: its parameters, each a :class:`~negvocab.scoring.methods.Param` (new names are added
    to the registry's parameters; a name already there must mean the same) or the name of one the
    registry has; or ``options``, a pydantic model whose fields are its parameters
    (:func:`negvocab.register_method`). Usable from a notebook or a plug-in module (``$NEGVOCAB_PLUGINS``). It is
    :func:`negvocab.register_method` with ``kind="stream"``: checked whole before anything is registered.

    Parameters
    ----------
    name : str
        The method's name.
    cls_or_target : type of StreamMethod or str, optional
        The class, or its ``"pkg.module:Class"`` target; not given: the decorator form.
    params : sequence of Param or str, default ()
        Its parameters.
    needs_negatives : bool, default False
        Whether it scores against negative label embeddings.
    paper : str, default ""
        The paper it comes from.
    aliases : sequence of str, default ()
        Other names of the method.
    options : type, optional
        A pydantic model whose fields are its parameters, instead of ``params``.
    replace : bool, default False
        Replace the method whose name or alias is taken instead of refusing it.
    """
    if cls_or_target is None:
        given = {"params": params, "needs_negatives": needs_negatives, "paper": paper, "aliases": aliases}
        return decorator(register_stream_method, name, {**given, "options": options, "replace": replace})
    if not isinstance(cls_or_target, str):
        _check_class(name, cls_or_target)
    return register_method(
        name,
        None,
        list(params),
        needs_negatives=needs_negatives,
        paper=paper,
        aliases=aliases,
        kind="stream",
        stream=cls_or_target,
        options=options,
        replace=replace,
    )


def _check_class(name: str, obj: object) -> type[StreamMethod]:
    if not (isinstance(obj, type) and issubclass(obj, StreamMethod)):
        raise InputError(f"stream method {name!r}: {obj!r} is not a StreamMethod subclass")
    return obj


def stream_class(method: str) -> type[StreamMethod]:
    """The :class:`StreamMethod` class of a registered stream method (a target is imported now)."""
    m = check_kind(method, "stream")
    target = m.stream
    obj = resolve_target(target, what=f"stream method {m.name!r}") if isinstance(target, str) else target
    return _check_class(m.name, obj)


def check_kind(method: str, kind: str) -> Method:
    """The registry entry of ``method`` if it is of ``kind`` ("batch" or "stream"), else one line."""
    m = get_method(method)
    if m.kind != kind:
        if kind == "stream":
            raise InputError(
                f"{m.name} is a batch method: score it with negvocab.score or evaluate_vocabularies; "
                f"stream methods: {', '.join(_names('stream')) or 'none registered'}"
            )
        raise InputError(
            f"{m.name} is a test-time (stream) method: run it with negvocab.run_stream or negvocab.evaluate_stream"
        )
    return m


def _names(kind: str) -> list[str]:
    return [n for n, m in METHODS.items() if m.kind == kind]


def make_stream(method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> StreamMethod:
    """A new instance of the stream method ``method`` with ``params`` (and keywords), each checked
    against the registry; the registry's defaults fill the rest. Call :meth:`StreamMethod.setup` next.

    Parameters
    ----------
    method : str
        A registered stream method (a name or an alias).
    params : mapping, optional
        The method's parameters.
    **kw
        More parameters, joined to ``params`` (they win on a clash).
    """
    m = check_kind(method, "stream")
    given = {**(params or {}), **kw}
    unknown = sorted(set(given) - set(m.params))
    if unknown:
        raise InputError(f"{m.name}: unexpected parameter(s) {', '.join(unknown)}; accepted: {', '.join(m.params)}")
    check_params(m.name, given)
    full = {p: PARAMS[p].default for p in m.params} | given
    obj = stream_class(m.name)(**full)
    obj.name, obj.needs_negatives = m.name, m.needs_negatives
    return obj
