"""The run journal: fsynced lines, torn last line, damaged journal, run identity."""

from __future__ import annotations

import json
import logging

import pytest

from negvocab.core.errors import InputError
from negvocab.llm.journal import JOURNAL, MANIFEST, Journal, decode_line, identity_hash, read_manifest

IDENT = {"task": "gpt_siblings", "model": "m", "prompt_sha256": "abc", "n": 20}


def rec(cid, labels=("a",)):
    return {
        "kind": "result",
        "custom_id": cid,
        "status": "ok",
        "labels": list(labels),
        "usage": {"prompt_tokens": 2, "completion_tokens": 3},
    }


def test_append_and_reload(tmp_path):
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0"), rec("y/r0")])
        j.append([rec("x/r1", ["b", "c"])])
    lines = (tmp_path / JOURNAL).read_bytes().splitlines()
    assert decode_line(lines[0]) == {"kind": "identity", "identity": IDENT, "identity_sha256": j.identity_sha256}
    assert [json.loads(s)["custom_id"] for s in lines[1:]] == ["x/r0", "y/r0", "x/r1"]
    j2 = Journal(tmp_path, IDENT)
    assert set(j2.results) == {"x/r0", "y/r0", "x/r1"}
    assert j2.results["x/r1"]["labels"] == ["b", "c"]
    assert j2.usage() == {"prompt_tokens": 6, "completion_tokens": 9}
    assert read_manifest(tmp_path)["identity_sha256"] == identity_hash(IDENT)
    j2.close()


def test_torn_last_line_is_ignored_and_cut(tmp_path, caplog):
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0"), rec("y/r0")])
    path = tmp_path / JOURNAL
    whole = path.read_bytes()
    with open(path, "ab") as fh:  # a crash in the middle of a write
        fh.write(json.dumps(rec("z/r0")).encode()[:25])
    j = Journal(tmp_path, IDENT)
    assert set(j.results) == {"x/r0", "y/r0"} and j.torn_lines == 1
    assert "torn last line" in caplog.text
    assert path.read_bytes() == whole  # cut, so the next line starts clean
    j.append([rec("z/r0")])
    j.close()
    assert set(Journal(tmp_path, IDENT, readonly=True).results) == {"x/r0", "y/r0", "z/r0"}


def test_complete_json_without_newline_counts_as_torn(tmp_path):
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0")])
    with open(tmp_path / JOURNAL, "ab") as fh:
        fh.write(json.dumps(rec("y/r0")).encode())
    assert set(Journal(tmp_path, IDENT, readonly=True).results) == {"x/r0"}


@pytest.mark.parametrize(
    ("line", "why"),
    [
        (b"{not json", "Expecting property name"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"kind": "result"}', "a result without a custom_id"),
        (b'{"kind": "result", "custom_id": "z/r0", "labels": ["a"]}', "result 'z/r0' without a valid status"),
    ],
)
def test_damaged_middle_line_is_an_error(tmp_path, line, why):
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0")])
    with open(tmp_path / JOURNAL, "ab") as fh:
        fh.write(line + b"\n" + json.dumps(rec("y/r0")).encode() + b"\n")
    with pytest.raises(InputError, match=rf"line 3 is damaged \({why}.*delete that line to ask its requests again"):
        Journal(tmp_path, IDENT)


@pytest.mark.parametrize("change", [{"model": "other"}, {"prompt_sha256": "def"}, {"n": 21}])
def test_another_identity_is_refused(tmp_path, change):
    Journal(tmp_path, IDENT).close()
    with pytest.raises(InputError, match="holds another run") as e:
        Journal(tmp_path, {**IDENT, **change})
    key = next(iter(change))
    assert key in str(e.value)


def test_readonly_creates_nothing(tmp_path):
    j = Journal(tmp_path / "run", IDENT, readonly=True)
    assert j.results == {} and not (tmp_path / "run").exists()
    with pytest.raises(RuntimeError):
        j.append([rec("x/r0")])


def test_journal_without_manifest_is_refused(tmp_path):
    (tmp_path / JOURNAL).write_text(json.dumps(rec("x/r0")) + "\n")
    with pytest.raises(InputError, match="not a negvocab LLM run folder; .*holds no identity line to rebuild it from"):
        Journal(tmp_path, IDENT)
    (tmp_path / MANIFEST).write_text("{oops")
    with pytest.raises(InputError, match="unreadable run manifest"):
        Journal(tmp_path, IDENT)


def test_a_run_folder_is_locked_while_a_process_writes_it(tmp_path):
    j = Journal(tmp_path, IDENT)
    with pytest.raises(InputError, match="in use by another negvocab process"):
        Journal(tmp_path, IDENT)  # a second writer (another process running the same command)
    assert set(Journal(tmp_path, IDENT, readonly=True).results) == set()  # readers (dry runs) are not blocked
    j.close()
    with Journal(tmp_path, IDENT) as again:  # released on close (and by the OS when a process dies)
        again.append([rec("x/r0")])


