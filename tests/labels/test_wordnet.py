"""The WordNet 3.0 loader: version check, the system-database copy, lexnames, index.sense, errors."""

from __future__ import annotations

import os

import pytest

from negvocab.core.errors import ResourceError
from negvocab.labels import wordnet as wnmod
from tests.labels.conftest import SYSTEM_WORDNET, wordnet_file

needs_system = pytest.mark.skipif(not (SYSTEM_WORDNET / "data.noun").is_file(), reason="no system WordNet")


def test_loaded_wordnet_is_3_0(wn):
    assert wnmod._count_noun_synsets(wn) == wnmod.NOUN_SYNSETS_30 == 82115
    assert wn.get_version() == "3.0"
    assert wn.synset_from_pos_and_offset("n", 1440764).lemma_names()[0] == "tench"
    assert wn.synset_from_pos_and_offset("n", 15075141).lemma_names()[0] == "toilet_tissue"
    assert wnmod.load_wordnet() is wn  # cached


def test_lexnames_table_agrees_with_the_data_files(wn):
    # every synset's lex_filenum must name a file of its own syntactic category
    assert len(wnmod.LEXNAMES) == 45
    category = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
    for pos in category:
        used = {int(line.split(" ", 2)[1]) for line in wordnet_file(wn, f"data.{pos}")}
        for num in used:
            name, cat = wnmod.LEXNAMES[num]
            assert name.startswith(pos + "."), (pos, num, name)
            assert cat == category[pos]
    lines = wnmod.lexnames_text().splitlines()
    assert lines[5] == "05\tnoun.animal\t1" and lines[13] == "13\tnoun.food\t1" and lines[44] == "44\tadj.ppl\t3"


def test_index_sense_matches_the_sense_keys_nltk_computes(wn):
    # nltk builds each lemma's sense key from the data files itself: every one must be in the
    # index.sense we generate (or the one shipped), pointing at the lemma's synset. Every 3rd adjective
    # (satellite keys name their cluster head: the tricky part) and every 25th other synset.
    keys = {}
    with wn.root.join("index.sense").open() as fh:
        for line in fh:
            key, offset, _sense, _count = line.decode().split()
            keys[key] = int(offset)
    assert len(keys) == 206_949  # sense keys of WordNet 3.0 (206,941 distinct word-sense pairs)
    checked = 0
    for name, step in (("adj", 3), ("noun", 25), ("verb", 25), ("adv", 25)):
        offsets = [int(line[:8]) for line in wordnet_file(wn, f"data.{name}")][::step]
        for offset in offsets:
            synset = wn.synset_from_pos_and_offset(name[0] if name != "adv" else "r", offset)
            for lemma in synset.lemmas():
                assert keys[lemma.key()] == synset.offset(), lemma
                checked += 1
    assert checked > 15_000
    assert wn.lemma_from_key("dog%1:05:00::").synset().name() == "dog.n.01"
    assert wn.lemma_from_key("emergent%5:00:00:nascent:00").synset().offset() == 3553


def _linked_source(folder):
    """A WordNet 'database' whose files are links into the system one (cheap to make)."""
    folder.mkdir()
    for path in SYSTEM_WORDNET.iterdir():
        if path.is_file():
            (folder / path.name).symlink_to(path)
    return folder


@needs_system
def test_prepare_copy_is_a_complete_reusable_copy(tmp_path, cache_dir):
    src = _linked_source(tmp_path / "dict")
    target = wnmod.prepare_copy(src)
    assert target == cache_dir / "nltk_data" / "corpora" / "wordnet"
    names = {p.name for p in target.iterdir()}
    assert {"lexnames", "index.sense", "data.noun", "noun.exc"} <= names
    assert not any(p.is_symlink() for p in target.iterdir())
    assert [p.name for p in target.parent.iterdir()] == ["wordnet"]  # no temp folder left behind
    stamp_time = (target / "lexnames").stat().st_mtime_ns
    assert wnmod.prepare_copy(src) == target
    assert (target / "lexnames").stat().st_mtime_ns == stamp_time  # reused, not rebuilt
    # a changed source is copied again
    text = (src / "cntlist.rev").read_text(encoding="utf-8")
    (src / "cntlist.rev").unlink()
    (src / "cntlist.rev").write_text(text + "zzz%1:05:00:: 1 1\n", encoding="utf-8")
    wnmod.prepare_copy(src)
    assert (target / "cntlist.rev").read_text().endswith("zzz%1:05:00:: 1 1\n")


