"""CLI: classes, candidates, filter, merge, info; bad input is one error line and writes nothing."""

from __future__ import annotations

import csv
import json

import pytest
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.vocab import Vocabulary


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def _error_line(result):
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.fixture
def gpt_file(tmp_path):
    vocab = Vocabulary.from_labels(
        ["tayra", "weasels", "gadget", "Toilet Tissue", "sea otter"],
        source="gpt",
        meta={"tayra": {"classes": ["n02441942"]}, "weasels": {"classes": ["n02441942"]}},
    )
    return vocab.save(tmp_path / "gpt.json")


# -- classes ---------------------------------------------------------------------------------------
def test_classes_tsv_to_stdout(runner, classes):
    result = run(runner, "classes")
    assert result.exit_code == 0
    rows = list(csv.reader(result.stdout.splitlines(), delimiter="\t"))
    assert rows[0] == ["wnid", "name", "synonyms"] and len(rows) == 1001
    assert rows[1] == ["n01440764", "tench", "tench|Tinca tinca"]
    assert [r[0] for r in rows[1:]] == list(classes.wnids)


@pytest.mark.parametrize("fmt", ["txt", "csv", "json", "TSV"])
def test_classes_export_formats(runner, tmp_path, classes, fmt):
    out = tmp_path / f"classes.{fmt.lower()}"
    result = run(runner, "classes", "--format", fmt, "-o", out)
    assert result.exit_code == 0 and "wrote 1000 classes" in result.stderr
    text = out.read_text(encoding="utf-8")
    if fmt == "txt":
        assert text.splitlines() == list(classes.names)
    elif fmt == "json":
        doc = json.loads(text)
        assert doc[999] == {
            "index": 999,
            "wnid": "n15075141",
            "name": "toilet paper",
            "synonyms": list(classes.synonyms[999]),
        }
    else:
        rows = list(csv.reader(text.splitlines(), delimiter="," if fmt == "csv" else "\t"))
        assert [r[1] for r in rows[1:]] == list(classes.names)
        assert rows[1 + 837][2].split("|") == ["sunglasses", "dark glasses", "shades"]


def test_classes_format_follows_the_output_suffix(runner, tmp_path):
    out = tmp_path / "classes.json"
    assert run(runner, "classes", "-o", out).exit_code == 0
    assert json.loads(out.read_text(encoding="utf-8"))[0]["name"] == "tench"
    out = tmp_path / "classes.xlsx"  # not a format it writes: refused, as candidates does
    assert "the --output suffix (or give --format) must be one of txt, tsv, csv, json; got 'xlsx'" in _error_line(
        run(runner, "classes", "-o", out)
    )
    assert not out.exists()
    assert run(runner, "classes", "-o", out, "-f", "tsv").exit_code == 0  # unless the format is given
    assert out.read_text(encoding="utf-8").startswith("wnid\tname\tsynonyms\n")
    out = tmp_path / "classes"
    assert run(runner, "classes", "-o", out).exit_code == 0 and out.read_text(encoding="utf-8").startswith("wnid\t")


def test_classes_unknown_format(runner, tmp_path):
    out = tmp_path / "c.xml"
    line = _error_line(run(runner, "classes", "--format", "xml", "-o", out))
    assert "--format must be one of txt, tsv, csv, json; got 'xml'" in line
    assert not out.exists()


# -- candidates ------------------------------------------------------------------------------------
def test_candidates_txt_matches_the_api(runner, tmp_path, neglabel_pool):
    out = tmp_path / "pool.txt"
    result = run(runner, "candidates", "-o", out)
    assert result.exit_code == 0 and f"wrote {len(neglabel_pool)} candidates" in result.stdout
    assert out.read_text(encoding="utf-8").splitlines() == [c.text for c in neglabel_pool]


