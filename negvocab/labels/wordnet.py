"""WordNet 3.0 through nltk, found offline: nltk's data folders, else the system database.

ImageNet-1k wnids are WordNet 3.0 noun offsets, so negvocab needs exactly WordNet 3.0.
:func:`load_wordnet` looks, in order, at

1. ``$NEGVOCAB_WORDNET_DIR`` (a folder holding ``data.noun``, ``index.noun``, ...);
2. nltk's data path (``nltk.data.find('corpora/wordnet')``, a folder or ``wordnet.zip``), as
   installed by ``python -m nltk.downloader wordnet``;
3. a system WordNet database: ``$WNSEARCHDIR``, ``$WNHOME/dict``, ``/usr/share/wordnet`` (Debian and
   Ubuntu package ``wordnet-base``), and a few other usual places.

nltk's reader needs a ``lexnames`` file that Debian does not ship, and it refuses to read files
outside its data path (symlinks that leave it included). A system database is therefore copied
once, with ``lexnames`` written from :data:`LEXNAMES`, into ``<cache_dir>/nltk_data/corpora/wordnet``
(built in a temporary folder, then renamed into place) and opened there.
``python -m negvocab.labels.wordnet`` does that copy ahead of time.

Every candidate is checked cheaply (82,115 noun synsets; offset 01440764 is ``tench``) and
another version is refused with a :class:`~negvocab.core.errors.ResourceError`.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from negvocab.core.errors import ResourceError
from negvocab.core.paths import cache_dir

if TYPE_CHECKING:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

__all__ = [
    "INSTALL_HINT",
    "KNOWN_OFFSET",
    "LEXNAMES",
    "NOUN_SYNSETS_30",
    "WORDNET_DIR_ENV",
    "WORDNET_VERSION",
    "copy_root",
    "index_sense_text",
    "lexnames_text",
    "load_wordnet",
    "main",
    "prepare_copy",
    "system_dirs",
    "wordnet_location",
]

log = logging.getLogger(__name__)

WORDNET_DIR_ENV = "NEGVOCAB_WORDNET_DIR"
WORDNET_VERSION = "3.0"
NOUN_SYNSETS_30 = 82_115
#: a WordNet 3.0 noun offset and its first lemma: the first ImageNet-1k class, n01440764
KNOWN_OFFSET = (1_440_764, "tench")
INSTALL_HINT = (
    "install it with 'apt-get install wordnet-base' (Debian/Ubuntu) or 'python -m nltk.downloader wordnet', "
    f"or point ${WORDNET_DIR_ENV} at a WordNet 3.0 dict folder"
)

#: WordNet 3.0's lexicographer files (lexnames(5WN)): number -> (name, syntactic category)
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1), ("noun.act", 1),
    ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1), ("noun.body", 1),
    ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1), ("noun.feeling", 1),
    ("noun.food", 1), ("noun.group", 1), ("noun.location", 1), ("noun.motive", 1), ("noun.object", 1),
    ("noun.person", 1), ("noun.phenomenon", 1), ("noun.plant", 1), ("noun.possession", 1),
    ("noun.process", 1), ("noun.quantity", 1), ("noun.relation", 1), ("noun.shape", 1),
    ("noun.state", 1), ("noun.substance", 1), ("noun.time", 1), ("verb.body", 2), ("verb.change", 2),
    ("verb.cognition", 2), ("verb.communication", 2), ("verb.competition", 2), ("verb.consumption", 2),
    ("verb.contact", 2), ("verb.creation", 2), ("verb.emotion", 2), ("verb.motion", 2),
    ("verb.perception", 2), ("verb.possession", 2), ("verb.social", 2), ("verb.stative", 2),
    ("verb.weather", 2), ("adj.ppl", 3),
)  # fmt: skip

# files nltk's reader opens; the first group is required
_REQUIRED = (
    "index.noun", "index.verb", "index.adj", "index.adv",
    "data.noun", "data.verb", "data.adj", "data.adv",
    "noun.exc", "verb.exc", "adj.exc", "adv.exc",
)  # fmt: skip
_OPTIONAL = ("cntlist.rev", "index.sense")
_POS_FILES = (("noun", "n"), ("verb", "v"), ("adj", "a"), ("adv", "r"))
_SS_TYPE = {"n": 1, "v": 2, "a": 3, "r": 4, "s": 5}
_STAMP = "negvocab-source.json"
_SYSTEM_DIRS = (
    "/usr/share/wordnet",
    "/usr/local/share/wordnet",
    "/usr/share/WordNet-3.0/dict",
    "/usr/local/WordNet-3.0/dict",
    "/opt/homebrew/share/wordnet",
    "/opt/local/share/WordNet-3.0/dict",
)


def lexnames_text() -> str:
    """The ``lexnames`` file nltk's reader expects: ``NN<TAB>name<TAB>category`` per line."""
    return "".join(f"{i:02d}\t{name}\t{cat}\n" for i, (name, cat) in enumerate(LEXNAMES))