@needs_system
def test_env_var_wins_and_another_version_is_refused(tmp_path, cache_dir, monkeypatch):
    src = _linked_source(tmp_path / "wn31")
    lines = (src / "data.noun").read_text(encoding="utf-8").splitlines(keepends=True)
    (src / "data.noun").unlink()
    (src / "data.noun").write_text("".join(lines[:5000]), encoding="utf-8")
    monkeypatch.setenv(wnmod.WORDNET_DIR_ENV, str(src))
    with pytest.raises(ResourceError, match=r"needs WordNet 3\.0 \(82115 noun synsets"):
        wnmod._load()


def test_env_var_pointing_nowhere_is_one_clear_error(tmp_path, cache_dir, monkeypatch):
    monkeypatch.setenv(wnmod.WORDNET_DIR_ENV, str(tmp_path / "missing"))
    with pytest.raises(ResourceError, match="is not a WordNet database"):
        wnmod._load()


def test_no_wordnet_names_both_ways_to_install(monkeypatch):
    monkeypatch.delenv(wnmod.WORDNET_DIR_ENV, raising=False)
    monkeypatch.setattr(wnmod, "_nltk_roots", list)
    monkeypatch.setattr(wnmod, "_system_dirs", list)
    with pytest.raises(ResourceError) as err:
        wnmod._load()
    msg = str(err.value)
    assert "WordNet 3.0 not found" in msg
    assert "apt-get install wordnet-base" in msg and "python -m nltk.downloader wordnet" in msg
    assert "\n" not in msg


def test_module_entry_point_reports_ready(wn, capsys):
    assert wnmod.main([]) == 0
    assert "WordNet 3.0 ready" in capsys.readouterr().out


def test_entry_point_failure_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr(wnmod, "load_wordnet", lambda: wnmod._load())
    monkeypatch.delenv(wnmod.WORDNET_DIR_ENV, raising=False)
    monkeypatch.setattr(wnmod, "_nltk_roots", list)
    monkeypatch.setattr(wnmod, "_system_dirs", list)
    assert wnmod.main([]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: WordNet 3.0 not found") and err.count("\n") == 1


def test_system_dirs_honour_wnsearchdir(tmp_path, monkeypatch):
    (tmp_path / "data.noun").write_text("x")
    monkeypatch.setenv("WNSEARCHDIR", str(tmp_path))
    assert wnmod._system_dirs()[0] == tmp_path
    os.remove(tmp_path / "data.noun")
    assert tmp_path not in wnmod._system_dirs()


@needs_system
def test_nltk_data_zip_is_found_and_read(tmp_path, cache_dir, monkeypatch):
    # python -m nltk.downloader wordnet leaves corpora/wordnet.zip; nltk reads it in place
    import zipfile

    import nltk

    folder = wnmod.prepare_copy(_linked_source(tmp_path / "dict"))
    data = tmp_path / "nltk_data"
    (data / "corpora").mkdir(parents=True)
    with zipfile.ZipFile(data / "corpora" / "wordnet.zip", "w", zipfile.ZIP_STORED) as zf:
        for path in sorted(folder.iterdir()):
            zf.write(path, f"wordnet/{path.name}")
    monkeypatch.setattr(nltk.data, "path", [str(data)])
    monkeypatch.delenv(wnmod.WORDNET_DIR_ENV, raising=False)
    roots = wnmod._nltk_roots()
    assert len(roots) == 1 and "wordnet.zip" in str(roots[0])
    reader = wnmod._load()
    assert "wordnet.zip" in str(reader.root)
    assert reader.synset_from_pos_and_offset("n", 2441942).lemma_names() == ["weasel"]


@needs_system
def test_a_read_only_cache_falls_back_to_a_private_copy(tmp_path, cache_dir, monkeypatch, caplog):
    # root ignores permission bits, so the read-only file system is injected where the copy is made
    import errno
    import shutil
    import tempfile

    real = shutil.copyfile

    def read_only(src, dst, **kw):
        if str(dst).startswith(str(cache_dir)):
            raise OSError(errno.EROFS, "Read-only file system", str(dst))
        return real(src, dst, **kw)

    monkeypatch.setattr(shutil, "copyfile", read_only)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "systmp"))
    (tmp_path / "systmp").mkdir()
    src = _linked_source(tmp_path / "dict")
    target = wnmod.prepare_copy(src)
    assert target.is_relative_to(tmp_path / "systmp") and (target / "lexnames").is_file()
    assert "cannot copy WordNet" in caplog.text and "using a private copy" in caplog.text
    reader = wnmod._open_reader(str(target), str(src))  # and it reads as WordNet 3.0
    assert reader.synset_from_pos_and_offset("n", 1440764).lemma_names()[0] == "tench"