def test_candidates_table_with_options(runner, tmp_path, synfilter):
    from negvocab.labels.candidates import wordnet_candidates

    out = tmp_path / "pool.tsv"
    result = run(runner, "candidates", "--preset", "all", "--pos", "a", "--drop-id", "-o", out)
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.read_text(encoding="utf-8").splitlines(), delimiter="\t"))
    expected = [c for c in wordnet_candidates("all", pos="a") if not synfilter.is_id(c.text)]
    assert [r["text"] for r in rows] == [c.text for c in expected]
    assert rows[0] == {"text": expected[0].text, "pos": expected[0].pos, "lexname": expected[0].lexname,
                       "synset": expected[0].synset, "offset": str(expected[0].offset)}  # fmt: skip
    assert "ID labels removed" in result.stdout
    out = tmp_path / "nouns.txt"
    result = run(runner, "candidates", "--pos", "n", "--exclude", "noun.food", "-o", out)
    assert "preset neglabel excluding only noun.food" in result.stdout  # the preset's list was replaced
    texts = out.read_text(encoding="utf-8").splitlines()
    assert texts == [c.text for c in wordnet_candidates(pos="n", exclude_lexnames=["noun.food"])]
    assert "tench" in texts and "hot dog" not in texts


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "negmine"], "unknown candidate preset 'negmine'"),
        (["--pos", "n,q"], "unknown part of speech 'q'"),
        (["--exclude", "noun.pets"], "unknown lexicographer file 'noun.pets'"),
    ],
)
def test_candidates_bad_options_write_nothing(runner, tmp_path, args, message):
    out = tmp_path / "pool.txt"
    assert message in _error_line(run(runner, "candidates", *args, "-o", out))
    assert list(tmp_path.iterdir()) == []


def test_candidates_unknown_output_suffix(runner, tmp_path):
    assert "the --output suffix must be one of" in _error_line(run(runner, "candidates", "-o", tmp_path / "pool.xlsx"))
    assert list(tmp_path.iterdir()) == []


# -- filter ----------------------------------------------------------------------------------------
def test_filter_reports_what_and_why(runner, tmp_path, gpt_file):
    out, report = tmp_path / "clean.json", tmp_path / "report.json"
    result = run(runner, "filter", gpt_file, "-o", out, "--removed", report, "-v")
    assert result.exit_code == 0, result.output
    assert "removed 'weasels': weasel (n02441942) via 'weasel' [clean-name/plural]" in result.stdout
    assert "removed 'Toilet Tissue': toilet paper (n15075141)" in result.stdout
    assert "removed 2 of 5 labels (clean-name/plural 1, wordnet-synonym/normalised 1); kept 3" in result.stdout
    # without -v: per rule, its count and examples (the class each names); the summary line last
    default = run(runner, "filter", gpt_file, "-o", out, "--overwrite").stdout.splitlines()
    assert default == [
        "  clean-name/plural: 1, e.g. 'weasels' (weasel)",
        "  wordnet-synonym/normalised: 1, e.g. 'Toilet Tissue' (toilet paper)",
        f"removed 2 of 5 labels (clean-name/plural 1, wordnet-synonym/normalised 1); kept 3 -> {out}",
    ]
    vocab = Vocabulary.load(out)
    assert vocab.labels == ["tayra", "gadget", "sea otter"] and vocab.source == "gpt"
    assert vocab.meta == {"tayra": {"classes": ["n02441942"]}}
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert doc["removed_count"] == 2 and doc["kept_count"] == 3
    assert doc["removed"]["weasels"]["rule"] == "clean-name/plural"
    assert doc["input_sha256"] == Vocabulary.load(gpt_file).sha256


def test_filter_summary_is_short_and_verbose_lists_every_removed_label(runner, tmp_path):
    # 12 ID class names (exact) and 4 plurals: the default shows 3 examples per rule, -v all 16
    names = "tench goldfish weasel hen ostrich mink otter skunk badger llama ox zebra".split()
    src = tmp_path / "v.txt"
    src.write_text("\n".join([*names, "tenches", "hens", "ostriches", "badgers", "meadow"]) + "\n", encoding="utf-8")
    out = tmp_path / "o.txt"
    lines = run(runner, "filter", src, "-o", out).stdout.splitlines()
    assert lines == [
        "  clean-name/exact: 12, e.g. 'tench' (tench), 'goldfish' (goldfish), 'weasel' (weasel), ...",
        "  clean-name/plural: 4, e.g. 'tenches' (tench), 'hens' (hen), 'ostriches' (ostrich), ...",
        "  (-v lists all 16 removed labels and why)",
        f"removed 16 of 17 labels (clean-name/exact 12, clean-name/plural 4); kept 1 -> {out}",
    ]
    verbose = run(runner, "filter", src, "-o", out, "--overwrite", "--verbose").stdout.splitlines()
    removed = [ln.split(":")[0].removeprefix("removed ").strip("'") for ln in verbose[:-1]]
    assert sorted(removed) == sorted([*names, "tenches", "hens", "ostriches", "badgers"])
    assert verbose[-1] == lines[-1] and out.read_text(encoding="utf-8") == "meadow\n"


def test_filter_report_is_the_old_name_of_removed(runner, tmp_path, gpt_file):
    out, new, old = tmp_path / "a.json", tmp_path / "new.json", tmp_path / "old.json"
    assert run(runner, "filter", gpt_file, "-o", out, "--removed", new).exit_code == 0
    with pytest.warns(DeprecationWarning, match="--report is renamed --removed"):
        result = run(runner, "filter", gpt_file, "-o", tmp_path / "b.json", "--report", old)
    assert result.exit_code == 0 and "warning: filter --report is renamed --removed" in result.stderr
    strip = lambda d: {k: v for k, v in d.items() if k != "output"}  # noqa: E731
    assert strip(json.loads(old.read_text())) == strip(json.loads(new.read_text()))
    both = _error_line(run(runner, "filter", gpt_file, "-o", tmp_path / "c.json", "--removed", new, "--report", old))
    assert "give --removed or --report (its old name), not both" in both and not (tmp_path / "c.json").exists()
    options = run(runner, "filter", "--help").stdout.split("Examples")[0]
    assert "--removed" in options and "--report" not in options  # hidden; --removed is shown


def test_filter_text_file_quietly_to_text(runner, tmp_path):
    src = tmp_path / "labels.txt"
    src.write_text("tench\ngadget\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    result = run(runner, "filter", src, "-o", out, "-q", "--no-plurals")
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 1 and "removed 1 of 2 labels" in result.stdout
    assert out.read_text(encoding="utf-8") == "gadget\n"


def test_filter_against_custom_id_classes(runner, tmp_path, gpt_file):
    # only the given ID space is filtered: weasel stays when the classes are tench and goldfish,
    # and a class name of a custom space goes
    wnids, names = tmp_path / "wnids.txt", tmp_path / "names.txt"
    wnids.write_text("n01440764\nn01443537\n", encoding="utf-8")
    names.write_text("sea otter\n", encoding="utf-8")
    out = tmp_path / "a.json"
    assert run(runner, "filter", gpt_file, "-o", out, "--id-classes", wnids).exit_code == 0
    assert Vocabulary.load(out).labels == Vocabulary.load(gpt_file).labels
    result = run(runner, "filter", gpt_file, "-o", out, "--id-classes", names, "--overwrite")
    assert "removed 1 of 5 labels" in result.stdout
    assert "sea otter" not in Vocabulary.load(out).labels and "weasels" in Vocabulary.load(out).labels
    bad = run(runner, "filter", gpt_file, "-o", out, "--id-classes", tmp_path / "absent.txt", "--overwrite")
    assert bad.exit_code == 2 and "no such ID classes file" in bad.output


def test_filter_errors_write_nothing(runner, tmp_path):
    out = tmp_path / "out.json"
    missing = tmp_path / "missing.json"
    assert f"{missing}: no such vocabulary file" in _error_line(run(runner, "filter", missing, "-o", out))
    bad = tmp_path / "bad.json"
    bad.write_text('{"labels": [', encoding="utf-8")
    assert "bad.json: malformed JSON" in _error_line(run(runner, "filter", bad, "-o", out))
    empty = tmp_path / "empty.txt"
    empty.write_text("\n# nothing\n", encoding="utf-8")
    assert "the vocabulary file has no labels" in _error_line(run(runner, "filter", empty, "-o", out))
    only_id = tmp_path / "id.txt"
    only_id.write_text("tench\nGoldfish\n", encoding="utf-8")
    report = tmp_path / "r.json"
    assert "removed all 2 labels" in _error_line(run(runner, "filter", only_id, "-o", out, "--removed", report))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "empty.txt", "id.txt"]


def test_unwritable_output_is_one_line(runner, tmp_path, gpt_file):
    folder = tmp_path / "a_folder"
    folder.mkdir()
    assert f"cannot write {folder}" in _error_line(run(runner, "filter", gpt_file, "-o", folder))
    out = tmp_path / "clean.json"
    assert f"cannot write {folder}: it is a folder" in _error_line(
        run(runner, "filter", gpt_file, "-o", out, "--removed", folder)
    )
    assert not out.exists()


