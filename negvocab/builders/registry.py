"""The builder registry: every vocabulary builder by name, with its options as a pydantic model.

A :class:`Builder` says what a builder is: its build function (an object or a lazy
``"pkg.module:fn"`` target), its options (a pydantic model, so the API, the CLI and a grid's
``[vocabularies]`` table validate them alike), the ``source`` its vocabularies record, whether its
labels are ranked (the first M are the vocabulary of size M, so a sweep over M or a grid's ``sizes``
cut it), whether its vocabularies are deployable (the oracle's are not), what it needs (``"vlm"``:
a model to embed text; ``"llm"``: a chat endpoint; ``"images"``: images to look at) and its paper.

The built-in builders are registered here, lazily (:mod:`negvocab.builders.catalog` is imported on
first use); a plug-in adds one with :func:`register_builder`::

    class ToyOptions(negvocab.BuilderOptions):
        words: list[str] = Field(description="a list of labels")

    negvocab.register_builder("toy", "mypkg.toy:build", options=ToyOptions, source="toy", needs=("vlm",))
    vocab = negvocab.build_vocabulary("toy", vlm=vlm, words=["a", "b"])

``negvocab build toy`` (flags from the options' field names, help from their descriptions) and a
grid's ``[vocabularies] t = {builder = "toy", words = [...]}`` then work as for a built-in one.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, model_validator

from negvocab.builders import BUILTIN_BUILDERS
from negvocab.core.deprecation import rename_keys
from negvocab.core.errors import InputError
from negvocab.core.registry import Registry, check_now, decorator, resolve_lazy
from negvocab.vocab import Vocabulary, add_source, with_caveats

if TYPE_CHECKING:
    from negvocab.llm.cost import CostEstimate
    from negvocab.vlm.model import VLM

__all__ = [
    "NEEDS",
    "Builder",
    "BuilderOptions",
    "annotation_types",
    "build_vocabulary",
    "get_builder",
    "list_builders",
    "option_error",
    "register_builder",
    "unregister_builder",
]

#: what a builder may need: a VLM to embed text or images, a chat (LLM) endpoint, images to look at
NEEDS = ("vlm", "llm", "images")

F = TypeVar("F", bound=Callable[..., Any])  # a build function register_builder decorates
_DECORATE: Any = object()  # register_builder given no build function: a decorator


class BuilderOptions(BaseModel):
    """Base of a builder's options model: unknown options are refused, objects (an ``IdClasses``, an
    ``ImageSet``) are allowed as values. A field's ``description`` says what is allowed: it is the
    CLI flag's help and the end of the one-line error of a bad value.

    Parameters
    ----------
    **data
        The options, by field name (the subclass's fields); an old name in ``renamed`` is read as its
        new one.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, protected_namespaces=())

    #: renamed options, old -> new: the old key still works for one release (a DeprecationWarning)
    renamed: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: object) -> object:
        if cls.renamed and isinstance(data, Mapping):
            return rename_keys(data, cls.renamed, f"{cls.__name__}", stacklevel=6)
        return data