@dataclass(frozen=True)
class _Candidate:
    where: str  # shown to the user
    kind: str  # "env", "nltk" or "system"
    root: Any  # a system folder (Path) or an nltk PathPointer


@functools.cache
def load_wordnet() -> WordNetCorpusReader:
    """nltk's WordNet 3.0 reader, found offline (see the module docstring); cached per process.

    Raises :class:`~negvocab.core.errors.ResourceError` when no WordNet 3.0 is found (naming both ways to
    install it) or when the only WordNet found is another version.
    """
    return _load()


def wordnet_location() -> str:
    """Where :func:`load_wordnet` reads WordNet from (the folder or zip nltk opened)."""
    return str(load_wordnet().root)


def _load() -> WordNetCorpusReader:
    rejected: list[str] = []
    for cand in _candidates():
        try:
            reader = _open_candidate(cand)
        except ResourceError as e:
            if cand.kind == "env":
                raise
            log.warning("skipping WordNet at %s: %s", cand.where, e)
            rejected.append(f"{cand.where} ({e})")
            continue
        log.info("WordNet %s from %s", WORDNET_VERSION, cand.where)
        return reader
    if rejected:
        raise ResourceError(f"no usable WordNet 3.0: rejected {'; '.join(rejected)}; {INSTALL_HINT}")
    raise ResourceError(f"WordNet 3.0 not found; {INSTALL_HINT}")


def _candidates() -> list[_Candidate]:
    """Places to look, in order (an explicit ``$NEGVOCAB_WORDNET_DIR`` first)."""
    env = os.environ.get(WORDNET_DIR_ENV)
    if env:
        return [_Candidate(f"${WORDNET_DIR_ENV}={env}", "env", Path(env).expanduser())]
    out = [_Candidate(str(p), "nltk", p) for p in _nltk_roots()]
    out += [_Candidate(str(d), "system", d) for d in _system_dirs()]
    return out


def _nltk_roots() -> list[Any]:
    """WordNet in nltk's data path (a folder or a zip), if any."""
    import nltk

    for resource in ("corpora/wordnet", "corpora/wordnet.zip/wordnet/"):  # as nltk's LazyCorpusLoader
        try:
            return [nltk.data.find(resource)]
        except LookupError:
            continue
    return []


def system_dirs() -> list[Path]:
    """System WordNet database folders that exist (``data.noun`` present)."""
    return _system_dirs()


def _system_dirs() -> list[Path]:
    """System WordNet database folders that exist (``data.noun`` present)."""
    dirs = []
    if os.environ.get("WNSEARCHDIR"):
        dirs.append(Path(os.environ["WNSEARCHDIR"]))
    if os.environ.get("WNHOME"):
        dirs.append(Path(os.environ["WNHOME"]) / "dict")
    dirs += [Path(d) for d in _SYSTEM_DIRS]
    seen: list[Path] = []
    for d in dirs:
        if (d / "data.noun").is_file() and d not in seen:
            seen.append(d)
    return seen


def _open_candidate(cand: _Candidate) -> WordNetCorpusReader:
    if cand.kind == "nltk":
        return _open_reader(cand.root, cand.where)
    src = Path(cand.root)
    if (src / "lexnames").is_file() and _is_under_nltk_path(src):
        return _open_reader(str(src), cand.where)  # already a complete nltk corpus in its data path
    return _open_reader(str(prepare_copy(src)), cand.where)


def _is_under_nltk_path(path: Path) -> bool:
    import nltk

    target = path.resolve()
    return any(target.is_relative_to(Path(p).expanduser().resolve()) for p in nltk.data.path if isinstance(p, str))


