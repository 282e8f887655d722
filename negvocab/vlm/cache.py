"""On-disk embedding cache: rows keyed by exact strings, verified on every read.

One :class:`EmbeddingStore` per (model identity, kind, templates) lives in its own folder, named by
the SHA-256 of that key document and holding it as ``key.json`` (checked on open, so a store is
never served to another model). Rows are kept in shards: ``<id>.npy`` (float32, ``np.save``,
memory-mapped read-only with ``allow_pickle=False``, so a large shard is never copied into memory
whole) plus ``<id>.json`` (the row keys and their SHA-256, shape, dtype and the SHA-256 of the
``.npy`` bytes). The manifest is written after the array, both atomically, so a shard without a
manifest is an interrupted write and is ignored; a shard whose keys, bytes, shape or dtype do not
match its manifest is reported, deleted and its rows recomputed. Encoding a superset of cached
labels computes only the new ones; many small shards are merged into one (shards of
``MERGE_MAX_BYTES`` or more, such as GL-MCM patch features, are left as they are). Temporary files
of writes killed midway are removed after a day.

Many processes may share a store (the Ray engine's model workers, each writing its own image
shards): a read that misses keys first picks up the shards other processes committed since the
index was read (and forgets those merged away), so no row another process stored is computed and
stored again. One process merges at a time (a lock file; a busy lock skips the merge), and a
merged shard's manifest names the shards it ``replaces``: from its commit on they no longer count,
so a merge killed before deleting them leaves no key stored twice (they are deleted on the next read).

Long runs hand their finished rows to :class:`Checkpoints`, which stores them by time (at least
every :data:`SAVE_EVERY_S` seconds of work, plus the chunk in hand) and, on any exit, Ctrl-C too,
whatever is finished: an interrupted run loses well under a minute of work. Every row stored is
tallied (:func:`negvocab.core.progress.note_kept`) for the CLI's "re-run to resume" line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import shutil
import stat
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from time import monotonic
from typing import Any, Protocol

import numpy as np

from negvocab.core.atomic import atomic_path, write_json
from negvocab.core.progress import note_kept

__all__ = [
    "Checkpoints",
    "EmbeddingStore",
    "KEY_FILE",
    "MAX_SHARDS",
    "MERGE_LOCK",
    "MERGE_MAX_BYTES",
    "RowStore",
    "SAVE_EVERY_S",
    "STALE_TMP_S",
    "StoreInfo",
    "key_digest",
    "list_stores",
    "remove_store",
]

log = logging.getLogger(__name__)

KEY_FILE = "key.json"
MERGE_LOCK = ".merge.lock"  # held by the one process merging a store's shards
MAX_SHARDS = 8  # merge the small shards when there are more
MERGE_MAX_BYTES = 64 << 20  # bigger shards are never merged: merging reads its shards into memory
STALE_TMP_S = 24 * 3600  # a temporary file this old belongs to a write that was killed
SAVE_EVERY_S = 20.0  # finished rows are stored once this much work went by (+ one chunk: 30 s at most)


def key_digest(key_doc: Mapping[str, Any]) -> str:
    """SHA-256 of a key document (canonical JSON)."""
    payload = json.dumps(key_doc, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class EmbeddingStore:
    """Embedding rows keyed by strings, in one folder; see the module docstring for the layout."""

    def __init__(self, folder: str | Path, key_doc: Mapping[str, Any]) -> None:
        self.folder = Path(folder)
        self.key_doc = json.loads(json.dumps(key_doc))
        self._index: dict[str, tuple[str, int]] | None = None
        self._shards: dict[str, dict[str, Any]] = {}
        self._verified: dict[str, tuple[int, ...]] = {}  # shard -> the file version (stat) verified
        self._foreign = False  # the folder holds another key's rows (that could not be removed)

    @classmethod
    def for_key(cls, root: str | Path, key_doc: Mapping[str, Any]) -> EmbeddingStore:
        """The store for ``key_doc`` under ``root`` (folder named by the key's digest)."""
        return cls(Path(root) / key_digest(key_doc)[:24], key_doc)

    # -- reading ---------------------------------------------------------------------------------
    def _check_key(self) -> bool:
        path = self.folder / KEY_FILE
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return False
        except (OSError, ValueError):
            log.warning("%s: unreadable cache key file; ignoring the cache there", path)
            return False
        if stored != self.key_doc:
            log.warning("%s: cache belongs to another model/key; not used", self.folder)
            return False
        return True

    def _load_index(self) -> dict[str, tuple[str, int]]:
        if self._index is not None:
            return self._index
        index: dict[str, tuple[str, int]] = {}
        self._shards = {}
        foreign = self.folder.is_dir() and not self._check_key()
        if foreign:
            foreign = not self._reset()  # foreign only while the other key's rows could not be removed
        self._index, self._foreign = index, foreign
        if self.folder.is_dir() and not foreign:
            _remove_stale_temporaries(self.folder)
            self._add_shards(self._manifests())
        return self._index

    def _manifests(self) -> list[Path]:
        return _by_age(p for p in self.folder.glob("*.json") if p.name != KEY_FILE)

    def _add_shards(self, manifests: Iterable[Path]) -> None:
        """Index the shards of ``manifests`` (oldest first); shards a merged one replaces stop counting."""
        index = self._index if self._index is not None else {}
        replaced: set[str] = set()
        for manifest in manifests:
            info = self._read_manifest(manifest)
            if info is None:
                continue
            sid = manifest.stem
            self._shards[sid] = info
            for row, k in enumerate(info["keys"]):
                index[k] = (sid, row)
            replaced.update(info.get("replaces", []))
        for sid in replaced & set(self._shards):  # a merge killed before it deleted them
            self._drop(sid)

    def refresh(self) -> bool:
        """Pick up the shards other processes committed (or merged away) since the index was read;
        True when anything changed."""
        if self._index is None or self._foreign or not self.folder.is_dir():
            return False
        on_disk = {p.stem: p for p in self._manifests()}
        gone = set(self._shards) - set(on_disk)
        for sid in gone:  # merged away elsewhere: its rows are in the new shard
            self._shards.pop(sid, None)
            self._verified.pop(sid, None)
        if gone:
            self._index = {k: v for k, v in self._index.items() if v[0] not in gone}
        new = [p for sid, p in on_disk.items() if sid not in self._shards]
        self._add_shards(new)
        return bool(gone or new)

    def _reset(self) -> bool:
        """Remove shards of a folder whose key file is missing or foreign, then claim it; whether it could."""
        self._shards = {}
        try:
            for path in self.folder.glob("*"):
                if path.suffix in (".npy", ".json") and path.is_file():
                    path.unlink(missing_ok=True)
            write_json(self.folder / KEY_FILE, self.key_doc)
        except OSError as e:  # a read-only cache: its rows are not ours, so read none of them
            log.warning("cannot reset the embedding cache in %s: %s", self.folder, e)
            return False
        return True

    def _read_manifest(self, path: Path) -> dict[str, Any] | None:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            ok = (
                isinstance(info, dict)
                and isinstance(info.get("keys"), list)
                and all(isinstance(k, str) for k in info["keys"])
                and isinstance(info.get("shape"), list)
                and all(isinstance(x, int) for x in info["shape"])
                and len(info["shape"]) >= 1
                and len(info["keys"]) == info["shape"][0]
                and isinstance(info.get("sha256"), str)
                and isinstance(info.get("replaces", []), list)
                and all(isinstance(x, str) for x in info.get("replaces", []))
            )
        except FileNotFoundError:  # merged away by another process meanwhile
            return None
        except (OSError, ValueError):
            ok = False
        if ok and "keys_sha256" not in info:  # written before manifests held it: trusted as then, hashed from now on
            info["keys_sha256"] = _keys_digest(info["keys"])
            try:
                write_json(path, info, indent=None)
            except OSError:
                pass  # a read-only cache: checked this time only
            log.info("%s: cache manifest of an older negvocab; its key hash was added", path)
        if not ok or info["keys_sha256"] != _keys_digest(info["keys"]):
            log.warning("%s: corrupt cache manifest; discarding the shard", path)
            self._drop(path.stem)
            return None
        return info

    def _load_shard(self, sid: str) -> np.ndarray | None:
        """Shard ``sid`` memory-mapped read-only, its bytes verified against the manifest once per
        file version (the mapping is not kept: no file handle outlives the read)."""
        info = self._shards[sid]
        path = self.folder / f"{sid}.npy"
        try:
            st = path.stat()
        except OSError:
            if (self.folder / f"{sid}.json").exists():
                log.warning("%s: cache shard missing; recomputing its rows", path)
            self._verified.pop(sid, None)
            return None
        version = (st.st_ino, st.st_size, st.st_mtime_ns)
        problem = None
        try:
            if self._verified.get(sid) != version:
                with open(path, "rb") as fh:
                    if hashlib.file_digest(fh, "sha256").hexdigest() != info["sha256"]:
                        problem = "checksum mismatch"
            if problem is None:
                arr = np.load(path, mmap_mode="r", allow_pickle=False)
                if list(arr.shape) != info["shape"] or str(arr.dtype) != info.get("dtype", "float32"):
                    problem = f"shape/dtype {arr.shape}/{arr.dtype} != manifest"
                elif arr.ndim > 1 and not arr.flags.c_contiguous:
                    problem = "Fortran-ordered array"
        except (ValueError, OSError) as e:
            problem = f"unreadable ({e})"
        if problem:
            log.warning("%s: corrupt cache shard (%s); deleting it and recomputing its rows", path, problem)
            self._drop(sid)
            return None
        self._verified[sid] = version
        return arr

    def _drop(self, sid: str) -> None:
        for suffix in (".json", ".npy"):
            try:
                (self.folder / f"{sid}{suffix}").unlink(missing_ok=True)
            except OSError as e:  # a read-only cache or a folder in the way: not used, left as it is
                log.warning("cannot remove %s from the embedding cache: %s", f"{sid}{suffix}", e)
        self._shards.pop(sid, None)
        self._verified.pop(sid, None)
        if self._index is not None:  # in place: a caller may be filling this very dict (_add_shards)
            for k in [k for k, v in self._index.items() if v[0] == sid]:
                del self._index[k]

    def get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """``(found, rows)``: a bool mask over ``keys`` and an array [len(keys), ...] (None if none found).

        Rows of keys not found are left as zeros. Corrupt shards are deleted and their keys
        reported as not found. Keys not in the index, or in a shard gone from disk, are looked up
        again after :meth:`refresh` (another process may have stored or merged them).
        """
        found, rows = self._get(keys)
        if not found.all() and self.refresh():
            again, more = self._get(keys)
            if more is not None and again.any():
                if rows is None:
                    rows = np.zeros_like(more)
                rows[again & ~found] = more[again & ~found]
                found |= again
        return found, rows

    def _get(self, keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray | None]:
        found = np.zeros(len(keys), dtype=bool)
        index = self._load_index()
        wanted: dict[str, list[tuple[int, int]]] = {}
        for i, k in enumerate(keys):
            hit = index.get(k)
            if hit is not None:
                wanted.setdefault(hit[0], []).append((i, hit[1]))
        rows: np.ndarray | None = None
        for sid, pairs in wanted.items():
            arr = self._load_shard(sid)
            if arr is None:
                continue
            dst = np.fromiter((p[0] for p in pairs), dtype=np.int64, count=len(pairs))
            src = np.fromiter((p[1] for p in pairs), dtype=np.int64, count=len(pairs))
            if rows is None and len(pairs) == len(keys):  # one shard holds every key: one gather
                rows = np.take(arr, src, axis=0)
                found[:] = True
                continue
            if rows is None:
                rows = np.zeros((len(keys), *arr.shape[1:]), dtype=arr.dtype)
            rows[dst] = arr[src]
            found[dst] = True
        return found, rows

    # -- writing ---------------------------------------------------------------------------------
    def put(self, keys: Sequence[str], rows: np.ndarray) -> None:
        """Store ``rows`` [len(keys), ...] under ``keys`` (a new shard; merged when there are many)."""
        rows = np.ascontiguousarray(rows)
        if len(keys) != rows.shape[0]:
            raise ValueError(f"{len(keys)} keys for {rows.shape[0]} rows")
        if not len(keys):
            return
        try:
            self._write_shard(list(keys), rows)
        except OSError as e:  # a full or read-only disk must not lose the computed result
            log.warning("cannot write the embedding cache in %s: %s", self.folder, e)
            return
        note_kept(f"{self.kind} embeddings in the cache", len(keys))
        try:
            if len(self._shards) > MAX_SHARDS:
                self.compact()
        except OSError as e:
            log.warning("cannot merge the embedding cache shards in %s: %s", self.folder, e)

    @property
    def kind(self) -> str:
        """``text``, ``image`` or ``image-local``: the folder the store lives in (``<root>/<kind>/``)."""
        return self.folder.parent.name or "cached"

    def _write_shard(self, keys: list[str], rows: np.ndarray, replaces: Collection[str] = ()) -> str:
        index = self._load_index()
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.folder / KEY_FILE).is_file():
            write_json(self.folder / KEY_FILE, self.key_doc)
        sid = uuid.uuid4().hex[:16]
        with atomic_path(self.folder / f"{sid}.npy") as tmp:
            with open(tmp, "wb") as fh:  # streamed from ``rows``: no second copy in memory
                np.save(fh, rows, allow_pickle=False)
            with open(tmp, "rb") as fh:
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
        info: dict[str, Any] = {
            "keys": keys,
            "keys_sha256": _keys_digest(keys),
            "shape": list(rows.shape),
            "dtype": str(rows.dtype),
            "sha256": digest,
        }
        if replaces:
            info["replaces"] = sorted(replaces)
        write_json(self.folder / f"{sid}.json", info, indent=None)  # the commit point
        self._shards[sid] = info
        for row, k in enumerate(keys):
            index[k] = (sid, row)
        return sid

    def compact(self) -> None:
        """Merge the shards smaller than ``MERGE_MAX_BYTES`` into one (verified rows only), then
        delete them. One process at a time: another's merge in progress makes this a no-op."""
        self._load_index()
        with _merge_lock(self.folder) as mine:
            if not mine:
                return
            self.refresh()  # merge what is on disk now, not what this process saw earlier
            index = self._index or {}
            small = {sid for sid, info in self._shards.items() if _shard_bytes(info) < MERGE_MAX_BYTES}
            if len(small) < 2:
                return
            keys = [k for k, (sid, _) in index.items() if sid in small]
            found, rows = self._get(keys)
            if rows is None:
                return
            keys = [k for k, hit in zip(keys, found, strict=True) if hit]
            self._write_shard(keys, rows[found], replaces=small)  # the commit: ``small`` stop counting
            new_index = dict(self._index or {})
            for sid in small:
                self._drop(sid)
            self._index = {k: v for k, v in new_index.items() if v[0] in self._shards}

    def __len__(self) -> int:
        return len(self._load_index())

    def clear(self) -> None:
        """Delete every shard of this store."""
        self._load_index()
        for sid in list(self._shards):
            self._drop(sid)
        self._index = {}


