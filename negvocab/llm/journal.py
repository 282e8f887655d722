"""The run journal: a folder with ``manifest.json`` (the run's identity) and ``journal.jsonl``.

One JSON line per finished request (``kind: "result"``: key, round, status, labels, token usage,
request id, model, prompt name and hash), plus Batch API bookkeeping lines (``batch_input``,
``batch``, ``batch_done``, ``attempt_failed``). Each append is written, flushed and fsynced before
the request counts as done, so a process killed at any moment (kill -9) loses at most the lines
being written: a torn last line (no final newline, or not JSON) is detected, reported and cut off
on the next open. Every line ends with a CRC-32 of itself (``"crc32"``), so a bit that changes on
disk is reported instead of read as a label (lines of older journals, without it, still read).
A request whose result is in the journal is never sent again, and while a
process writes the folder it holds an exclusive lock on it (``.lock``, released by the OS when the
process ends), so a second process running the same command is refused instead of paying twice.

The identity (task, model, prompt hash, labels per request, temperature, ...) is fixed when the
folder is created, in the manifest and again in the journal (``kind: "identity"``, its first line;
added at the next open to journals begun before), from which a deleted or damaged manifest is
rebuilt; opening the folder with another identity is refused, so a changed prompt or model is a new
run and never a silent mix. The classes and rounds are not part of it: each result carries a hash of
what was asked (``request_sha256``), so a run grows to more rounds or classes in its folder, and a
request asked differently is asked again. Of two results for one question the better one counts (an
``ok`` answer, else the one with more labels), so asking again never loses labels already paid for,
and going back to an earlier question finds its answer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from negvocab.core.atomic import write_json
from negvocab.core.errors import InputError, ResourceError
from negvocab.core.progress import note_kept
from negvocab.llm.client import STATUSES

__all__ = [
    "JOURNAL",
    "JOURNAL_VERSION",
    "Journal",
    "LOCK",
    "MANIFEST",
    "custom_id",
    "decode_line",
    "encode_line",
    "identity_hash",
    "read_manifest",
]

log = logging.getLogger(__name__)

JOURNAL_VERSION = 1
MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
KEPT = "answers in the LLM run journal"  # what a Ctrl-C line says a re-run resumes from
LOCK = ".lock"
#: the checksum every line ends with: CRC-32 of the line as if the field were not there
_CRC = re.compile(rb',"crc32":"([0-9a-f]{8})"\}$')


def encode_line(record: Mapping[str, Any]) -> bytes:
    """One journal line: compact JSON ending in a ``crc32`` field over the rest of the line."""
    body = json.dumps(dict(record), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    crc = b'"crc32":"%08x"}' % zlib.crc32(body)
    return (body[:-1] + (b"," if body != b"{}" else b"") + crc) + b"\n"


def decode_line(raw: bytes) -> Any:
    """The record of a journal line; ValueError when its checksum does not match (a changed bit).
    Lines without a checksum (journals of older versions) are read as they are."""
    found = _CRC.search(raw)
    if found is not None:
        body = raw[: found.start()] + b"}"
        if zlib.crc32(body) != int(found.group(1), 16):
            raise ValueError("checksum mismatch: its bytes changed after it was written (a disk or memory fault)")
    record = json.loads(raw)
    if found is not None and isinstance(record, dict):
        record.pop("crc32", None)
    return record


def identity_hash(identity: Mapping[str, Any]) -> str:
    """SHA-256 of the identity as canonical JSON (sorted keys)."""
    payload = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def custom_id(key: str, round_: int) -> str:
    """The request id of (class or chunk ``key``, round): ``"<key>/r<round>"``."""
    return f"{key}/r{round_}"


class Journal:
    """An append-only, crash-safe record of one run (see the module docstring).

    ``results`` maps custom id -> the result of the question last asked under it (the better one
    when it was asked more than once); :meth:`answer` finds the best result of any question asked;
    ``records`` keeps every line.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        identity: Mapping[str, Any],
        *,
        extra: Mapping[str, Any] | None = None,
        readonly: bool = False,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.identity = dict(identity)
        self.identity_sha256 = identity_hash(self.identity)
        self.path = self.run_dir / JOURNAL
        self.readonly = readonly
        self.records: list[dict[str, Any]] = []
        self.results: dict[str, dict[str, Any]] = {}
        self._answers: dict[tuple[str, str | None], dict[str, Any]] = {}
        self.torn_lines = 0
        self._fh: Any = None
        self._lock_fh: Any = None
        if readonly:  # look, change nothing (dry runs, reports)
            if (self.run_dir / MANIFEST).exists():
                self._check_manifest({})
                self._load()
            return
        self._claim_folder()
        self._lock()
        try:
            self._check_manifest(extra or {})
            self._load()
            self._fh = open(self.path, "ab")
            if not self.of_kind(
                "identity"
            ):  # the identity again (first, in new runs): a lost manifest is rebuilt from it
                self.append([{"kind": "identity", "identity": self.identity, "identity_sha256": self.identity_sha256}])
            note_kept(KEPT, len(self.results))  # a resumable run folder, with the answers it holds
        except BaseException:
            self.close()
            raise

    def _claim_folder(self) -> None:
        """Create the run folder, or check that an existing one is a run folder or empty: a run
        never writes its files among someone else's."""
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise InputError(f"run folder {self.run_dir} is a file; give a folder (run_dir)", param="run_dir")
        if self.run_dir.is_dir():
            ours = {JOURNAL, MANIFEST, LOCK}
            foreign = sorted(
                p.name for p in self.run_dir.iterdir() if p.name not in ours and not p.name.startswith(".")
            )
            if foreign and not (self.run_dir / MANIFEST).exists():
                raise InputError(
                    f"{self.run_dir} is not empty and not a negvocab run folder (holds {foreign[0]}, ...); "
                    "give a new or empty run_dir",
                    param="run_dir",
                )
            if (self.run_dir / MANIFEST).exists():
                try:
                    read_manifest(self.run_dir)
                except InputError:  # another tool's manifest.json is refused before anything is written
                    if self._journal_identity() is None:  # ours, damaged: _check_manifest rebuilds it
                        raise
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / LOCK).touch()
        except OSError as e:
            raise InputError(
                f"cannot write the run folder {self.run_dir}: {e.strerror or e}; give a writable run_dir "
                "(or set NEGVOCAB_CACHE_DIR)",
                param="run_dir",
            ) from e

    def _lock(self) -> None:
        """Hold an exclusive lock on the run folder while it is open for writing, so two processes
        never send the same requests; the OS drops it when the process ends (also on kill -9)."""
        try:
            import fcntl
        except ImportError:  # no flock (Windows): run one process per run folder
            return
        self._lock_fh = open(self.run_dir / LOCK, "a")
        try:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_fh.close()
            self._lock_fh = None
            raise InputError(
                f"{self.run_dir} is in use by another negvocab process; wait for it to finish (or stop it), "
                "then run the same command again to resume"
            ) from None

    @classmethod
    def open_existing(cls, run_dir: str | os.PathLike[str], *, readonly: bool = True) -> Journal:
        """Open a run folder with the identity its manifest holds (to read it, or to resume)."""
        manifest = read_manifest(run_dir)
        return cls(run_dir, manifest["identity"], readonly=readonly)

    # -- manifest -------------------------------------------------------------------------------
    def _journal_identity(self) -> dict[str, Any] | None:
        """The identity line of the journal (a copy of the manifest's identity), if it holds one:
        its first line, or a later one in journals begun before identity lines existed."""
        try:
            with open(self.path, "rb") as fh:
                for raw in fh:
                    if b'"kind":"identity"' not in raw:
                        continue
                    rec = json.loads(raw)
                    ident = rec.get("identity") if isinstance(rec, dict) else None
                    if isinstance(ident, dict) and identity_hash(ident) == rec.get("identity_sha256"):
                        return ident
        except (OSError, ValueError):
            return None
        return None

    def _check_manifest(self, extra: Mapping[str, Any]) -> None:
        path = self.run_dir / MANIFEST
        journaled = self.path.exists() and self.path.stat().st_size > 0
        if journaled and not self.readonly:
            try:
                read_manifest(self.run_dir)
            except InputError as e:  # lost or damaged: the journal's own copy of the identity rebuilds it
                stored = self._journal_identity()
                if stored is None:
                    raise InputError(
                        f"{e}; the journal {self.path} holds no identity line to rebuild it from: restore "
                        f"{MANIFEST}, or use a new run_dir",
                        param="run_dir",
                    ) from None
                if identity_hash(stored) == self.identity_sha256:
                    log.warning(
                        "%s: %s missing or damaged; rebuilt from the journal's identity line", self.run_dir, MANIFEST
                    )
                    self._write_manifest(extra)
        if path.exists():
            manifest = read_manifest(self.run_dir)
            stored = manifest.get("identity") or {}
            if identity_hash(stored) != self.identity_sha256:
                if "rounds" in stored:  # before runs could grow, rounds and classes were part of it
                    raise InputError(
                        f"{self.run_dir} was written by an older negvocab whose runs could not grow; "
                        "use a new run_dir (its journal stays readable as it is)",
                        param="run_dir",
                    )
                diff = _diff(stored, self.identity)
                raise InputError(
                    f"{self.run_dir} holds another run ({diff}); use a new run_dir, "
                    "or the same settings to resume that run",
                    param="run_dir",
                )
            return
        stored = self._journal_identity() if journaled else None
        if stored is not None and identity_hash(stored) != self.identity_sha256:
            raise InputError(
                f"{self.run_dir} holds another run ({_diff(stored, self.identity)}); use a new run_dir", param="run_dir"
            )
        if journaled and stored is None:
            raise InputError(
                f"{self.run_dir}: journal without {MANIFEST}; not a negvocab run folder, use a new run_dir",
                param="run_dir",
            )
        if not self.readonly:
            self._write_manifest(extra)

    def _write_manifest(self, extra: Mapping[str, Any]) -> None:
        write_json(
            self.run_dir / MANIFEST,
            {
                "journal_version": JOURNAL_VERSION,
                "identity": self.identity,
                "identity_sha256": self.identity_sha256,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **dict(extra),
            },
        )

    def update_manifest(self, fields: Mapping[str, Any]) -> None:
        """Add or replace manifest ``fields`` that are not the identity (e.g. the response format a
        run settled on); written atomically, the identity untouched."""
        manifest = read_manifest(self.run_dir)
        manifest.update(
            {k: v for k, v in fields.items() if k not in ("identity", "identity_sha256", "journal_version")}
        )
        write_json(self.run_dir / MANIFEST, manifest)

    # -- reading ----------------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        good_end = 0
        pos = 0
        lines = data.split(b"\n")
        for i, raw in enumerate(lines):
            last = i == len(lines) - 1
            if last and raw == b"":
                break
            end = pos + len(raw) + 1
            try:
                if last:  # no newline after it: torn by a crash mid-write
                    raise ValueError("no final newline")
                record = decode_line(raw)
                _check_record(record)
            except ValueError as e:
                if last or all(not x.strip() for x in lines[i + 1 :]):
                    self.torn_lines += 1
                    log.warning(
                        "%s: ignoring a torn last line (%d bytes) left by an interrupted run", self.path, len(raw)
                    )
                    break
                zeros = raw.count(b"\0")
                why = f"{zeros} zero bytes: a crash or disk fault wrote over the records there" if zeros else str(e)
                raise InputError(
                    f"{self.path}: line {i + 1} is damaged ({why}); delete that line to ask its requests again, "
                    "or move the journal away to start over"
                ) from None
            self._remember(record)
            good_end = end
            pos = end
        if good_end < len(data) and not self.readonly:
            with open(self.path, "rb+") as fh:  # cut the torn tail so new lines start clean
                fh.truncate(good_end)
                fh.flush()
                os.fsync(fh.fileno())

    def _remember(self, record: dict[str, Any]) -> None:
        self.records.append(record)
        if record.get("kind") == "result":
            question = (record["custom_id"], record.get("request_sha256"))
            old = self._answers.get(question)
            best = record if old is None or _better(record, old) else old
            self._answers[question] = best
            self.results[record["custom_id"]] = best

    def answer(self, custom_id: str, request_sha256: str) -> dict[str, Any] | None:
        """The best result journaled for this question (request id and hash of what was asked)."""
        return self._answers.get((custom_id, request_sha256))

    # -- writing ----------------------------------------------------------------------------------
    def append(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Write ``records`` as lines, flush and fsync (one write for the group)."""
        if self._fh is None:
            raise RuntimeError("journal opened read-only")
        recs = [dict(r) for r in records]
        if not recs:
            return
        payload = b"".join(encode_line(r) for r in recs)
        try:
            self._fh.write(payload)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as e:  # a full disk: one line; the next open cuts a torn tail
            raise self.write_error(e) from None
        before = len(self.results)
        for r in recs:
            self._remember(r)
        note_kept(KEPT, len(self.results) - before)

    def write_error(self, e: OSError) -> ResourceError:
        """The one-line error for a journal that cannot be written (a full disk, a quota, I/O)."""
        return ResourceError(
            f"cannot write the run journal {self.path}: {e.strerror or e}; free space there and re-run the "
            "same command (every answer journaled before is kept)"
        )

    def close(self) -> None:
        """Close the journal and release the lock; a write that fails here (lines still buffered
        after a full disk) is a one-line :class:`ResourceError`."""
        error = None
        if self._fh is not None and not self._fh.closed:
            try:
                self._fh.close()
            except OSError as e:
                error = self.write_error(e)
        if self._lock_fh is not None and not self._lock_fh.closed:
            self._lock_fh.close()  # releases the lock
        if error is not None:
            raise error

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            self.close()
        except ResourceError:
            if exc_type is None:  # else the error already under way is the one to show
                raise

    # -- queries ----------------------------------------------------------------------------------
    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == kind]

    def usage(self, mode: str | None = None) -> dict[str, int]:
        """Tokens of all journaled results (and failed batch attempts); only ``mode``'s
        (``"sync"`` or ``"batch"``, which are priced differently) if given."""
        total: dict[str, int] = {}
        for r in self.records:
            kind = r.get("kind")
            if kind not in ("result", "attempt_failed"):
                continue
            if mode is not None and (r.get("mode") or ("batch" if kind == "attempt_failed" else "sync")) != mode:
                continue
            for k, v in (r.get("usage") or {}).items():
                if isinstance(v, int):
                    total[k] = total.get(k, 0) + v
        return total


def _better(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether result ``new`` is at least as good an answer as ``old`` (``ok`` first, then more labels)."""
    rank = lambda r: (r.get("status") == "ok", len(r.get("labels") or []))  # noqa: E731
    return rank(new) >= rank(old)


def _check_record(record: Any) -> None:
    """ValueError unless ``record`` is a journal record (a result needs its id, status and labels)."""
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    if record.get("kind") == "result":
        if not isinstance(record.get("custom_id"), str):
            raise ValueError("a result without a custom_id")
        if record.get("status") not in STATUSES or not isinstance(record.get("labels"), list):
            raise ValueError(f"result {record['custom_id']!r} without a valid status and labels")


def read_manifest(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of a run folder; :class:`InputError` if missing or malformed."""
    path = Path(run_dir) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file; {run_dir} is not a negvocab LLM run folder") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: unreadable run manifest ({e}); use a new run_dir", param="run_dir") from e
    if (
        not isinstance(manifest, dict)
        or manifest.get("journal_version") != JOURNAL_VERSION
        or "identity" not in manifest
    ):
        raise InputError(
            f"{path}: not a version-{JOURNAL_VERSION} negvocab run manifest; use a new run_dir", param="run_dir"
        )
    return manifest


def _diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    parts = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a != b:
            show = lambda v: v if isinstance(v, (int, float, str)) and len(str(v)) < 40 else "..."  # noqa: E731
            parts.append(f"{key}: {show(a)!r} there, {show(b)!r} now")
    return "; ".join(parts[:4]) or "different identity"
