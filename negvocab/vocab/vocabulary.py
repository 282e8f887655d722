"""Vocabularies: ordered negative labels with provenance, stored as versioned JSON.

A :class:`Vocabulary` is what every builder returns and every scorer takes. It keeps

- ``labels``: the label strings in order (for WordNet vocabularies the farthest-first ranking, so
  the vocabulary of size M is the first M labels);
- ``source``: which builder made it (``wordnet``, ``gpt``, ``eoe``, ``oracle``, ``siblings``, ``mined``, a
  registered builder's source) or how it was derived (``union``, ``file``); one of :func:`known_sources`;
- ``meta``: per-label provenance, ``label -> dict`` (GPT: the classes and rounds that proposed it;
  WordNet: rank and distance; union: the sources it came from and each source's metadata);
- ``settings``: the builder's settings (model, templates, size, seed, prompt hash, ...);
- ``views``: optional named sub-lists, e.g. the per-class view of a GPT vocabulary;
- ``sha256``: a hash of the labels, checked on load, so a hand-edited or truncated file is caught
  (a file whose labels were only removed by hand is accepted when its metadata proves it: see
  :meth:`Vocabulary.load`).

Deployability: ``settings["caveats"]`` maps a kind (``"oracle"``: built from the benchmark's own OOD
labels; ``"transductive"``: mined from images overlapping the evaluated OOD set) to a one-line note.
:attr:`Vocabulary.caveats` also reads older files (``oracle: true``) and the parts of a union, and every
derived vocabulary (union, subset, head, filter, drop, hand removal) keeps them, so a number scored
with such labels is marked wherever it is shown (:attr:`Vocabulary.deployable` is False).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from negvocab.core.atomic import write_json, write_text
from negvocab.core.errors import InputError
from negvocab.core.plugins import load_plugins
from negvocab.core.provenance import file_sha256, record
from negvocab.core.textfiles import read_text
from negvocab.labels.clean import CleanResult, clean_labels_report, written_plainly
from negvocab.vocab.caveats import CAVEAT_LINE, ORACLE_CAVEAT, caveats_of, random_weights_of, with_caveats
from negvocab.vocab.label_files import candidate_rows, candidates_from_rows
from negvocab.vocab.sources import SOURCES, Source, add_source, known_sources

__all__ = [
    "CAVEAT_LINE",
    "MAX_LABEL_CHARS",
    "MAX_PROVENANCE",
    "ORACLE_CAVEAT",
    "SCHEMA_VERSION",
    "SOURCES",
    "Source",
    "VERBATIM_LINE",
    "Vocabulary",
    "add_source",
    "known_sources",
    "label_problem",
    "labels_hash",
    "with_caveats",
]

logger = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1
MAX_LABEL_CHARS = 200  # a class name, not a paragraph: longer is a broken file or a pasted answer
#: the first line of a .txt vocabulary file negvocab writes: its labels are read back verbatim (not cleaned)
VERBATIM_LINE = "# negvocab vocabulary: one label a line, read back as written"
MAX_PROVENANCE = 20  # records of earlier writes kept in a file's settings["provenance"]


def labels_hash(labels: Iterable[str]) -> str:
    """SHA-256 of the labels in order (JSON-encoded list): the vocabulary's identity."""
    payload = json.dumps(list(labels), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Vocabulary(BaseModel):
    """An ordered list of unique, non-empty negative labels with provenance.

    Build one with :meth:`from_labels`; the hash is computed for you. Constructing from a dict
    that carries ``sha256`` (as :meth:`load` does) verifies it.

    Parameters
    ----------
    schema_version : 1, default 1
        The file format's version.
    source : str
        Which builder made it, or how it was derived; one of :func:`known_sources`.
    labels : list of str
        The labels in order: non-empty, unique, each a label (:func:`label_problem`).
    meta : dict, default {}
        Per-label provenance, ``label -> dict``; only labels of the vocabulary.
    settings : dict, default {}
        The builder's settings.
    views : dict, default {}
        Named sub-lists of the labels.
    sha256 : str, default ""
        The labels' hash: computed when empty, checked against the labels when given.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SCHEMA_VERSION
    source: Source
    labels: list[str]
    meta: dict[str, dict[str, Any]] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    views: dict[str, list[str]] = Field(default_factory=dict)
    sha256: str = ""

    @model_validator(mode="after")
    def _check(self) -> Vocabulary:
        if not self.labels:
            raise ValueError("the vocabulary has no labels")
        seen: set[str] = set()
        for label in self.labels:
            problem = label_problem(label)
            if problem:
                raise ValueError(f"label {len(seen) + 1} {problem}")
            if label in seen:
                raise ValueError(f"duplicate label {_shown(label)}")
            seen.add(label)
        unknown = set(self.meta) - seen
        if unknown:
            raise ValueError(f"metadata for labels not in the vocabulary: {sorted(unknown)[:3]}")
        digest = labels_hash(self.labels)
        if self.sha256 and self.sha256 != digest:
            raise ValueError(
                f"sha256 {self.sha256[:12]}... does not match the labels (expected {digest[:12]}...); "
                "edited by hand? save the labels as a .txt list, one a line, and load that"
            )
        object.__setattr__(self, "sha256", digest)
        return self

    @field_validator("source")
    @classmethod
    def _known_source(cls, v: str) -> str:
        if v not in known_sources():
            load_plugins()  # a plug-in's builder adds its source when it registers
        if v not in known_sources():
            raise ValueError(
                f"unknown source {v!r}; known: {', '.join(known_sources())} (a builder of a plug-in adds its own "
                "source when its plug-in is loaded: $NEGVOCAB_PLUGINS)"
            )
        return v

    @classmethod
    def from_labels(
        cls,
        labels: Iterable[str],
        *,
        source: Source,
        meta: Mapping[str, Mapping[str, Any]] | None = None,
        settings: Mapping[str, Any] | None = None,
        views: Mapping[str, Iterable[str]] | None = None,
    ) -> Vocabulary:
        """Make a vocabulary; raises :class:`InputError` if it is empty, has duplicates or a label
        that is not one (see :func:`label_problem`). Surrounding whitespace is removed from every
        label (in ``meta`` and ``views`` too), so ``"a"`` and ``"a "`` are the same label."""
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise InputError(
                f"invalid {source} vocabulary: labels must be a list of strings, got {type(labels).__name__}"
            )
        try:
            return cls(
                source=source,
                labels=[_strip(x) for x in labels],
                meta={_strip(k): dict(v) for k, v in (meta or {}).items()},
                settings=dict(settings or {}),
                views={k: [_strip(x) for x in v] for k, v in (views or {}).items()},
            )
        except ValidationError as e:
            raise InputError(f"invalid {source} vocabulary: {_first_error(e)}") from e

    def __eq__(self, other: object) -> bool:
        """Same labels, source, metadata, views and settings; ``settings["provenance"]`` (who wrote
        the file, when) is not part of what a vocabulary is."""
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self.sha256)

    def _identity(self) -> dict[str, Any]:
        doc = self.model_dump()
        doc["settings"] = {k: v for k, v in doc["settings"].items() if k != "provenance"}
        return doc

    # -- sequence behaviour ------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.labels)

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]
        return iter(self.labels)

    def __contains__(self, label: object) -> bool:
        return label in self._label_set()

    def _label_set(self) -> frozenset[str]:
        cached = self.__dict__.get("_set")
        if cached is None:
            cached = frozenset(self.labels)
            self.__dict__["_set"] = cached
        return cached

    @property
    def short_hash(self) -> str:
        """First 12 hex digits of :attr:`sha256`, for file names and tables."""
        return self.sha256[:12]

    def parts_of_speech(self, labels: Sequence[str] | None = None) -> list[str | None]:
        """Each label's part of speech ("n", "a") where its builder recorded one, else None (of
        ``labels`` only, when given: a few of a large vocabulary).

        Template presets that depend on it (``"neglabel"``) take this as ``pos``. In a union, the
        first source (in ``sources`` order) that recorded one gives it.
        """
        return [self._pos(self.meta.get(label, {})) for label in (self.labels if labels is None else labels)]

    @staticmethod
    def _pos(entry: dict[str, Any]) -> str | None:
        if entry.get("pos") is not None:
            return entry["pos"]
        for src in entry.get("sources", []):
            part = entry.get(src)
            if isinstance(part, dict) and part.get("pos") is not None:
                return part["pos"]
        return None

    @property
    def random_weights(self) -> bool:
        """Whether a model with RANDOM weights built this vocabulary or any part of a union."""
        return random_weights_of(self.settings)

    @property
    def caveats(self) -> dict[str, str]:
        """Why numbers scored with this vocabulary are not those of a deployable detector: kind -> note.

        Read from ``settings["caveats"]``, the older ``oracle: true`` flag, an ``oracle`` source, and
        (for a union) every part and every label's sources; empty for a deployable vocabulary.
        """
        found = caveats_of(self.settings, self.source)
        if (
            self.source == "union"
            and "oracle" not in found
            and any("oracle" in self.label_sources(x) for x in self.labels)
        ):
            found["oracle"] = ORACLE_CAVEAT
        return found

    @property
    def deployable(self) -> bool:
        """False when any label came from a non-deployable source (oracle, transductive, ...)."""
        return not self.caveats

    def label_sources(self, label: str) -> list[str]:
        """The builder sources that contributed ``label`` (one, unless this is a union)."""
        if self.source == "union":
            return list(self.meta.get(label, {}).get("sources", []))
        return [self.source]

    def source_counts(self) -> dict[str, int]:
        """How many labels each builder source contributed (a label may count for several)."""
        counts: dict[str, int] = {}
        for label in self.labels:
            for src in self.label_sources(label):
                counts[src] = counts.get(src, 0) + 1
        return counts

    # -- derived vocabularies -----------------------------------------------------------------
    def subset(self, labels: Iterable[str], *, settings: Mapping[str, Any] | None = None) -> Vocabulary:
        """The vocabulary restricted to ``labels`` (kept in this vocabulary's order)."""
        keep = set(labels)
        kept = [lab for lab in self.labels if lab in keep]
        return Vocabulary.from_labels(
            kept,
            source=self.source,
            meta={lab: self.meta[lab] for lab in kept if lab in self.meta},
            settings=with_caveats({**self.settings, **(settings or {})}, self.caveats),
            views={name: [lab for lab in view if lab in keep] for name, view in self.views.items()},
        )

    def head(self, size: int) -> Vocabulary:
        """The first ``size`` labels: the pool of size M of a ranked (WordNet) vocabulary."""
        if size < 1:
            raise InputError(f"vocabulary size must be >= 1, got {size}")
        if size > len(self.labels):
            raise InputError(f"asked for the first {size} labels of a vocabulary of {len(self.labels)}")
        return self.subset(self.labels[:size], settings={"size": size})

    def drop(self, labels: Iterable[str], *, reason: str = "dropped") -> Vocabulary:
        """This vocabulary without ``labels``; the settings record what was removed (``settings["dropped"]``).

        Labels not in the vocabulary are ignored (:meth:`subset` and ``len`` tell how many went).
        Raises :class:`InputError` when nothing would be left.
        """
        gone = [lab for lab in dict.fromkeys(labels) if lab in self]
        if len(gone) == len(self.labels):
            raise InputError(f"dropping {len(gone)} labels would leave the vocabulary empty")
        record = {"reason": reason, "count": len(gone), "labels": gone, "from_sha256": self.sha256}
        earlier = self.settings.get("dropped")
        history = [*(earlier if isinstance(earlier, list) else [earlier] if earlier else []), record]
        drop_set = set(gone)
        return self.subset([x for x in self.labels if x not in drop_set], settings={"dropped": history})

    @staticmethod
    def union(*vocabs: Vocabulary) -> Vocabulary:
        """Labels of all ``vocabs`` in order of first occurrence, with merged provenance.

        Each label's metadata becomes ``{"sources": [...], "<source>": <that source's meta>}``;
        the settings keep each input's hash, source and settings.
        """
        if not vocabs:
            raise InputError("union needs at least one vocabulary")
        labels: list[str] = []
        meta: dict[str, dict[str, Any]] = {}
        for vocab in vocabs:
            for label in vocab.labels:
                entry = meta.get(label)
                if entry is None:
                    labels.append(label)
                    entry = meta[label] = {"sources": []}
                for src in vocab.label_sources(label):
                    if src not in entry["sources"]:
                        entry["sources"].append(src)
                if vocab.source == "union":
                    for key, value in vocab.meta.get(label, {}).items():
                        if key != "sources":
                            entry.setdefault(key, value)
                elif label in vocab.meta:
                    entry.setdefault(vocab.source, vocab.meta[label])
        parts = [{"source": v.source, "sha256": v.sha256, "size": len(v), "settings": v.settings} for v in vocabs]
        settings: dict[str, Any] = {"parts": parts}
        if any(v.random_weights for v in vocabs):
            settings["random_weights"] = True  # said at the top, not only deep in a part
        caveats: dict[str, str] = {}
        for v in vocabs:
            for kind, note in v.caveats.items():
                caveats.setdefault(kind, note)
        settings = with_caveats(settings, caveats)  # at the top too: a union of oracle labels is an oracle
        return Vocabulary.from_labels(labels, source="union", meta=meta, settings=settings)

    # -- files ----------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The JSON document :meth:`save` writes."""
        return self.model_dump(mode="json")

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the vocabulary as JSON (atomically); a ``.txt`` path writes one label a line.

        The JSON file's ``settings["provenance"]`` gains a record of this write (versions, command
        line, time; :func:`negvocab.core.provenance.record`). A text file keeps the caveats as
        ``# not deployable: KIND: NOTE`` lines, which :meth:`load` reads back, and starts with
        :data:`VERBATIM_LINE` when cleaning would change a label ("'hood", "Trout"), so its labels read
        back exactly, never cleaned as a hand-written list is.
        """
        path = Path(path)
        if path.suffix == ".txt":
            for label in self.labels:  # a text file must read back as the same labels
                if label != label.strip() or label.startswith("#") or len(label.splitlines()) != 1:
                    raise InputError(f"{path}: label {label!r} would not read back from a text file; save as .json")
            verbatim = f"{VERBATIM_LINE}\n" if _clean_on_load(self.labels) != self.labels else ""
            header = verbatim + "".join(
                f"{CAVEAT_LINE}{kind}: {' '.join(note.split())}\n" for kind, note in self.caveats.items()
            )
            return write_text(path, header + "".join(f"{label}\n" for label in self.labels))

        doc = self.to_json()
        earlier = doc["settings"].get("provenance")
        history = earlier if isinstance(earlier, list) else [earlier] if isinstance(earlier, dict) else []
        doc["settings"]["provenance"] = [*history[-(MAX_PROVENANCE - 1) :], record()]
        return write_json(path, doc)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Vocabulary:
        """Read a vocabulary JSON file, a text file with one label a line, or a candidates table.

        A ``negvocab candidates`` export (``.tsv``/``.csv`` with a ``text`` column, or a JSON list of
        objects with ``text``) gives its labels with their parts of speech (source ``file``).
        Raises :class:`InputError` naming the file for a missing or unreadable file, malformed
        JSON, another schema version, a hash that does not match the labels, or no labels.
        """
        path = Path(path)
        text = read_text(path, "vocabulary file")
        suffix = path.suffix.lower()
        if suffix in (".tsv", ".csv") and _is_table(text, "\t" if suffix == ".tsv" else ",", path):
            return cls._from_candidates(path)
        if suffix == ".json" or text.lstrip().startswith("{"):
            return cls._from_json_text(text, path)
        return cls.from_text_lines(text.splitlines(), path)

    @classmethod
    def _from_candidates(cls, path: Path) -> Vocabulary:
        cleaning = CleanResult()
        cands = candidates_from_rows(candidate_rows(path) or [], path, cleaning)
        meta = {c.text: {"pos": c.pos} for c in cands}
        settings: dict[str, Any] = {"path": str(path), "format": "candidates", "file_sha256": file_sha256(path)}
        if cleaning.changed or cleaning.dropped:
            settings["label_cleaning"] = cleaning.to_settings()
        return cls.from_labels([c.text for c in cands], source="file", meta=meta, settings=settings)

    @classmethod
    def _from_json_text(cls, text: str, path: Path) -> Vocabulary:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{path}: malformed JSON (line {e.lineno}, column {e.colno}: {e.msg})") from e
        plain = (
            doc
            if isinstance(doc, list)
            else doc.get("labels")
            if isinstance(doc, dict) and set(doc) == {"labels"}
            else None
        )
        if isinstance(doc, list) and doc and all(isinstance(x, dict) and "text" in x for x in doc):
            return cls._from_candidates(path)  # a `negvocab candidates` JSON export
        if plain is not None:  # a hand-written label list: ["a", "b"] or {"labels": ["a", "b"]}
            if not isinstance(plain, list) or not all(isinstance(x, str) for x in plain):
                raise InputError(
                    f"{path}: 'labels' must be a JSON list of strings, got {type(plain).__name__}"
                    if not isinstance(plain, list)
                    else f"{path}: a JSON label list must hold only strings"
                )
            return cls.from_text_lines(plain, path)
        if not isinstance(doc, dict):
            raise InputError(f"{path}: expected a JSON object with 'labels', got {type(doc).__name__}")
        version = doc.get("schema_version")
        if version is None:
            raise InputError(
                f"{path}: no 'schema_version'; not a negvocab vocabulary file (a plain JSON list of labels, "
                'or {"labels": [...]} alone, also loads)'
            )
        if version != SCHEMA_VERSION:
            raise InputError(
                f"{path}: vocabulary schema version {version!r} is not supported "
                f"(this negvocab reads version {SCHEMA_VERSION}); rebuild or convert the file"
            )
        if "sha256" not in doc:
            raise InputError(f"{path}: no 'sha256' field; not a negvocab vocabulary file")
        doc = _accept_removal(doc, path)
        try:
            return cls.model_validate(doc)
        except ValidationError as e:
            raise InputError(f"{path}: invalid vocabulary: {_first_error(e)}") from e

    @classmethod
    def from_text_lines(
        cls, lines: Iterable[str], path: str | os.PathLike[str] = "<text>", *, clean: bool = True
    ) -> Vocabulary:
        """One label a line; blank lines and lines starting with ``#`` are skipped, repeats dropped.

        A hand-written list goes through the one label normaliser (:mod:`negvocab.labels.clean`):
        decorated lines ("1. **Trout** - a fish", "a photo of a goldfish", "Koi") are cleaned, lines
        that are no label (sentences, chatter) dropped, and both recorded in
        ``settings["label_cleaning"]``; a line already written plainly ("the hague", "note") is kept as
        it is (:func:`~negvocab.labels.clean.written_plainly`). A file negvocab wrote (first line
        :data:`VERBATIM_LINE`) or ``clean=False`` reads the labels as written.
        """
        lines = [line.strip() for line in lines]
        raw = list(dict.fromkeys(s for s in lines if s and not s.startswith("#")))
        for i, label in enumerate(raw, 1):
            problem = label_problem(label)
            if problem:
                raise InputError(f"{path}: label {i} {problem}")
        settings: dict[str, Any] = {"path": str(path)}
        labels = raw
        if clean and VERBATIM_LINE not in lines[:1]:
            report = _clean_on_load(raw, report=True)
            labels = report.labels
            if report.changed or report.dropped:
                settings["label_cleaning"] = report.to_settings()
                example = next(iter(report.changed.items()), None)
                logger.warning(
                    "%s: %d labels rewritten on reading%s, %d lines dropped as no label (settings.label_cleaning; "
                    "a first line %r reads every label as written)",
                    path,
                    len(report.changed),
                    f" (e.g. {example[0]!r} -> {example[1]!r})" if example else "",
                    len(report.dropped),
                    VERBATIM_LINE,
                )
        if raw and not labels:
            raise InputError(
                f"{path}: no labels, only sentences or chatter (e.g. {raw[0][:60]!r}); write one name a line"
            )
        if not labels:
            raise InputError(f"{path}: the vocabulary file has no labels")
        if Path(path).is_file():
            settings["file_sha256"] = file_sha256(path)
        caveats = dict(
            line.removeprefix(CAVEAT_LINE).partition(": ")[::2] for line in lines if line.startswith(CAVEAT_LINE)
        )
        return cls.from_labels(labels, source="file", settings=with_caveats(settings, caveats))


def _accept_removal(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """``doc`` with labels removed by hand made whole again, when its metadata proves a pure removal.

    The hash exists to catch edits, so only this one is accepted: the labels left are a subsequence
    of the metadata's keys (which list every original label in order), and the hash of those keys is
    the file's ``sha256``. The removal is recorded in ``settings["dropped"]``; anything else (a label
    added, renamed or moved, or a file without per-label metadata) is left for the hash check to refuse.
    """
    labels, meta, digest = doc.get("labels"), doc.get("meta"), doc.get("sha256")
    if not (isinstance(labels, list) and isinstance(meta, dict) and isinstance(digest, str)) or not labels:
        return doc
    original = list(meta)
    if len(original) <= len(labels) or not all(isinstance(x, str) for x in labels) or labels_hash(labels) == digest:
        return doc
    it = iter(original)
    if not all(label in it for label in labels) or labels_hash(original) != digest:  # `in it`: a subsequence test
        return doc
    kept = set(labels)
    gone = [x for x in original if x not in kept]
    logger.warning(
        "%s: %d labels were removed by hand (e.g. %r); accepted and recorded in settings.dropped",
        path,
        len(gone),
        gone[0],
    )
    settings = dict(doc.get("settings") or {})
    earlier = settings.get("dropped")
    record = {"reason": "removed by hand from the file", "count": len(gone), "labels": gone, "from_sha256": digest}
    settings["dropped"] = [*(earlier if isinstance(earlier, list) else [earlier] if earlier else []), record]
    views = doc.get("views")
    views = views if isinstance(views, dict) else {}
    return {
        **doc,
        "meta": {k: v for k, v in meta.items() if k in kept},
        "views": {k: [x for x in v if x in kept] if isinstance(v, list) else v for k, v in views.items()},
        "settings": settings,
        "sha256": labels_hash(labels),
    }


def _clean_on_load(labels: list[str], report: bool = False) -> Any:
    """The labels a hand-written list of ``labels`` loads as (the :class:`CleanResult` with ``report``)."""
    result = clean_labels_report(labels, keep=written_plainly)
    return result if report else result.labels


def label_problem(label: object) -> str:
    """Why ``label`` cannot be a vocabulary label ("" when it can): not a string, empty, surrounding
    whitespace, a control character (newline, tab, NUL), or longer than :data:`MAX_LABEL_CHARS`."""
    import unicodedata

    if not isinstance(label, str):
        return f"is not a string ({type(label).__name__})"
    if not label.strip():
        return "is empty"
    if len(label) > MAX_LABEL_CHARS:
        return f"{_shown(label)} is {len(label):,} characters long (at most {MAX_LABEL_CHARS}); not a label"
    if label != label.strip():
        return f"{_shown(label)} has surrounding whitespace"
    bad = next((c for c in label if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")), None)
    if bad is not None:
        return f"{_shown(label)} holds a control character ({bad!r}); one label is one line of text"
    return ""


def _shown(label: str) -> str:
    """A label as error messages show it: quoted, at most 40 characters."""
    return repr(label) if len(label) <= 40 else repr(label[:40]) + "..."


def _strip(label: Any) -> Any:
    return label.strip() if isinstance(label, str) else label


def _is_table(text: str, delimiter: str, path: Path) -> bool:
    """True for a table with a ``text`` (or ``label``) column in its header; an error for a table of other
    columns (every line split alike); False for one label a line (a label may hold the delimiter,
    "washington, d.c."). Blank and ``#`` lines are not looked at."""
    import csv

    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines or delimiter not in lines[0]:
        return False
    if {"text", "label"} & {h.strip().lower() for h in next(csv.reader([lines[0]], delimiter=delimiter))}:
        return True  # 'label' as image lists name it
    if len(lines) >= 2 and len({ln.count(delimiter) for ln in lines}) == 1:
        raise InputError(
            f"{path}: a table without a 'text' or 'label' column; give the labels a 'text' header "
            "(as `negvocab candidates` writes) or one label a line in a .txt file"
        )
    return False


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg
