"""Write ``llm_answers.jsonl``: realistic LLM answers for the label-cleaning tests and benchmark.

Deterministic (fixed seed; WordNet 3.0 and the packaged ImageNet-1k classes are the only inputs):
``PYTHONPATH=. python tests/labels/data/make_llm_answers.py``. For 125 ImageNet-1k classes (every 8th,
plus the composite-name and spelling-variant classes) each answer lists WordNet co-hyponyms of the
class that are not ID classes (what a model proposes as visually similar negatives), decorated and
wrapped the ways real models write lists (JSON bare or fenced, numbered, bulleted, markdown
emphasis, "label - explanation", "label: explanation", parenthetical notes, comma lists, preambles,
closing remarks, prompt echoes, tables, grouped headings, glued items, doubled phrases, articles,
template prefixes), and hides 0-3 mentions of ID classes (decorated names, an ID sibling, a generic
head word appended, a composite-name part, a spelling variant, a plural-only lemma's singular).

Each line: ``{"class": wnid, "form": name, "text": answer, "expected": [clean labels, in order],
"hidden": {clean label: wnid}}``; ``expected`` holds the hidden ID labels' clean forms too (cleaning
keeps them; the synonym filter must remove them).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from negvocab.labels.imagenet import imagenet1k
from negvocab.labels.wordnet import load_wordnet

OUT = Path(__file__).with_name("llm_answers.jsonl")
SEED = 11
N_ANSWERS = 2100
PLAIN = re.compile(r"^[a-z][a-z0-9' .-]*[a-z0-9]$")

# labels whose punctuation is part of the name (all OOD)
PUNCT_NAMES = ["t. rex", "e. coli", "4x4", "will-o'-the-wisp", "jack-in-the-box", "forget-me-not", "o-ring",
               "x-ray tube", "st. john's wort", "7-eleven store", "a-frame house", "3-d glasses"]  # fmt: skip
EXTRA_CLASSES = ["n02788148", "n02817516", "n02971356", "n03871628", "n04201297", "n04371430", "n07760859",
                 "n02113978", "n01817953", "n02114367", "n02066245", "n02120505", "n01622779", "n02111889",
                 "n02112018", "n02110341", "n02071294", "n03126707"]  # fmt: skip
PREAMBLES = [
    "Sure! Here are {n} categories that are visually similar to a {c} but are not ImageNet classes:",
    'Here is a list of {n} visually confusable categories for "{c}":',
    "Certainly. Below are {n} object categories that could be confused with the {c}.",
    "I've selected {n} categories that share visual features with {c}:",
    "Okay, here you go:",
    "Here are some suggestions:",
]
CLOSINGS = [
    "These categories share color, shape or texture with the {c}.",
    "Let me know if you need more categories!",
    "I hope this helps.",
    "Note: none of these are ImageNet-1k classes.",
    "All of the above could plausibly be confused with a {c} in a photo.",
]
EXPLAIN = [
    "similar overall shape", "shares the coloring of the {c}", "often confused with {c} in photos",
    "a close relative with similar features", "looks alike at a distance", "same habitat and size",
    "note: similar texture", "comparable silhouette to a {c}", "frequently photographed in the same setting",
]  # fmt: skip
ECHO = "Q: Given the image category [{c}], please suggest {n} visually similar categories that are not in ImageNet."


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower().replace("'", "").replace(".", "")).strip()


def main(out: Path = OUT) -> int:
    rnd = random.Random(SEED)
    wn = load_wordnet()
    ic = imagenet1k()
    id_offsets = {int(w[1:]) for w in ic.wnids}
    id_keys = set()
    for i in range(len(ic)):
        for form in (ic.names[i], *ic.synonyms[i], *re.split(r"\s*/\s*|\s*\(|\)\s*|\s+or\s+", ic.names[i])):
            if form.strip():
                id_keys.add(_key(form))
    id_keys |= {k + "s" for k in list(id_keys)} | {k + "es" for k in list(id_keys)}
    id_keys |= {k.replace(" ", "") for k in id_keys}
    chosen = list(dict.fromkeys([ic.wnids[i] for i in range(0, 1000, 8)] + EXTRA_CLASSES))
    classes = []
    for wnid in chosen:
        i = ic.index_of(wnid)
        synset = wn.synset_from_pos_and_offset("n", int(wnid[1:]))
        ood, id_sibs = [], []
        for hyper in _by_offset(synset.hypernyms()):
            for cousin in [*_by_offset(hyper.hyponyms()),
                           *(h for s in _by_offset(hyper.hyponyms()) for h in _by_offset(s.hyponyms())),
                           *(h for p in _by_offset(hyper.hypernyms()) for h in _by_offset(p.hyponyms()))]:  # fmt: skip
                label = cousin.lemma_names()[0].replace("_", " ")
                if cousin.offset() in id_offsets:
                    if cousin.offset() != synset.offset():
                        id_sibs.append((label, f"n{cousin.offset():08d}"))
                    continue
                low = label.lower()
                if PLAIN.match(low) and not {_key(low), _key(low).replace(" ", "")} & id_keys and len(low.split()) <= 4:
                    ood.append(label)
        ood = list(dict.fromkeys(ood))
        if len(ood) < 6:
            continue
        heads = [h.lemma_names()[0].replace("_", " ").split()[-1] for h in _by_offset(synset.hypernyms())]
        heads += [
            h.lemma_names()[0].replace("_", " ").split()[-1]
            for p in _by_offset(synset.hypernyms())
            for h in _by_offset(p.hypernyms())
        ]
        classes.append({"wnid": wnid, "name": ic.names[i], "syn": ic.synonyms[i], "ood": ood, "id_sibs": id_sibs,
                        "heads": [h for h in heads if h != synset.lemma_names()[0]]})  # fmt: skip
    assert len(classes) >= 100, len(classes)
    with Path(out).open("w", encoding="utf-8") as fh:
        for k in range(N_ANSWERS):
            cls = classes[k % len(classes)]
            form = FORMS[k % len(FORMS)]
            rec = _answer(rnd, wn, cls, form)
            fh.write(json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {N_ANSWERS} answers for {len(classes)} classes to {out}")
    return 0


def _by_offset(synsets: list) -> list:
    """nltk keeps related synsets in sets: sort them, so the fixture does not depend on hashing."""
    return sorted(synsets, key=lambda s: s.offset())


def _hidden(rnd: random.Random, wn, cls: dict) -> list[tuple[str, str, str]]:
    """(raw, clean, wnid) mentions of ID classes for one answer."""
    name, wnid = cls["name"], cls["wnid"]
    plain = re.sub(r"\s*\(.*?\)|\s*/.*$", "", name)
    out = []
    kinds = ["sibling", "own", "head", "double", "plural", "part", "spell", "singular"]
    for kind in rnd.sample(kinds, rnd.choice([0, 1, 1, 2, 2, 3])):
        if kind == "sibling" and cls["id_sibs"]:
            label, w = rnd.choice(cls["id_sibs"])
            out.append((label, label.lower(), w))
        elif kind == "own":
            out.append((f"{plain} (the original class)", plain.lower(), wnid))
        elif kind == "head" and cls["heads"]:
            head = rnd.choice(cls["heads"])
            phrase = f"{plain} {head}"
            if not wn.synsets(phrase.replace(" ", "_"), "n") and not plain.lower().endswith(head.lower()):
                out.append((phrase, phrase.lower(), wnid))
        elif kind == "double" and len(plain.split()) >= 2:
            out.append((f"{plain} {plain}", plain.lower(), wnid))
        elif kind == "plural" and not plain.endswith("s") and not wn.synsets(plain.replace(" ", "_") + "s", "n"):
            # a plural WordNet knows as a word of its own ("chains", "hooks") is left to it by design
            out.append((plain + "s", plain.lower() + "s", wnid))
        elif kind == "part" and ("/" in name or "(" in name):
            part = rnd.choice([p for p in re.split(r"\s*/\s*|\s*\(|\)\s*|\s+or\s+", name) if p.strip()])
            out.append((part, part.lower(), wnid))
        elif kind == "spell" and re.search(r"\bgr[ae]y\b|sulphur|theat", name + " ".join(cls["syn"]), re.I):
            swapped = (
                re.sub(r"\bgrey\b", "gray", plain, flags=re.I)
                if "grey" in plain.lower()
                else plain.replace("gray", "grey")
            )
            out.append((swapped, swapped.lower(), wnid))
        elif kind == "singular" and wnid in ("n02788148", "n04371430"):
            label = "baluster" if wnid == "n02788148" else "swim trunk"
            out.append((label, label, wnid))
    return out


def _decorate(rnd: random.Random, label: str, cls: dict, style: str) -> str:
    c = cls["name"]
    shown = rnd.choice([label, label, label.title(), label.capitalize()])
    why = rnd.choice(EXPLAIN).format(c=c)
    if style == "plain":
        return shown
    if style == "article":
        return rnd.choice([f"{'an' if label[0] in 'aeiou' else 'a'} {shown}", f"the {shown}", f"A photo of a {shown}"])
    if style == "paren":
        return f"{shown} ({why})"
    if style == "dash":
        return f"{shown} {rnd.choice(DASHES)} {why}"
    if style == "colon":
        return f"{shown}: {why}"
    if style == "comma":
        return f"{shown}, which is {why}"
    if style == "bold":
        return f"**{shown}**"
    if style == "dot":
        return f"{shown}."
    if style == "quote":
        return rnd.choice([f'"{shown}"', f"\u201c{shown}\u201d", f"`{shown}`"])
    raise ValueError(style)


DASHES = ["-", "--", "\u2013", "\u2014"]
STYLES = ["plain", "plain", "plain", "article", "paren", "dash", "colon", "comma", "bold", "dot", "quote"]


def _items(rnd: random.Random, wn, cls: dict) -> tuple[list[str], list[str], dict[str, str]]:
    n = rnd.randint(5, 10)
    ood = rnd.sample(cls["ood"], min(n, len(cls["ood"])))
    if rnd.random() < 0.15:
        ood.insert(rnd.randrange(len(ood) + 1), rnd.choice(PUNCT_NAMES))
    entries = [(label, label.lower(), None) for label in ood]
    for raw, clean, w in _hidden(rnd, wn, cls):
        entries.insert(rnd.randrange(len(entries) + 1), (raw, clean, w))
    return [e[0] for e in entries], [e[1] for e in entries], {e[1]: e[2] for e in entries if e[2]}


def _answer(rnd: random.Random, wn, cls: dict, form: str) -> dict:
    raw, clean, hidden = _items(rnd, wn, cls)
    hidden_raw = {r for r, c in zip(raw, clean, strict=True) if c in hidden}
    c, n = cls["name"], len(raw)
    styles = [rnd.choice(STYLES) for _ in raw]
    for j, label in enumerate(raw):
        if label.lower() in ("t. rex", "e. coli", "st. john's wort") and styles[j] in ("article", "dot"):
            styles[j] = "plain"  # "a t. rex" reads as "a t." + "rex" to nobody, but keep the fixture unambiguous
    deco = [_decorate(rnd, lab, cls, st) for lab, st in zip(raw, styles, strict=True)]
    pre = rnd.choice(PREAMBLES).format(n=n, c=c)
    post = rnd.choice(CLOSINGS).format(c=c)
    wrap = rnd.random()
    if form == "json_bare":
        text = json.dumps({"labels": deco})
    elif form == "json_fenced":
        key = rnd.choice(["labels", "categories", "items", "negative_labels"])
        text = f"{pre}\n\n```json\n{json.dumps({key: deco}, indent=2)}\n```\n\n{post if wrap < 0.7 else ''}".strip()
    elif form == "json_array":
        body = json.dumps(deco, indent=rnd.choice([None, 2]))
        text = f"{pre}\n{body}" if wrap < 0.5 else body
    elif form == "json_objects":
        objs = [
            {rnd.choice(["name", "label", "category"]): lab, "reason": rnd.choice(EXPLAIN).format(c=c)} for lab in raw
        ]
        text = json.dumps({"categories": objs}, indent=2)
        text = f"```json\n{text}\n```" if wrap < 0.5 else text
    elif form == "json_map":
        text = json.dumps({lab: rnd.choice(EXPLAIN).format(c=c) for lab in raw}, indent=2)
    elif form == "numbered":
        sep = rnd.choice(["{i}. ", "{i}) ", "{i}.", "({i}) ", "{i} - "])
        lines = [sep.format(i=i + 1) + d for i, d in enumerate(deco)]
        text = "\n".join(([pre, ""] if wrap < 0.8 else []) + lines + (["", post] if wrap < 0.5 else []))
    elif form == "numbered_md":
        lines = [f"{i + 1}. **{lab.title()}** - {rnd.choice(EXPLAIN).format(c=c)}" for i, lab in enumerate(raw)]
        text = "\n".join([pre, ""] + lines + ["", post])
    elif form == "bulleted":
        mark = rnd.choice(["- ", "* ", "\u2022 ", "+ "])
        text = "\n".join(([pre] if wrap < 0.7 else []) + [mark + d for d in deco] + ([post] if wrap < 0.4 else []))
    elif form == "explained":
        sep = rnd.choice([" - ", ": ", " \u2014 ", " -- "])
        text = "\n".join([pre] + [f"{lab}{sep}{rnd.choice(EXPLAIN).format(c=c)}" for lab in raw] + [post])
    elif form == "comma":
        listed = ", ".join(raw[:-1]) + (", and " if wrap < 0.5 else ", ") + raw[-1]
        text = (
            f"{rnd.choice(['Here are some', 'Similar categories', 'Categories'])}: {listed}." if wrap < 0.7 else listed
        )
    elif form == "lines":
        text = "\n".join(deco)
    elif form == "echo":
        text = "\n".join([ECHO.format(c=c, n=n), "A:"] + [f"{i + 1}. {d}" for i, d in enumerate(deco)])
    elif form == "table":
        rows = [f"| {lab} | {rnd.choice(EXPLAIN).format(c=c)} |" for lab in raw]
        text = "\n".join([pre, "", "| Category | Why it is similar |", "|---|---|"] + rows)
    elif form == "grouped":
        half = len(raw) // 2
        text = "\n".join(
            [pre, "", "**Group A:**"]
            + [f"- {d}" for d in deco[:half]]
            + ["", "### Group B"]
            + [f"- {d}" for d in deco[half:]]
            + ["", post]
        )
    elif form == "glued":
        parts = list(raw)
        glued = [f"{parts[i]}- {parts[i + 1]}" for i in range(0, len(parts) - 1, 2)] + (
            [parts[-1]] if len(parts) % 2 else []
        )
        text = json.dumps({"labels": glued})
    elif form == "doubled":
        text = json.dumps(
            {"labels": [f"{lab} {lab}" if len(lab.split()) >= 2 and lab not in hidden_raw else lab for lab in raw]}
        )
    else:
        raise ValueError(form)
    return {"class": cls["wnid"], "form": form, "text": text, "expected": list(dict.fromkeys(clean)), "hidden": hidden}


FORMS = ["json_bare", "json_fenced", "json_array", "json_objects", "json_map", "numbered", "numbered_md", "bulleted",
         "explained", "comma", "lines", "echo", "table", "grouped", "glued", "doubled"]  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