def copy_root() -> Path:
    """The nltk data folder negvocab copies a system WordNet into (registered on nltk's path)."""
    return cache_dir() / "nltk_data"


def prepare_copy(src: str | os.PathLike[str]) -> Path:
    """Copy a system WordNet 3.0 database into :func:`copy_root` for nltk; returns the corpus folder.

    Reuses an earlier copy of the same source (same file sizes); otherwise builds the copy in a
    temporary folder next to the target and renames it into place, so a reader never sees half a
    copy. A cache that cannot be written (a read-only shared ``$NEGVOCAB_CACHE_DIR``) and holds no
    copy of this source gets a private copy in the system temporary folder instead, with a warning.
    Raises :class:`ResourceError` if ``src`` lacks a required file or cannot be copied at all.
    """
    src = Path(src)
    missing = [f for f in _REQUIRED if not (src / f).is_file()]
    if missing:
        raise ResourceError(f"{src} is not a WordNet database (missing {', '.join(missing[:3])})")
    stamp = {
        "source": str(src.resolve()),
        "files": {f: (src / f).stat().st_size for f in (*_REQUIRED, *_OPTIONAL) if (src / f).is_file()},
    }
    try:
        return _copy_into(copy_root() / "corpora" / "wordnet", src, stamp)
    except ResourceError as e:
        private = (
            Path(tempfile.gettempdir()) / f"negvocab-{os.getuid() if hasattr(os, 'getuid') else 'user'}" / "nltk_data"
        )
        log.warning("%s; using a private copy in %s", e, private)
        return _copy_into(private / "corpora" / "wordnet", src, stamp)


def _copy_into(target: Path, src: Path, stamp: dict[str, Any]) -> Path:
    """:func:`prepare_copy` into the corpus folder ``target``."""
    if _read_stamp(target) == stamp:
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".wordnet.", dir=target.parent))
        try:
            for name in stamp["files"]:
                shutil.copyfile(src / name, tmp / name)  # a copy, not a link: nltk refuses links out
            (tmp / "lexnames").write_text(lexnames_text(), encoding="utf-8")
            if not (tmp / "index.sense").is_file():  # Debian ships it apart (wordnet-sense-index)
                (tmp / "index.sense").write_text(index_sense_text(tmp), encoding="utf-8")
            (tmp / _STAMP).write_text(json.dumps(stamp, indent=1), encoding="utf-8")
            if target.exists():
                old = target.with_name(f".wordnet.old.{os.getpid()}")
                os.replace(target, old)
                shutil.rmtree(old, ignore_errors=True)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    except OSError as e:
        if _read_stamp(target) == stamp:  # another process finished the same copy first
            return target
        raise ResourceError(f"cannot copy WordNet from {src} to {target}: {e}") from e
    log.info("copied WordNet from %s to %s", src, target)
    return target