class RowStore(Protocol):
    """Where :class:`Checkpoints` puts rows: an :class:`EmbeddingStore`, or the image stores
    (:mod:`negvocab.vlm.images`, handed row indices)."""

    def put(self, keys: Sequence[str], rows: np.ndarray) -> None: ...


class Checkpoints:
    """Finished rows on their way into ``store``: stored when ``every_s`` seconds of work passed
    since the last save or ``max_rows`` are pending, and by :meth:`flush` (call it on every exit,
    Ctrl-C included) whatever is pending. ``kept`` counts the rows stored."""

    def __init__(
        self,
        store: RowStore,
        *,
        every_s: float = SAVE_EVERY_S,
        max_rows: int | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.store, self.every_s, self.max_rows = store, every_s, max_rows
        self._clock = clock or monotonic  # seconds of work
        self._pending: list[tuple[list[str], np.ndarray]] = []
        self._last = self._clock()
        self.kept = 0
        self.saves = 0

    def add(self, keys: Sequence[str], rows: np.ndarray) -> None:
        """Take finished rows; store them (and those pending) when it is time."""
        self._pending.append((list(keys), rows))
        n = sum(len(k) for k, _ in self._pending)
        if self._clock() - self._last >= self.every_s or (self.max_rows is not None and n >= self.max_rows):
            self.flush()

    def flush(self) -> None:
        """Store every pending row now (one shard)."""
        self._last = self._clock()
        if not self._pending:
            return
        keys = [k for ks, _ in self._pending for k in ks]
        rows = np.concatenate([a for _, a in self._pending])
        self._pending.clear()
        self.store.put(keys, rows)
        self.kept += len(keys)
        self.saves += 1


@contextlib.contextmanager
def _merge_lock(folder: Path) -> Iterator[bool]:
    """An exclusive, non-blocking lock on ``folder``'s merges: yields False when another process
    holds it (or locks are not available: no ``flock``, a read-only folder)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): merges are not shared-safe, so skip them
        yield False
        return
    try:
        fh = open(folder / MERGE_LOCK, "a")  # held across the yield
    except OSError:
        yield False
        return
    with fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _remove_stale_temporaries(folder: Path) -> None:
    """Delete the temporary files of atomic writes older than STALE_TMP_S (a killed write leaves one;
    a live writer's is younger)."""
    now = time.time()
    for path in folder.glob(".*.tmp"):
        try:
            if now - path.stat().st_mtime > STALE_TMP_S:
                path.unlink()
                log.info("removed %s, left by an interrupted cache write", path)
        except OSError:
            continue


def _keys_digest(keys: list[str]) -> str:
    """SHA-256 of a shard's row keys: an edited or damaged key list would serve rows under wrong keys."""
    return hashlib.sha256(json.dumps(keys, ensure_ascii=False).encode("utf-8")).hexdigest()


def _shard_bytes(info: Mapping[str, Any]) -> int:
    """The size of a shard's array as its manifest states it (a bad dtype counts as big)."""
    try:
        itemsize = np.dtype(info.get("dtype", "float32")).itemsize
    except TypeError:
        return MERGE_MAX_BYTES
    return int(np.prod(info["shape"], dtype=np.int64)) * itemsize


def _by_age(paths: Iterable[Path]) -> list[Path]:
    """Regular files, oldest first; a file another process removes meanwhile is left out."""
    dated = []
    for p in paths:
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode):
            dated.append((st.st_mtime_ns, p))
    return [p for _, p in sorted(dated)]


@dataclass(frozen=True)
class StoreInfo:
    """One store found under a cache root: its key document, rows and size on disk."""

    folder: Path
    key_doc: dict[str, Any]
    rows: int
    bytes: int

    @property
    def model(self) -> str:
        return str(self.key_doc.get("model", {}).get("name", "?"))

    @property
    def kind(self) -> str:
        return str(self.key_doc.get("model", {}).get("kind", "?"))


def list_stores(root: str | Path) -> list[StoreInfo]:
    """The embedding stores under ``root`` (``<root>/<kind>/<key digest>/`` holding a readable key file).

    Rows are counted from the shard manifests without reading or verifying the arrays.
    """
    out = []
    for key_file in sorted(Path(root).glob(f"*/*/{KEY_FILE}")):  # <root>/<kind>/<key digest>/
        folder = key_file.parent
        try:
            key_doc = json.loads((folder / KEY_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(key_doc, dict) or not isinstance(key_doc.get("model"), dict):
            continue  # not a key this package wrote
        rows, size = 0, 0
        for path in folder.iterdir():
            size += path.stat().st_size if path.is_file() else 0
            if path.suffix == ".json" and path.name != KEY_FILE:
                try:
                    rows += len(json.loads(path.read_text(encoding="utf-8")).get("keys", []))
                except (OSError, ValueError, AttributeError):
                    pass
        out.append(StoreInfo(folder, key_doc, rows, size))
    return out


def remove_store(info: StoreInfo) -> None:
    """Delete a store folder found by :func:`list_stores` (only a folder with a cache key file)."""
    if not (info.folder / KEY_FILE).is_file():
        raise ValueError(f"{info.folder} is not an embedding store")
    shutil.rmtree(info.folder)