def test_filter_writes_neither_file_when_one_cannot_be_written(runner, tmp_path, gpt_file):
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("a file where a folder should be", encoding="utf-8")
    out, report = tmp_path / "clean.json", tmp_path / "report.json"
    line = _error_line(run(runner, "filter", gpt_file, "-o", out, "--removed", blocker / "report.json"))
    assert f"cannot write {blocker / 'report.json'}" in line
    assert not out.exists()
    line = _error_line(run(runner, "filter", gpt_file, "-o", blocker / "clean.json", "--removed", report))
    assert f"cannot write {blocker / 'clean.json'}" in line
    assert not report.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpt.json", "not_a_folder"]  # no temporary files
    odd = Vocabulary.from_labels(["tench", "#hashtag", "gadget"], source="gpt").save(tmp_path / "odd.json")
    line = _error_line(run(runner, "filter", odd, "-o", tmp_path / "odd.txt", "--removed", report))
    assert "label '#hashtag' would not read back from a text file; save as .json" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpt.json", "not_a_folder", "odd.json"]


# -- merge and info --------------------------------------------------------------------------------
def test_merge_unions_in_order(runner, tmp_path, gpt_file):
    other = tmp_path / "more.txt"
    other.write_text("kayak\ntayra\n", encoding="utf-8")
    out = tmp_path / "union.json"
    result = run(runner, "merge", gpt_file, other, "-o", out)
    assert result.exit_code == 0, result.output
    assert "-> 6 unique labels" in result.stdout
    union = Vocabulary.load(out)
    assert union == Vocabulary.union(Vocabulary.load(gpt_file), Vocabulary.load(other))
    assert union.labels[-1] == "kayak" and union.meta["tayra"]["sources"] == ["gpt", "file"]


def test_merge_with_a_bad_input_writes_nothing(runner, tmp_path, gpt_file):
    out = tmp_path / "union.json"
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9\n".encode("latin-1"))
    assert "latin1.txt: not a UTF-8" in _error_line(run(runner, "merge", gpt_file, bad, "-o", out))
    assert not out.exists()


def test_info_text_and_json(runner, tmp_path, gpt_file):
    union = Vocabulary.union(Vocabulary.load(gpt_file), Vocabulary.from_labels(["kayak", "tayra"], source="eoe"))
    path = union.save(tmp_path / "u.json")
    result = run(runner, "info", path, "-n", "2")
    assert result.exit_code == 0
    assert f"{path}: 6 labels, source union, sha256 {union.short_hash}" in result.stdout
    assert "per source: gpt 5, eoe 2" in result.stdout
    assert "labels: tayra, weasels ..." in result.stdout
    doc = json.loads(run(runner, "info", path, "--json").stdout)
    assert doc["size"] == 6 and doc["per_source"] == {"gpt": 5, "eoe": 2} and doc["sha256"] == union.sha256
    assert doc["settings"]["parts"][1]["source"] == "eoe"


def test_info_on_a_merged_vocabulary_is_a_short_grouped_summary(runner, tmp_path):
    """A union's parts one line each (not their nested settings: 100 lines before), how it was made on
    one line; --json still prints every setting."""
    settings = {
        "model": "gpt-4o",
        "prompt": {"file": "gpt_siblings.txt", "template": "x" * 200},
        "classes": [f"n{i:08d}" for i in range(1000)],
        "removed": {f"label{i}": {"wnid": f"n{i:08d}", "rule": "clean-name/exact"} for i in range(30)},
    }
    inner = Vocabulary.from_labels(["kayak", "tayra"], source="gpt", settings=settings)
    union = Vocabulary.union(inner, Vocabulary.from_labels(["canoe"], source="eoe", settings={"mode": "far"}))
    path = union.save(tmp_path / "u.json")
    lines = run(runner, "info", path).stdout.splitlines()
    start = lines.index("parts (2):")
    assert lines[start + 1] == f"  - gpt: 2 labels, sha256 {inner.sha256[:12]}"
    assert lines[start + 2].startswith("  - eoe: 1 labels, sha256 ")
    assert len(lines) <= 12 and max(len(ln) for ln in lines[1:]) <= 120, lines  # the first names the path
    assert not any("n00000999" in ln or "label29" in ln for ln in lines)  # the parts' settings: --json
    doc = json.loads(run(runner, "info", path, "--json").stdout)
    assert len(doc["settings"]["parts"][0]["settings"]["classes"]) == 1000


