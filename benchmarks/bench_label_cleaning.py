"""Label cleaning and the synonym filter on 2,100 realistic LLM answers: main's code beside the new.

The answers are ``tests/labels/data/llm_answers.jsonl`` (made by ``make_llm_answers.py`` beside it):
every list form models write (JSON bare/fenced/array/objects/map, numbered, markdown, bulleted,
explained, comma lists, one a line, prompt echoes, tables, grouped headings, glued items, doubled
phrases), for 133 ImageNet-1k classes, each with its expected clean labels and the ID labels it hides.

Three pipelines, one run:

- OLD as shipped (git main before the one normaliser): an answer counts only when it is exactly the JSON
  ``{"labels": [...]}`` (the ``LabelList`` schema); its items go through the old ``clean_label``,
  then the old ``SynonymFilter`` rules (exact, normalised, plural). Copied below as the baseline.
- OLD normaliser, generous: the old ``clean_label`` on every JSON item or every text line, so the
  normaliser itself is compared, not only the transport.
- NEW: ``parse_label_list`` (the one normaliser) and today's ``SynonymFilter``.

Printed: label precision and recall against the expected clean labels (targets >= 99% each), the
hidden ID mentions and ID classes that leak through the filter (target 0), and the real OOD labels the
filter removes (target 0); then the NegLabel WordNet pool's removed count, old and new.

    PYTHONPATH=. python benchmarks/bench_label_cleaning.py
"""

from __future__ import annotations

import json
import re
import time
import unicodedata
from collections.abc import Iterable
from pathlib import Path

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "labels" / "data" / "llm_answers.jsonl"

# -- the baseline: git main's negvocab/llm/text.py, verbatim ---------------------------------------
_NUMBERING = re.compile(r"^\s*(?:[-*\u2022\u2013]+|\(?\d{1,3}[.):]|\(?[a-zA-Z]\))\s+")
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_WS = re.compile(r"\s+")
_STRIP = " \t\r\n\"'`*_.,;:!?\u201c\u201d\u2018\u2019"


def old_clean_label(text: str) -> str:
    s = unicodedata.normalize("NFKC", str(text)).translate(_INVISIBLE)
    s = _NUMBERING.sub("", s)
    s = _WS.sub(" ", s).strip(_STRIP).strip()
    return s.lower()


def old_clean_labels(raw: Iterable[str]) -> list[str]:
    out: dict[str, None] = {}
    for item in raw:
        label = old_clean_label(item)
        if label:
            out.setdefault(label, None)
    return list(out)


# -- the baseline: git main's SynonymFilter rules (exact, normalised, plural), as they were -------
class OldSynonymFilter:
    """main's ``SynonymFilter.explain``: clean names and WordNet synonyms only, three rules."""

    def __init__(self) -> None:
        from negvocab.labels.imagenet import imagenet1k
        from negvocab.labels.synonyms import normalise

        c = imagenet1k()
        self._exact: dict[str, int] = {}
        self._norm: dict[str, int] = {}
        self._joined: dict[str, int] = {}
        for forms_of in (lambda i: (c.names[i],), lambda i: c.synonyms[i]):
            for i in range(len(c)):
                for form in forms_of(i):
                    for written in (form, form.replace(" ", "_")):
                        self._exact.setdefault(written, i)
                    key = normalise(form)
                    if key:
                        self._norm.setdefault(key, i)
                        self._joined.setdefault(key.replace(" ", ""), i)
        self._gate: frozenset[str] | None = None

    def is_id(self, label: str) -> bool:
        from negvocab.labels.synonyms import normalise

        if label in self._exact:
            return True
        key = normalise(label)
        if not key:
            return False
        if key in self._norm or key.replace(" ", "") in self._joined:
            return True
        for spelling in dict.fromkeys((key, key.replace(" ", ""))):
            for base in self._base_forms(spelling):
                if base in self._norm or base.replace(" ", "") in self._joined:
                    return True
        return False

    def _base_forms(self, key: str) -> list[str]:
        from negvocab.labels.synonyms import _irregular_bases, _irregular_plurals, _noun_base, _regular_plurals

        if self._gate is None:
            irregular, keys = _irregular_plurals(), set()
            for k in self._norm:
                head, _, last = k.rpartition(" ")
                prefix = f"{head} " if head else ""
                keys.update(prefix + p for p in (*_regular_plurals(last), *irregular.get(last, ())))
                keys.update(irregular.get(k, ()))
            self._gate = frozenset(keys)
        if key not in self._gate:
            return []
        head, _, last = key.rpartition(" ")
        out = []
        for base in (_noun_base(last), *_irregular_bases().get(last, ())):
            spelled = f"{head} {base}" if head else base
            if base and base != last and spelled not in out:
                out.append(spelled)
        out.extend(b for b in _irregular_bases().get(key, ()) if b != key and b not in out)
        if head:
            phrase = _noun_base(key.replace(" ", "_"))
            if phrase and phrase.replace("_", " ") != key and phrase.replace("_", " ") not in out:
                out.append(phrase.replace("_", " "))
        return out