@dataclass(frozen=True)
class Builder:
    """One vocabulary builder (see the module docstring).

    Parameters
    ----------
    name : str
        The builder's name.
    build : callable or str
        The build function, or its ``"pkg.module:fn"`` target.
    options : type of BaseModel
        The pydantic model that validates its options.
    source : str
        What its vocabularies record in ``Vocabulary.source``.
    summary : str, default ""
        One line: what it builds (the CLI help).
    ranked : bool, default False
        Its labels are ranked: the first M are the vocabulary of size M.
    deployable : bool, default True
        False: built from what it is evaluated on (the oracle).
    needs : frozenset of str, default frozenset()
        Of ``"vlm"``, ``"llm"``, ``"images"``.
    paper : str, default ""
        The paper it comes from.
    examples : tuple of str, default ()
        CLI examples shown in its ``--help``.
    aliases : tuple of str, default ()
        Other names of the builder.
    texts : callable or str, optional
        Texts it embeds, given the options and the number of ID classes (``negvocab grid plan``).
    estimate : callable or str, optional
        The dry run of an LLM builder: called as the build function, returns what it would send.
    """

    name: str
    build: Callable[..., Vocabulary] | str  # the build function, or its "pkg.module:fn" target
    options: type[BaseModel]
    source: str  # what its vocabularies record in Vocabulary.source
    summary: str = ""  # one line: what it builds (the CLI help)
    ranked: bool = False  # its labels are ranked: the first M are the vocabulary of size M
    deployable: bool = True  # False: built from what it is evaluated on (the oracle)
    needs: frozenset[str] = frozenset()  # of NEEDS
    paper: str = ""
    examples: tuple[str, ...] = ()  # CLI examples shown in its --help
    aliases: tuple[str, ...] = ()
    texts: Callable[[BaseModel, int], int] | str | None = None  # texts it embeds (options, ID classes): grid plan
    #: the dry run of an LLM builder: called as the build function, returns what it would send
    #: (a :class:`~negvocab.llm.cost.CostEstimate`) and sends nothing; ``negvocab build NAME --dry-run``
    estimate: Callable[..., Any] | str | None = None

    def function(self) -> Callable[..., Vocabulary]:
        """The build function (a lazy target imported now)."""
        fn = resolve_lazy(self.build, what=f"builder {self.name!r}")
        if not callable(fn):
            raise InputError(f"builder {self.name!r}: its build function {self.build!r} is not callable")
        return fn

    def estimate_cost(self, *, vlm: VLM | None = None, **options: object) -> CostEstimate:
        """What building with ``options`` would send and cost (the builder's ``estimate``), nothing sent."""
        if self.estimate is None:
            raise InputError(f"builder {self.name!r} has no dry run (it sends no requests)")
        fn = resolve_lazy(self.estimate, what=f"builder {self.name!r} estimate")
        if not callable(fn):
            raise InputError(f"builder {self.name!r}: its estimate {self.estimate!r} is not callable")
        checked = self.validate(options)
        values = {k: getattr(checked, k) for k in type(checked).model_fields}
        out: CostEstimate = fn(vlm, **values) if "vlm" in self.needs else fn(**values)
        return out

    def count_texts(self, options: BaseModel, n_classes: int) -> int | None:
        """How many texts building with ``options`` embeds (its candidates), or None when it does not say."""
        if self.texts is None:
            return None
        fn = resolve_lazy(self.texts, what=f"builder {self.name!r} texts")
        return int(fn(options, n_classes))  # type: ignore[operator]

    def validate(
        self, options: Mapping[str, Any], *, strict: bool = False, key: Callable[[str], str] | None = None
    ) -> BaseModel:
        """``options`` checked by the options model; a bad one is one :class:`InputError` naming the option
        (as ``key`` spells it: a CLI flag, a grid key), its value and what is allowed."""
        try:
            return self.options.model_validate(dict(options), strict=strict)
        except ValidationError as e:
            raise InputError(option_error(self, e.errors()[0], key=key)) from None

    def accepts(self, option: str, value: object) -> bool:
        """Whether the option ``option`` takes ``value`` as it is (a grid offers its ``IdClasses``, or
        else the ID classes' file)."""
        info = self.options.model_fields.get(option)
        if info is None:
            return False
        try:
            TypeAdapter(info.annotation or Any).validate_python(value, strict=True)
        except (ValidationError, TypeError):
            return False
        return True

    def with_paths(self, options: Mapping[str, Any], base: str | Path = ".") -> dict[str, Any]:
        """``options`` as written in a file (a grid's table) with each string given for an option that
        takes a path made relative to ``base`` (the file's folder) when it is there; else as given
        (a preset name such as ``wordnet``, or a file planned on another machine)."""
        out = dict(options)
        for k, value in options.items():
            info = self.options.model_fields.get(k)
            kinds = annotation_types(info.annotation) if info is not None else []
            if not isinstance(value, str) or Path not in kinds:
                continue
            p = Path(value).expanduser()
            p = p if p.is_absolute() else Path(base) / p
            out[k] = p if p.exists() else value if str in kinds else Path(value)
        return out

    def run(self, *, vlm: VLM | None = None, **options: object) -> Vocabulary:
        """Validate ``options`` and build (``vlm`` first when the builder needs one); the vocabulary
        must record this builder's source."""
        if "vlm" in self.needs and vlm is None:
            raise InputError(f"builder {self.name!r} needs a VLM: pass vlm=negvocab.VLM(...)")
        if "vlm" not in self.needs and vlm is not None:
            raise InputError(f"builder {self.name!r} uses no VLM; leave vlm out")
        checked = self.validate(options)
        values = {k: getattr(checked, k) for k in type(checked).model_fields}
        fn = self.function()
        vocab = fn(vlm, **values) if "vlm" in self.needs else fn(**values)
        if not isinstance(vocab, Vocabulary):
            raise InputError(f"builder {self.name!r} returned {type(vocab).__name__}, not a negvocab.Vocabulary")
        if vocab.source != self.source:
            raise InputError(
                f"builder {self.name!r} made a vocabulary of source {vocab.source!r}; it must record its own, "
                f"{self.source!r} (Vocabulary.from_labels(..., source={self.source!r}))"
            )
        if not self.deployable and vocab.deployable:  # the registry's fact travels with the labels
            note = f"built by {self.name!r}, which its registry entry marks not deployable"
            vocab = vocab.subset(vocab.labels, settings=with_caveats(vocab.settings, {self.name: note}))
        return vocab