@pytest.mark.parametrize("damage", ["deleted", "garbage"])
def test_a_lost_manifest_is_rebuilt_from_the_journal(tmp_path, caplog, damage):
    # the journal's first line holds the identity: a deleted or damaged manifest.json costs nothing
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0"), rec("y/r0")])
    if damage == "deleted":
        (tmp_path / MANIFEST).unlink()
    else:
        (tmp_path / MANIFEST).write_text("{oops")
    with caplog.at_level(logging.WARNING), Journal(tmp_path, IDENT) as again:
        assert set(again.results) == {"x/r0", "y/r0"}
    assert "rebuilt from the journal's identity line" in caplog.text
    assert json.loads((tmp_path / MANIFEST).read_text())["identity"] == IDENT
    assert set(Journal.open_existing(tmp_path).results) == {"x/r0", "y/r0"}
    (tmp_path / MANIFEST).unlink()
    with pytest.raises(InputError, match="holds another run .*model"):
        Journal(tmp_path, {**IDENT, "model": "other"})  # the identity line still guards the folder


def test_a_journal_begun_before_identity_lines_gets_one(tmp_path):
    # an older journal (results only) with its manifest: the next open adds the identity line, so
    # from then on a lost manifest is rebuilt too
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0")])
    lines = (tmp_path / JOURNAL).read_text().splitlines()
    (tmp_path / JOURNAL).write_text("\n".join(lines[1:]) + "\n")  # as written before identity lines
    Journal(tmp_path, IDENT).close()
    kinds = [json.loads(x)["kind"] for x in (tmp_path / JOURNAL).read_text().splitlines()]
    assert kinds == ["result", "identity"]
    (tmp_path / MANIFEST).unlink()
    with Journal(tmp_path, IDENT) as again:
        assert set(again.results) == {"x/r0"}
    assert kinds == [json.loads(x)["kind"] for x in (tmp_path / JOURNAL).read_text().splitlines()]  # no second line


def test_a_flipped_bit_is_detected_by_the_line_checksum(tmp_path):
    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0", ["umbrella"]), rec("y/r0", ["kite"])])
    path = tmp_path / JOURNAL
    data = bytearray(path.read_bytes())
    i = data.index(b"umbrella")
    data[i] ^= 0b10  # "umbrella" -> "wmbrella": still valid JSON, a label that was never answered
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"line 2 is damaged \(checksum mismatch.*delete that line") as e:
        Journal(tmp_path, IDENT)
    assert "\n" not in str(e.value)


def test_old_lines_without_a_checksum_still_read(tmp_path):
    import re

    with Journal(tmp_path, IDENT) as j:
        j.append([rec("x/r0", ["b", "c"])])
    path = tmp_path / JOURNAL
    assert all(line.endswith(b'"}') and b'"crc32":"' in line for line in path.read_bytes().splitlines())
    old = re.sub(rb',"crc32":"[0-9a-f]{8}"\}\n', b"}\n", path.read_bytes())  # as older versions wrote them
    path.write_bytes(old)
    with Journal(tmp_path, IDENT) as j2:
        assert j2.results["x/r0"]["labels"] == ["b", "c"] and "crc32" not in j2.results["x/r0"]
        j2.append([rec("y/r0")])  # a journal may hold both kinds of line
    assert set(Journal(tmp_path, IDENT, readonly=True).results) == {"x/r0", "y/r0"}


class _FullDisk:
    """A journal file whose buffered write cannot reach the disk (ENOSPC on flush and close)."""

    def __init__(self, fh):
        self.fh, self.closed = fh, False

    def write(self, data):
        return len(data)

    def flush(self):
        import errno

        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        return self.fh.fileno()

    def close(self):
        self.closed = True
        self.fh.close()
        self.flush()


def test_a_full_disk_is_one_line_also_when_the_journal_closes(tmp_path):
    from negvocab.core.errors import ResourceError

    j = Journal(tmp_path, IDENT)
    j._fh = _FullDisk(j._fh)
    with pytest.raises(
        ResourceError, match=r"cannot write the run journal .*: No space left on device; free space there"
    ):
        j.append([rec("x/r0")])
    with pytest.raises(ResourceError, match=r"No space left on device"):
        j.close()
    assert "x/r0" not in Journal(tmp_path, IDENT, readonly=True).results
    j3 = Journal(tmp_path, IDENT)  # the lock was released
    j3._fh = _FullDisk(j3._fh)
    with pytest.raises(RuntimeError, match="first"), j3:  # an error under way is not replaced by the close's
        raise RuntimeError("first")


def test_a_full_disk_during_a_build_is_one_line(endpoint, tmp_path, synonym_filter, monkeypatch):
    import errno

    from negvocab import build_gpt_vocabulary
    from negvocab.core.errors import ResourceError
    from negvocab.llm import journal as journal_mod
    from tests.llm.conftest import FAST

    calls = {"n": 0}
    real = journal_mod.os.fsync

    def fsync(fd):
        calls["n"] += 1
        if calls["n"] > 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd)

    monkeypatch.setattr(journal_mod.os, "fsync", fsync)
    with pytest.raises(ResourceError, match=r"No space left on device") as e:
        build_gpt_vocabulary(
            "gpt-test",
            per_class=4,
            rounds=2,
            classes=20,
            run_dir=tmp_path / "run",
            synonym_filter=synonym_filter,
            client_options=FAST,
        )
    assert "\n" not in str(e.value)
