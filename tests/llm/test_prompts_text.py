"""Prompt templates (packaged, hashed, validated) and label cleaning."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from negvocab.core.errors import InputError
from negvocab.llm.prompts import TASKS, load_prompt
from negvocab.llm.text import clean_label, clean_labels

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("task", sorted(TASKS))
def test_packaged_templates_are_the_top_level_files(task):
    t = load_prompt(task)
    raw = (ROOT / "prompts" / f"{task}.txt").read_bytes()
    assert t.sha256 == hashlib.sha256(raw).hexdigest() and t.version == t.sha256[:12]
    assert TASKS[task] <= t.fields
    values = {f: f"<{f}>" for f in t.fields}
    msgs = t.render(**values)
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert all(f"<{f}>" in msgs[0]["content"] + msgs[1]["content"] for f in t.fields)


def test_packaged_link_points_at_top_level_prompts():
    link = ROOT / "negvocab" / "prompts"
    assert link.resolve() == (ROOT / "prompts").resolve()


def test_custom_template(tmp_path):
    p = tmp_path / "mine.txt"
    p.write_text('[user]\nGive {n} things like {class_name}; JSON like {{"labels": []}}.\n')
    t = load_prompt("gpt_siblings", p)
    assert t.system == ""
    assert t.render(n=3, class_name="cat") == [
        {"role": "user", "content": 'Give 3 things like cat; JSON like {"labels": []}.'}
    ]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[user]\nGive {n} things.\n", r"must use placeholder\(s\) \['class_name'\]"),
        ("[user]\nGive {n} {class_name} {colour}.\n", r"unknown placeholder\(s\) \['colour'\]"),
        ("[system]\nonly a system part\n", "no \\[user\\] text"),
        ("[user]\nGive {n {class_name}\n", "malformed placeholder"),
    ],
)
def test_bad_templates(tmp_path, text, match):
    p = tmp_path / "bad.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        load_prompt("gpt_siblings", p)


def test_unknown_task_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="choose one of"):
        load_prompt("nope")
    with pytest.raises(InputError, match="no such prompt template"):
        load_prompt("eoe_far", tmp_path / "missing.txt")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (" 2. **Snow  Leopard**. ", "snow leopard"),
        ("- lynx", "lynx"),
        ('"Ocelot"', "ocelot"),
        ("(3) Sea otter", "sea otter"),
        ("a) Red fox", "red fox"),
        ("\u201cFennec fox\u201d", "fennec fox"),
        ("t-shirt", "t-shirt"),
        ("7-eleven store", "7-eleven store"),
        ("  ", ""),
        ("T. rex", "t. rex"),  # a letter and a dot start species names, not list items
        ("E. coli", "e. coli"),
        ("(b) Ocelot", "ocelot"),
        ("cafe\u0301 table", "caf\u00e9 table"),  # decomposed -> composed (NFKC)
        ("\ufeffsea\u200b otter", "sea otter"),  # BOM and zero-width space dropped
        ("\uff2c\uff59\uff4e\uff58", "lynx"),  # full-width letters
    ],
)
def test_clean_label(raw, clean):
    assert clean_label(raw) == clean


def test_clean_labels_drops_empty_and_repeats():
    assert clean_labels(["Lynx", "1. lynx", "", "Puma", "puma."]) == ["lynx", "puma"]
    assert clean_labels(["caf\u00e9 table", "cafe\u0301 table", "\ufeffocelot", "ocelot"]) == [
        "caf\u00e9 table",
        "ocelot",
    ]


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("gpt-4o-mini", (0.15, 0.60)),
        ("gpt-4o-mini-2024-07-18", (0.15, 0.60)),  # a dated snapshot of a known model
        ("openai/gpt-4.1-latest", (2.00, 8.00)),
        ("gpt-4o-2024-05-13", (5.00, 15.00)),  # a snapshot priced unlike its alias
        ("gpt-5-pro", None),  # another model, not gpt-5 at gpt-5's price
        ("o3-pro", None),
        ("o3-deep-research", None),
        ("llama-3-70b", None),
    ],
)
def test_prices_only_for_known_models_and_their_snapshots(model, price):
    from negvocab.llm.cost import price_of

    assert price_of(model) == price
    assert price_of(model, {model: (1.0, 2.0)}) == (1.0, 2.0)  # --price-in/--price-out win


def test_price_table_is_read_from_its_file_and_a_bad_row_is_one_line():
    """The shipped price file gives the table (an alias and its dated snapshot priced apart); a row
    with a missing cell, a word for a price or an unknown kind is refused naming the file and line."""
    from negvocab.core.errors import InputError
    from negvocab.llm.cost import PRICES, SNAPSHOT_PRICES, _read_prices, price_of

    assert PRICES["gpt-4o-mini"] == (0.15, 0.60) and SNAPSHOT_PRICES == {"gpt-4o-2024-05-13": (5.0, 15.0)}
    assert price_of("gpt-4o-2024-05-13") == (5.0, 15.0) and price_of("gpt-4o-2024-08-06") == PRICES["gpt-4o"]
    good = "# comment\nm1\t1.5\t2\talias\nm1-2024-01-01\t3\t4\tsnapshot\n"
    assert _read_prices(good) == {"alias": {"m1": (1.5, 2.0)}, "snapshot": {"m1-2024-01-01": (3.0, 4.0)}}
    for bad in ("m1\t1.5\talias", "m1\tcheap\t2\talias", "m1\t1\t2\tflat", "m1\t-1\t2\talias"):
        with pytest.raises(InputError, match=r"^prices\.tsv:1: "):
            _read_prices(bad, "prices.tsv")


def test_the_old_answer_reader_warns_and_gives_read_answers_labels():
    from negvocab.llm.formats import labels_from_message, read_answer

    answer = '{"labels": ["Red Fox", "dog", "red fox"]}'
    with pytest.warns(DeprecationWarning, match=r"use read_answer\(\.\.\.\)\[0\]"):
        got = labels_from_message(answer, None, None, 3, 1)
    assert got == read_answer(answer, None, None, 3, 1)[0] and "red fox" in got