def option_error(
    builder: Builder,
    err: Mapping[str, Any],
    *,
    key: Callable[[str], str] | None = None,
    where: str | None = None,
    table: str = "",
) -> str:
    """One line for one pydantic error of ``builder``'s options: the option (as ``key`` spells it: a
    CLI flag, a grid key), its value and what is allowed. The line starts with ``where`` (default
    ``builder 'NAME': ``); a check of the options together (a model validator) names ``table``."""
    spell = key or (lambda name: name)
    where = f"builder {builder.name!r}: " if where is None else where
    loc = [str(p) for p in err.get("loc", ()) if not isinstance(p, int)]
    name = loc[0] if loc else ""
    fields = builder.options.model_fields
    info = fields.get(name)
    allowed = (info.description if info is not None else "") or "a valid value"
    if err["type"] == "extra_forbidden":
        return f"{where}{spell(name)}: unknown option; known: {', '.join(spell(f) for f in fields) or 'none'}"
    if err["type"] == "missing":
        return f"{where}{spell(name)} is missing: give {allowed}"
    if not name:  # a check of the options together (a model validator)
        return f"{where}{table}{str(err.get('msg', 'invalid options')).removeprefix('Value error, ')}"
    return f"{where}{spell(name)} = {_show(err.get('input'))}: must be {allowed}"


