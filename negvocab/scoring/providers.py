"""Method inputs beside the embeddings: one registry of what a method may declare and who supplies it.

A method's entry names its extra inputs (``Method.inputs``; a test-time method's class names them in
``StreamMethod.inputs``). Each name is an :class:`InputProvider` here, so evaluation, grids and the
adapters ask one place what an input is and how to make it, instead of testing names:

- ``per_image`` inputs come with every image batch (GL-MCM's patch features ``local``: the images are
  encoded with ``local_features=True``, :func:`image_inputs`);
- set-up inputs are made once, on the ID side, from an :class:`InputContext` (the model, templates, ID
  class names, negative labels and the method's parameters) by the provider's ``make``:
  NegRefine's pair texts, TANL's noise-image features (:func:`setup_inputs`).

A plug-in declares its own input with :func:`register_input` (a maker, or none: the caller then passes
the input itself). Makers are lazy ``"pkg.module:function"`` targets where they need the model, so
reading this registry imports no torch.

>>> get_input("local").per_image, get_input("pair_texts").per_image
(True, False)
>>> image_inputs(("local", "pair_texts"))
['local']
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import InputError
from negvocab.core.registry import Registry, check_now, resolve_callable

if TYPE_CHECKING:
    from negvocab.vlm.model import VLM
    from negvocab.vlm.templates import TemplateSet

__all__ = [
    "INPUT_PROVIDERS",
    "InputContext",
    "InputProvider",
    "get_input",
    "image_inputs",
    "list_inputs",
    "register_input",
    "setup_inputs",
    "unmade_inputs",
]


@dataclass(frozen=True)
class InputContext:
    """What a set-up maker may use: the model (a :class:`negvocab.VLM`), the prompt templates, the ID
    class names, the negative labels (None for a method without negatives) and the method's parameters.

    Parameters
    ----------
    vlm : VLM or None
        The model.
    templates : str, sequence of str or TemplateSet, default "paper8"
        The prompt templates.
    id_names : sequence of str, default ()
        The ID class names.
    neg_labels : sequence of str, optional
        The negative labels (None for a method without negatives).
    params : mapping, default {}
        The method's parameters.
    """

    vlm: VLM | None
    templates: str | Sequence[str] | TemplateSet = "paper8"
    id_names: Sequence[str] = ()
    neg_labels: Sequence[str] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)


Maker = Callable[[InputContext], Any]


@dataclass(frozen=True)
class InputProvider:
    """One input a method may declare: its name, what it is, whether it comes with each image batch
    (``per_image``) or once at set-up, and the set-up maker (a callable or a lazy target; None: the
    caller passes it).

    Parameters
    ----------
    name : str
        The input's name.
    doc : str
        What it is.
    per_image : bool, default False
        Given with each image batch, instead of once at set-up.
    make : callable or str, optional
        The set-up maker, or its ``"pkg.module:function"`` target (None: the caller passes it).
    """

    name: str
    doc: str
    per_image: bool = False
    make: Maker | str | None = None

    def maker(self) -> Maker | None:
        """The set-up maker, imported now where it is a target."""
        if self.make is None or callable(self.make):
            return self.make
        return resolve_callable(self.make, what=f"method input {self.name!r}")


def _check(name: str, entry: object) -> InputProvider:
    if not isinstance(entry, InputProvider):
        raise InputError(f"method input {name!r}: expected an InputProvider, got {type(entry).__name__}")
    return entry


#: every input a method may declare (built-ins below; plug-ins through :func:`register_input`)
INPUT_PROVIDERS: Registry[InputProvider] = Registry("method input", _check)


def register_input(
    name: str, doc: str, *, per_image: bool = False, make: Maker | str | None = None, replace: bool = False
) -> InputProvider:
    """Declare a method input: ``per_image`` (given with each batch) or a set-up input made by ``make``
    (``make(context: InputContext)``, a callable or ``"pkg.module:function"``, checked now where it is not
    negvocab's own; None: the caller passes it). A per-image input has no set-up maker. A taken name is
    :class:`InputError` unless ``replace``.

    Parameters
    ----------
    name, doc, per_image, make
        The :class:`InputProvider` fields of those names: the input's name, what it is, whether it comes
        with each batch, and the set-up maker.
    replace : bool, default False
        Replace an input of the same name instead of refusing it.
    """
    if per_image and make is not None:
        raise InputError(f"method input {name!r}: a per-image input comes with the images; it has no set-up maker")
    if make is not None and not callable(make):
        check_now(make, what=f"method input {name!r}: make")  # a plug-in's target is imported and checked now
    entry = InputProvider(str(name).strip().lower(), str(doc), bool(per_image), make)
    INPUT_PROVIDERS.register(entry.name, entry, replace=replace)
    return entry


def get_input(name: str) -> InputProvider:
    """The provider of input ``name``, or one line listing the declared inputs."""
    return INPUT_PROVIDERS.get(name)


def list_inputs() -> list[str]:
    """The declared input names, built-ins first."""
    return INPUT_PROVIDERS.names()


def image_inputs(inputs: Iterable[str]) -> list[str]:
    """Those of ``inputs`` that come with every image batch (the images are encoded to make them)."""
    return [n for n in inputs if get_input(n).per_image]


def unmade_inputs(inputs: Iterable[str]) -> list[str]:
    """Those set-up inputs of ``inputs`` that no maker makes (a caller must pass them)."""
    return [n for n in inputs if not get_input(n).per_image and get_input(n).make is None]


def setup_inputs(
    inputs: Iterable[str], context: InputContext | None, given: Mapping[str, Any] | None = None, *, method: str = ""
) -> dict[str, Any]:
    """The set-up inputs of a method that declares ``inputs``: ``given`` first, the rest made from
    ``context`` by their makers (without a context, ``given`` alone). An input that is neither given
    nor made is one line naming it. A maker that returns None (NegRefine's pairs without negatives)
    leaves the input out."""
    out = {k: v for k, v in (given or {}).items() if v is not None}
    wanted = [n for n in inputs if not get_input(n).per_image and n not in out]
    if context is None or not wanted:
        return out
    lacking = unmade_inputs(wanted)
    if lacking:
        who = f"{method} needs" if method else "needs"
        raise InputError(f"{who} the set-up input(s) {', '.join(lacking)}: pass them (setup_inputs=)")
    for n in wanted:
        value = get_input(n).maker()(context)  # type: ignore[misc]  # unmade_inputs checked it
        if value is not None:
            out[n] = value
    return out


register_input("local", "GL-MCM's patch features: the image set is embedded with local_features=True", per_image=True)
register_input(
    "pair_texts",
    "NegRefine's '<ID class> and <negative>' texts: an embedder (ID indices, negative indices) -> embeddings, "
    "made from the run's model, templates, ID names and vocabulary (negvocab.PairTexts)",
    make="negvocab.vlm.pairs:pair_texts",
)
register_input(
    "noise_images",
    "TANL's 15 noise images, encoded by the model as TANL's code encodes them (seeded by the method's seed)",
    make="negvocab.scoring.tanl:noise_images_input",
)
register_input(
    "ants_provider",
    "ANTS's source of new negatives: captions of stream images and labels like ID classes, encoded "
    "(negvocab.scoring.ants.ANTSProvider; a multimodal LLM through negvocab.LLMNegatives, or recorded answers)",
)
