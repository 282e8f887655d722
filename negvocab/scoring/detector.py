"""One detector protocol for every method: set up on the ID side, score batch by batch, reset between streams.

pytorch-ood's one ``Detector`` covers stateless and stateful detectors alike, and so does negvocab's:
a test-time method is a :class:`~negvocab.scoring.stream.StreamMethod` (its scores depend on the
batches before), and a batch method is the stateless case, a :class:`BatchDetector` (an image's score
depends on no other image, so any batching gives :func:`negvocab.score`'s scores, up to the last bits
that a matrix product of another shape may round differently). :func:`make_detector`
gives the detector of any registered method, so a pipeline or an adapter holds one object whatever the
method's kind::

    det = make_detector("neglabel", {"groups": 4}).setup(id_emb, neg_emb)
    det.score_batch(z)     # batch after batch (high = ID)
    det.reset()            # before another stream: a batch method has nothing to forget

Per-image inputs (GL-MCM's patch features ``local``) come with each batch, ``score_batch(z, local=p)``;
set-up inputs (NegRefine's ``pair_texts``, TANL's ``noise_images``) with :meth:`setup`, made by the
input registry (:mod:`negvocab.scoring.providers`) where a model is at hand.

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> unit = lambda a: a / np.linalg.norm(a, axis=1, keepdims=True)
>>> z, t, n = (unit(rng.normal(size=(k, 8))) for k in (6, 3, 12))
>>> det = make_detector("neglabel", {"groups": 2}).setup(t, n)
>>> both = np.concatenate([det.score_batch(z[:2]), det.score_batch(z[2:])])
>>> bool(np.allclose(both, score("neglabel", z, t, n, groups=2), rtol=0, atol=1e-12)), det.stateful
(True, False)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from negvocab.core.errors import InputError
from negvocab.core.types import ArrayLike, Embeddings, ParamValue
from negvocab.scoring.methods import RUN_PARAMS, check_params, get_method
from negvocab.scoring.providers import get_input
from negvocab.scoring.scores import TopkScores, score
from negvocab.scoring.stream import StreamMethod, make_stream

__all__ = ["BatchDetector", "Detector", "make_detector"]

#: the one detector protocol (``setup`` / ``score_batch`` / ``reset``, ``stateful``): a test-time
#: method is one; :class:`BatchDetector` makes a batch method one
Detector = StreamMethod


class BatchDetector(StreamMethod):
    """A batch method of the registry as a stateless detector: each batch scored by the method's kernel
    (:func:`negvocab.score`) against the set-up embeddings and inputs, nothing kept between batches.

    ``params``: the method's parameters as given (the kernel's defaults fill the rest, as for
    :func:`negvocab.score`); they are checked against the registry. With ``topk`` (a method with a top-k
    form), ``bounds`` holds the last batch's :class:`~negvocab.scoring.scores.TopkScores` (its certified
    bounds beside the scores).

    Parameters
    ----------
    method : str
        A registered batch method (a test-time method's detector comes from :func:`make_detector`).
    **params
        The method's parameters.
    """

    stateful: ClassVar[bool] = False

    def __init__(self, method: str, **params: ParamValue) -> None:
        entry = get_method(method)
        if entry.kind != "batch":
            raise InputError(f"{entry.name} is a {entry.kind} method; make its detector with make_detector")
        check_params(entry.name, params)
        super().__init__(**params)
        self.name, self.needs_negatives = entry.name, entry.needs_negatives
        self.inputs = tuple(i for i in entry.inputs if not get_input(i).per_image)  # type: ignore[misc]
        self.batch_inputs = tuple(i for i in entry.inputs if get_input(i).per_image)
        self.bounds: TopkScores | None = None

    def check_input(self, name: str, value: object, dim: int) -> object:
        """Set-up inputs of batch methods are what their kernels take (an embedder, arrays), as given."""
        return value

    def step(self, image_emb: Embeddings, **batch_inputs: Any) -> ArrayLike:
        missing = [i for i in self.batch_inputs if batch_inputs.get(i) is None]
        if missing:
            raise InputError(f"{self.name} needs the per-image input(s) {', '.join(missing)} with each batch")
        topk = self.params.get("topk") is not None
        out = score(
            self.name,
            image_emb,
            self.id_emb,
            self.neg_emb,
            **self.params,
            **self.extra,
            **batch_inputs,
            **({"return_bounds": True} if topk else {}),
        )
        if isinstance(out, TopkScores):
            self.bounds, out = out, out.scores
        return np.asarray(out, dtype=np.float64)


def make_detector(method: str, params: Mapping[str, Any] | None = None, **kw: Any) -> StreamMethod:
    """The detector of any registered method (a name or an alias) with ``params`` (and keywords), each
    checked against the registry: a test-time method's :class:`~negvocab.scoring.stream.StreamMethod`
    (its defaults from the registry, :func:`negvocab.make_stream`), or a batch method's
    :class:`BatchDetector`. Call ``setup(id_emb, neg_emb, **inputs)`` next.

    Parameters
    ----------
    method : str
        A registered method or an alias (``negvocab.list_methods()``).
    params : mapping, optional
        The method's parameters (and the run's: ``device``, ``chunk_size``, ...); unknown ones are refused.
    **kw
        More parameters, joined to ``params`` (they win on a clash).
    """
    entry = get_method(method)
    given = {**(params or {}), **kw}
    if entry.kind == "stream":
        return make_stream(entry.name, given)
    unknown = sorted(set(given) - set(entry.params) - set(RUN_PARAMS))
    if unknown:
        raise InputError(
            f"{entry.name}: unexpected parameter(s) {', '.join(unknown)}; accepted: {', '.join(entry.params)}"
        )
    return BatchDetector(entry.name, **given)