def _show(value: Any) -> str:
    text = repr(str(value) if isinstance(value, Path) else value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check(name: str, entry: object) -> Builder:
    if not isinstance(entry, Builder):
        raise InputError(f"builder {name!r}: expected a negvocab Builder, got {type(entry).__name__}")
    return entry


_BUILDERS: Registry[Builder] = Registry("builder", _check)


@overload
def register_builder(name: str, build: Callable[..., Vocabulary] | str, **kw: Any) -> Builder: ...
@overload
def register_builder(name: str, **kw: Any) -> Callable[[F], F]: ...
def register_builder(  # type: ignore[misc]  # the overloads' **kw stand for the keywords below
    name: str,
    build: Callable[..., Vocabulary] | str = _DECORATE,
    *,
    options: type[BaseModel],
    source: str | None = None,
    summary: str = "",
    ranked: bool = False,
    deployable: bool = True,
    needs: Iterable[str] = (),
    paper: str = "",
    examples: Iterable[str] = (),
    aliases: Iterable[str] = (),
    texts: Callable[[BaseModel, int], int] | str | None = None,
    estimate: Callable[..., Any] | str | None = None,
    replace: bool = False,
) -> Builder | Callable[[F], F]:
    """Register a builder (see the module docstring); ``source`` defaults to ``name``.

    ``build`` is called as ``build(vlm, **options)`` when ``needs`` holds ``"vlm"``, else
    ``build(**options)``, with every field of the validated ``options`` model; it returns a
    :class:`~negvocab.Vocabulary` whose ``source`` is ``source``. ``texts(options, n_classes)``
    (optional) says how many texts it embeds, for ``negvocab grid plan``; ``estimate`` (optional, an
    LLM builder's dry run) is called as ``build`` and returns what it would send and cost. A target
    outside negvocab is imported now, so a wrong one fails here.

    Given no ``build``, it is a decorator that registers the function below it and returns it::

        @negvocab.register_builder("toy", options=ToyOptions, needs=("vlm",))
        def build_toy(vlm, *, words): ...

    Parameters
    ----------
    name : str
        The builder's name.
    build : callable or str
        The build function, or its ``"pkg.module:fn"`` target; not given: the decorator form.
    options : type of BaseModel
        The pydantic model that validates its options.
    source : str, optional
        What its vocabularies record in ``Vocabulary.source`` (default ``name``).
    summary, ranked, deployable, needs, paper, examples, aliases, texts, estimate
        The :class:`Builder` fields of those names (``needs``, ``examples`` and ``aliases`` as any
        iterable of str): its help line, whether its labels are ranked, whether it is deployable,
        what it needs, its paper, CLI examples, other names, ``texts(options, n_classes)`` and an LLM
        builder's dry run.
    replace : bool, default False
        Replace the builder whose name or alias is taken instead of refusing it.
    """
    if build is _DECORATE:
        return decorator(register_builder, name, {k: v for k, v in locals().items() if k not in ("name", "build")})
    if not (isinstance(options, type) and issubclass(options, BaseModel)):
        raise InputError(f"builder {name!r}: options must be a pydantic model class, got {options!r}")
    if not (isinstance(build, str) or callable(build)):
        raise InputError(f"builder {name!r}: build must be a function or a 'package.module:function' target")
    wanted = frozenset(needs)
    if wanted - set(NEEDS):
        raise InputError(
            f"builder {name!r}: needs {sorted(wanted - set(NEEDS))} unknown; choose from {', '.join(NEEDS)}"
        )
    if "vlm" in wanted and "vlm" in options.model_fields:
        raise InputError(f"builder {name!r}: 'vlm' is passed apart, not as an option")
    for part, ref in (("", build), (" texts", texts), (" estimate", estimate)):
        check_now(ref, what=f"builder {name.strip().lower()!r}{part}")
    entry = Builder(
        name=name.strip().lower(),
        build=build,
        options=options,
        source=source or name.strip().lower(),
        summary=summary or (inspect.getdoc(options) or "").split("\n")[0],
        ranked=ranked,
        deployable=deployable,
        needs=wanted,
        paper=paper,
        examples=tuple(examples),
        aliases=tuple(aliases),
        texts=texts,
        estimate=estimate,
    )
    add_source(entry.source)  # the vocabulary layer accepts what the registry holds
    _BUILDERS.register(entry.name, entry, aliases=entry.aliases, replace=replace)
    return entry


def unregister_builder(name: str) -> None:
    """Remove a registered builder (tests, a notebook re-defining one); its source stays readable."""
    _BUILDERS.unregister(name)


def get_builder(name: str) -> Builder:
    """The builder registered as ``name`` (case-insensitive, aliases accepted) or one-line :class:`InputError`.

    A name not registered yet first loads the plug-ins (``$NEGVOCAB_PLUGINS``, the ``negvocab.core.plugins``
    entry points; each once), as in every registry, so a plug-in's builder is found from Python as from the CLI.

    Parameters
    ----------
    name : str
        A builder's name or alias.
    """
    return _BUILDERS.get(name)


def list_builders() -> list[str]:
    """The registered builders' names, built-ins first, in registration order."""
    return _BUILDERS.names()


def build_vocabulary(name: str, *, vlm: VLM | None = None, **options: object) -> Vocabulary:
    """Build a vocabulary with the builder ``name``: ``options`` are validated by its options model
    (one line naming the option on a bad one), before any model work, then the builder runs.

    Parameters
    ----------
    name : str
        A registered builder (``wordnet``, ``gpt``, ``oracle``, ..., or a plug-in's).
    vlm : VLM, optional
        The model, for the builders that encode text or images.
    **options
        The builder's options, validated by its options model.

    Examples
    --------
    >>> import negvocab
    >>> negvocab.build_vocabulary("oracle", labels=["fungus", "moss"], synonym_filter=False).labels
    ['fungus', 'moss']
    """
    return get_builder(name).run(vlm=vlm, **options)


def annotation_types(annotation: Any) -> list[Any]:
    """The members of a (possibly optional, possibly union) annotation, ``None`` left out."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for t in typing.get_args(annotation) if t is not type(None)]
    return [annotation]


# the built-ins, lazily: negvocab.builders.catalog holds their options models and calls
for _name in BUILTIN_BUILDERS:
    _BUILDERS.register(_name, f"negvocab.builders.catalog:{_name.upper()}")