def index_sense_text(folder: str | os.PathLike[str]) -> str:
    """Rebuild WordNet's ``index.sense`` (sense key, offset, sense number, tag count) from the
    data, index and ``cntlist.rev`` files, following senseidx(5WN); nltk's reader needs it.

    Sense key: ``lemma%ss_type:lex_filenum:lex_id:head_word:head_id`` (head only for adjective
    satellites: the first word of the cluster head their ``&`` pointer names); sense number: the
    synset's position in the lemma's ``index.<pos>`` line; tag count from ``cntlist.rev`` (else 0).
    """
    folder = Path(folder)
    words: dict[tuple[str, int], list[tuple[str, int]]] = {}  # (pos, offset) -> [(lemma, lex_id)]
    rows: list[tuple[str, int, str, int, int, int]] = []  # (lemma, offset, ss_type, filenum, lex_id, head)
    for name, pos in _POS_FILES:
        with open(folder / f"data.{name}", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("  "):
                    continue
                f = line.split(" ")
                offset, filenum, ss_type, n = int(f[0]), int(f[1]), f[2], int(f[3], 16)
                ws = [(_strip_marker(f[4 + 2 * i]).lower(), int(f[5 + 2 * i], 16)) for i in range(n)]
                words[(pos, offset)] = ws
                head = -1
                if ss_type == "s":
                    k = 4 + 2 * n
                    for j in range(int(f[k])):
                        sym, off = f[k + 1 + 4 * j], int(f[k + 2 + 4 * j])
                        if sym == "&":
                            head = off
                            break
                rows += [(lemma, offset, ss_type, filenum, lex_id, head) for lemma, lex_id in ws]
    sense_no: dict[tuple[str, str, int], int] = {}
    for name, pos in _POS_FILES:
        with open(folder / f"index.{name}", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("  "):
                    continue
                f = line.split()
                offsets = f[-int(f[2]) :]
                for i, offset_text in enumerate(offsets, 1):
                    sense_no[(f[0], pos, int(offset_text))] = i
    counts: dict[str, int] = {}
    if (folder / "cntlist.rev").is_file():
        with open(folder / "cntlist.rev", encoding="utf-8") as fh:
            for line in fh:
                key, _, cnt = line.split()
                counts[key] = int(cnt)
    lines: dict[str, str] = {}  # a synset may list one lowercased lemma twice ("A", "a")
    for lemma, offset, ss_type, filenum, lex_id, head in rows:
        pos = "a" if ss_type == "s" else ss_type
        head_part = ":"
        if ss_type == "s" and head >= 0:
            head_word, head_id = words[("a", head)][0]
            head_part = f"{head_word}:{head_id:02d}"
        key = f"{lemma}%{_SS_TYPE[ss_type]}:{filenum:02d}:{lex_id:02d}:{head_part}"
        lines.setdefault(key, f"{key} {offset:08d} {sense_no.get((lemma, pos, offset), 0)} {counts.get(key, 0)}\n")
    return "".join(lines[key] for key in sorted(lines))


def _strip_marker(word: str) -> str:
    """``long(a)`` -> ``long``: drop the adjective position marker of data.adj words."""
    return word[: word.index("(")] if word.endswith(")") and "(" in word else word


def _read_stamp(target: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((target / _STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not (target / "lexnames").is_file():
        return None
    data["files"] = {k: int(v) for k, v in data.get("files", {}).items()}
    return data


def _open_reader(root: Any, where: str) -> WordNetCorpusReader:
    """Open nltk's reader on ``root`` (registering its data folder) and check it is WordNet 3.0."""
    import nltk
    from nltk.data import PathPointer

    if not isinstance(root, PathPointer):
        data_dir = str(Path(root).parent.parent)  # <data_dir>/corpora/wordnet
        if data_dir not in nltk.data.path:
            nltk.data.path.append(data_dir)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available": we need none
            reader = _reader_class()(root, None)
    except (OSError, ValueError, AssertionError, LookupError) as e:
        raise ResourceError(f"cannot read WordNet at {where}: {e}") from e
    _check_version(reader, where)
    return reader


@functools.cache
def _reader_class() -> type[WordNetCorpusReader]:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class WordNet30Reader(WordNetCorpusReader):
        """nltk's reader, less the start-up mapping of sense keys from WordNet 3.0 to the loaded
        version (OMW support: over half the load time); negvocab loads 3.0 itself, so the
        mapping is the identity, which nltk also writes as ``None``."""

        def map_wn(self, version: str = "wordnet") -> None:
            return None

    return WordNet30Reader


def _check_version(reader: WordNetCorpusReader, where: str) -> None:
    nouns = _count_noun_synsets(reader)
    offset, lemma = KNOWN_OFFSET
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nltk warns before failing on an unknown offset
            first = reader.synset_from_pos_and_offset("n", offset).lemma_names()[0]
    except Exception:
        first = None
    if nouns != NOUN_SYNSETS_30 or first != lemma:
        version = reader.get_version() or "unknown"
        raise ResourceError(
            f"WordNet at {where} is version {version} ({nouns} noun synsets), "
            f"negvocab needs WordNet {WORDNET_VERSION} ({NOUN_SYNSETS_30} noun synsets; ImageNet wnids are 3.0 offsets)"
        )


def _count_noun_synsets(reader: WordNetCorpusReader) -> int:
    """Lines of ``data.noun`` that are synsets (the licence header lines start with two spaces)."""
    with reader.root.join("data.noun").open() as fh:
        return sum(1 for line in fh if not line.startswith(b"  "))


def main(argv: list[str] | None = None) -> int:
    """``python -m negvocab.labels.wordnet``: find WordNet 3.0, copy it for nltk if needed, report."""
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        reader = load_wordnet()
    except ResourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"WordNet {WORDNET_VERSION} ready: {reader.root} ({NOUN_SYNSETS_30} noun synsets)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