def old_as_shipped(text: str) -> list[str]:
    """main's client: only a bare ``{"labels": [...]}`` answer is usable; anything else is invalid."""
    try:
        doc = json.loads(text)
    except ValueError:
        return []
    if not isinstance(doc, dict) or set(doc) != {"labels"} or not all(isinstance(x, str) for x in doc["labels"]):
        return []
    return old_clean_labels(doc["labels"])


def old_generous(text: str) -> list[str]:
    """main's normaliser on every JSON list item, else on every line of the answer."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and len(doc) == 1:
        doc = next(iter(doc.values()))
    if isinstance(doc, list):
        return old_clean_labels(x if isinstance(x, str) else json.dumps(x) for x in doc)
    return old_clean_labels(text.splitlines())


# -- measuring --------------------------------------------------------------------------------------
def _words(text: str) -> str:
    from negvocab.labels.synonyms import normalise

    return f" {normalise(text)} "


def evaluate(answers: list[dict], parse, is_id) -> dict[str, float]:
    tp = fp = fn = 0
    leaked, leaked_classes, lost, usable = 0, set(), 0, 0
    t0 = time.process_time()
    for a in answers:
        got = parse(a["text"])
        usable += bool(got)
        expected = set(a["expected"])
        tp += len(expected & set(got))
        fp += len(set(got) - expected)
        fn += len(expected - set(got))
        kept = [x for x in got if not is_id(x)]
        ood = expected - set(a["hidden"])
        # a kept label that is not one of the answer's OOD labels and still holds the hidden ID name
        kept_words = [_words(x) for x in kept if x not in ood]
        for label, wnid in a["hidden"].items():
            if any(_words(label) in k for k in kept_words):
                leaked += 1
                leaked_classes.add(wnid)
        lost += sum(1 for x in got if x in ood and x not in kept)
    return {
        "usable answers": usable,
        "precision %": 100 * tp / max(tp + fp, 1),
        "recall %": 100 * tp / max(tp + fn, 1),
        "ID mentions leaking": leaked,
        "ID classes leaking": len(leaked_classes),
        "OOD labels removed": lost,
        "seconds": time.process_time() - t0,
    }


def main() -> None:
    from negvocab.labels.candidates import wordnet_candidates
    from negvocab.labels.clean import parse_label_list
    from negvocab.labels.synonyms import SynonymFilter

    answers = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    hidden = sum(len(a["hidden"]) for a in answers)
    print(f"{len(answers):,} answers, {len({a['class'] for a in answers})} classes, "
          f"{sum(len(a['expected']) for a in answers):,} expected labels, {hidden:,} hidden ID mentions")  # fmt: skip
    old_filter, new_filter = OldSynonymFilter(), SynonymFilter()
    new_filter.is_id("pomeranian dogs")  # build the WordNet tables before timing
    rows = {
        "OLD as shipped": evaluate(answers, old_as_shipped, old_filter.is_id),
        "OLD normaliser, generous": evaluate(answers, old_generous, old_filter.is_id),
        "NEW": evaluate(answers, parse_label_list, new_filter.is_id),
    }
    names = list(rows)
    print(f"{'':24s}" + "".join(f"{n:>26s}" for n in names))
    for metric in rows[names[0]]:
        fmt = "{:26.2f}" if metric.endswith(("%", "seconds")) else "{:26,d}"
        print(f"{metric:24s}" + "".join(fmt.format(rows[n][metric]) for n in names))
    print("targets: precision and recall >= 99%, 0 ID classes leaking, 0 OOD labels removed")

    pool = [c.text for c in wordnet_candidates("neglabel")]
    old_removed = [x for x in pool if old_filter.is_id(x)]
    new_removed = [x for x in pool if new_filter.is_id(x)]
    extra = sorted(set(new_removed) - set(old_removed))
    print(f"NegLabel WordNet pool: {len(pool):,} labels; OLD removes {len(old_removed):,}, NEW removes "
          f"{len(new_removed):,} (+{len(extra)}: {', '.join(f'{x} [{new_filter.explain(x).rule}]' for x in extra)}; "
          f"kept by NEW but not OLD: {len(set(old_removed) - set(new_removed))})")  # fmt: skip


if __name__ == "__main__":
    main()