def test_info_settings_one_line_each_long_values_cut(runner, tmp_path):
    settings = {"prompt": {"file": "gpt_siblings.txt", "template": "x" * 200}, "classes": [f"c{i}" for i in range(50)]}
    lines = run(runner, "info", Vocabulary.from_labels(["kayak"], source="gpt", settings=settings).save(
        tmp_path / "v.json")).stdout.splitlines()  # fmt: skip
    start = lines.index("settings:")
    assert lines[start + 1].startswith('  prompt: {"file": "gpt_siblings.txt", "template": "xxx')
    assert lines[start + 1].endswith("...") and len(lines[start + 1]) <= 2 + len("prompt: ") + 80
    assert lines[start + 2] == "  classes: [50 items: c0, c1, c2, c3, c4, ...]"


def test_info_errors(runner, tmp_path):
    assert "no such vocabulary file" in _error_line(run(runner, "info", tmp_path / "nope.json"))
    wrong = tmp_path / "v.json"
    wrong.write_text(json.dumps({"schema_version": 9, "labels": ["a"]}), encoding="utf-8")
    assert "schema version 9 is not supported" in _error_line(run(runner, "info", wrong))


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(runner, tmp_path, gpt_file):
    before = gpt_file.read_bytes()
    (tmp_path / "more.txt").write_text("kayak\n", encoding="utf-8")
    same = tmp_path / "." / gpt_file.name  # another spelling of the same path
    for args in (
        ["filter", gpt_file, "-o", same],
        ["merge", tmp_path / "more.txt", gpt_file, "-o", gpt_file],
        ["build", "oracle", "--labels", tmp_path / "more.txt", "-o", tmp_path / "more.txt"],
    ):
        assert "it is an input of this command" in _error_line(run(runner, *args)), args
    assert gpt_file.read_bytes() == before and (tmp_path / "more.txt").read_text() == "kayak\n"
    line = _error_line(run(runner, "filter", gpt_file, "-o", tmp_path / "o.json", "--removed", tmp_path / "o.json"))
    assert "cannot write two outputs to" in line and not (tmp_path / "o.json").exists()


def test_info_warns_about_random_weights_also_through_a_merge(runner, tmp_path, gpt_file):
    rnd = tmp_path / "rnd.json"
    Vocabulary.from_labels(["kayak"], source="wordnet", settings={"random_weights": True}).save(rnd)
    assert "RANDOM" not in run(runner, "info", gpt_file).stdout
    merged = tmp_path / "u.json"
    assert run(runner, "merge", gpt_file, rnd, "-o", merged).exit_code == 0
    assert "WARNING: built with a RANDOM-weight model" in run(runner, "info", merged).stdout


def test_exports_to_a_folder_say_so(runner, tmp_path):
    for cmd in ("classes", "candidates"):
        assert "it is a folder; give a file name" in _error_line(run(runner, cmd, "-o", tmp_path))


def test_filter_on_cub_drops_its_spelling_and_qualified_names_and_keeps_other_species(runner, tmp_path):
    """``negvocab filter --id-classes cub200``: CUB's misspelt "Artic Tern" read right, a bare CUB name behind a
    qualifier of its class file removed; another species behind another region's or a colour's word kept."""
    leaks = ["arctic tern", "american tree sparrow", "northern cardinal", "northern mockingbird"]
    others = ["eurasian tree sparrow", "yellow cardinal", "blue mockingbird", "kayak"]
    src, out = tmp_path / "v.txt", tmp_path / "clean.json"
    src.write_text("\n".join([*leaks, *others]) + "\n")
    result = run(runner, "filter", src, "--id-classes", "cub200", "-o", out, "-v")
    assert result.exit_code == 0, result.output
    assert Vocabulary.load(out).labels == others
    assert "removed 'arctic tern': Artic Tern" in result.stdout and "[name-spelling/normalised]" in result.stdout
    assert "removed 'american tree sparrow': Tree Sparrow" in result.stdout and "/qualified]" in result.stdout
