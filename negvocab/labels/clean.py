"""Label cleaning: the one normaliser every builder uses for label strings, before the synonym filter
(docs/methods.md, "Synonym filtering").

Language models decorate their answers ("1. **Trout** - a fish that...", "a koi", "crane
(machine)", "Q: given the image category [goldfish], ..."), and hand-written lists carry the same
noise. A label is kept as a careful researcher would write it by hand: a short lower-case phrase,
single spaces, Unicode NFKC without zero-width characters, and

- markdown remnants (``**``, ``__``, backticks, headings, links), list numbering ("1.", "1)",
  "(1)", "1.Trout") and bullets go; only ``a)`` and ``(a)`` count as letter markers, because a
  letter with a dot starts many names ("T. rex", "E. coli");
- parenthetical notes go ("shetland pony (horse breed)"), and so does an explanation after ``:``,
  `` - ``, `` -- ``, an en/em dash, ``;``, "e.g."/"i.e."/"such as", or a comma followed by an
  explanation (", which ...", ", a ...");
- a field name before a colon goes ("Label: koi"), a prompt echo ("Q: ...") or a sentence is
  dropped (the label becomes ""), a template prefix goes ("a photo of a goldfish"), a leading
  article goes ("the koi"), a stutter collapses ("red panda red panda", "submarine submarine",
  "Mop mop", "banana, banana"; a name that is a doubled word, "chow chow", "mahi mahi", stays);
- items glued together by a dangling hyphen ("rapeseed- granite boulder") are split
  (:func:`split_glued`; :func:`clean_label` keeps the first);
- punctuation that is part of a name stays: "T. rex", "jack-o'-lantern", "4x4", "St. Bernard".

:func:`parse_label_list` reads a whole answer (JSON, fenced JSON, numbered or bulleted lines, comma
lists, preamble and closing remarks; a parenthetical note never splits or drops the list it sits
in); :func:`clean_labels_report` keeps what cleaning changed and what it dropped, for the
vocabulary's provenance. :func:`looks_like_name` tells a name in some language from the nonsense a
small model writes ("%> чтоs register"); :func:`keep_names` applies it to a model's labels.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from negvocab.core.errors import ResourceError
from negvocab.labels.wordnet import load_wordnet

__all__ = [
    "CleanResult",
    "clean_label",
    "clean_labels",
    "clean_labels_report",
    "is_plain",
    "keep_names",
    "looks_like_name",  # fmt: skip
    "parse_label_list",
    "raw_items",
    "split_glued",
    "written_plainly",
]

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_WS = re.compile(r"\s+")
_STRIP = " \t\r\n\"'`*_.,;:!?()[]{}<>|=~#\u201c\u201d\u2018\u2019\u00ab\u00bb\u2026"

# a prompt echo: the model repeats the question (or a chat role) instead of answering
_ECHO = re.compile(
    r"^\s*(?:q|question|prompt|user|system|instruction|input|context|task"  # the question, echoed
    # a field about a label
    r"|reason|reasons|why|explanation|description|justification|rationale|similarity|note|notes)\s*\d*\s*[:\uff1a]",
    re.I,
)
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MD_EMPH = re.compile(r"\*{1,3}|(?<![A-Za-z0-9])__|__(?![A-Za-z0-9])|~~|`+")
_HEADING = re.compile(r"^\s*(?:#{1,6}\s+|>+\s*)")
_BULLET = re.compile(
    r"^\s*[-*+\u2022\u00b7\u25aa\u25ba\u2023\u25e6\u25cf\u25cb\u25a0\u25a1\u2713\u2714\u27a4\u2192\u2013\u2014]+\s*"
)
_NUMBER = re.compile(
    r"^\s*(?:\(?#?\d{1,3}\s*(?:[.):\]]+|\s[-\u2013\u2014])|#\d{1,3}\s|\(?[a-zA-Z]\))\s*(?!\d+(?:[.,]\d|\s|$))"
)
_FIELD = re.compile(
    r"^\s*(?:label|name|category|class|answer|item|negative|option|result|a)\s*\d*\s*[:=]\s*(?=\S)", re.I
)
_PAREN = re.compile(r"\s*(?:\([^()]*\)|\[[^\[\]]*\]|\{[^{}]*\})")
_OPEN = re.compile(r"\s*[(\[{].*$")
# an explanation starts here: everything from the match on goes
_EXPLAIN = re.compile(
    r"\s*(?::|;|\s-{1,2}\s|\s-{2,}|-{2,}\s|[\u2013\u2014\u2015]|\s\|\s|\s=\s|\s\u2192\s|\s->\s"
    r"|,?\s+(?:e\.\s?g\.|i\.\s?e\.|such as|for example|aka|a\.k\.a\.)(?:\s|,|$)"
    r"|,\s+(?:which|that|who|whose|where|a|an|the|also|as|known|similar|since|because|due|like|with|often"
    r"|commonly|typically|usually|sometimes|but|not|or|its|it|this|these|for|from|found|used|etc)\b)",
    re.I,
)
_SLASH = re.compile(r"\s+/\s+")  # "carp / common carp"; not "AC/DC", "read/write head"
_SENTENCE_END = re.compile(r"(?<=[a-z]{4})[.!?]\s+(?=\S)")  # "Koi. It is ..." but not "T. rex", "St. Bernard"
_GLUE = re.compile(r"(?:(?<=[^\W_])|(?<=\)))-\s+(?=[^\W_])")  # "rapeseed- granite boulder"
_TEMPLATE = re.compile(
    r"^(?:(?:a|an|the|one)\s+)?(?:(?:good|bad|close-up|closeup|cropped|blurry|bright|dark|clean|dirty|jpeg"
    r"|low resolution|high resolution|large|small|nice|weird|black and white|pixelated|rendered|photo)\s+)*"
    r"(?:photo|photograph|picture|image|pic|drawing|painting|sketch|rendering|rendition|illustration|snapshot"
    r"|render|shot|sculpture|cartoon|doodle|tattoo|embroidery|origami)s?\s+of\s+(?:(?:a|an|the|one|my|some|this)\s+)?",
)
_PLAIN = re.compile(
    r"^(?!\d{1,3}[.):])[a-z0-9](?:[a-z0-9']|[-.](?=[a-z0-9])| (?=[a-z0-9]))*$"
)  # lower case, no decoration
_TEMPLATE_FIRST = frozenset(
    "a an the one good bad close-up closeup cropped blurry bright dark clean dirty jpeg low high large small nice "
    "weird black pixelated rendered photo photos photograph picture image pic drawing painting sketch rendering "
    "rendition illustration snapshot render shot sculpture cartoon doodle tattoo embroidery origami".split()
)  # a plain label starting with one of these may hold a template prefix or an article
_ARTICLE = re.compile(r"^(?:a|an|the)\s+(?=\S)")
# words that make a phrase a sentence rather than a name
_SENTENCE_WORDS = frozenset(
    "is are was were am be been being i'm i've you you're your we we're our they their here here's these those "
    "this it's could would should shall might must does did has have had please sure certainly let given "
    "following note which whose because since also often them help based categories category similar "
    "unlike shares sharing share looks resembles resemble confused confusable visually appears appear "
    "answer answers list".split()
)
_SENTENCE_STARTS = frozenset("here these this i sure certainly note okay ok".split())
_CLOSING = re.compile(r"^(?:i\s+)?(?:hope (?:this|that|it|these) helps?|let me know|feel free|happy to help)\b", re.I)
# chatter around an answer (interjections, apologies, refusals, an error message's first word): never a label
_INTERJECTIONS = frozenset(
    "certainly sure okay ok yes absolutely alright great hello hi note notes done sorry apologies thanks "
    "indeed error warning unfortunately".split()
    + ["here are", "here is", "here you go", "here they are", "here it is", "here goes", "of course", "sure thing",
       "no problem", "thank you", "thanks a lot", "great question", "good question", "you're welcome",
       "you are welcome",
       "got it", "as requested", "my apologies", "i apologize", "i apologise", "i'm sorry", "i am sorry", "i see"]
)  # fmt: skip
_CHATTER = re.compile(
    r"^(?:as an? (?:ai|language model|large language model|assistant)\b|i(?:'m| am) (?:sorry|afraid|unable|not able)\b"
    r"|i (?:cannot|can't|can not|won't|apologi[sz]e)\b|(?:sorry|apologies|my "
    r"apologies|unfortunately|thank you|thanks)\b)"
)  # a phrase that starts so apologises, refuses or thanks
_KEEP_A = frozenset("la cappella capella priori posteriori fortiori kempis level".split())  # "a la carte", "a priori"
_ABBREV = re.compile(
    r"(?:^|\s)(?:\S*\.\S+|al|cf|ibid|etc|inc|co|jr|sr|st|mr|mrs|dr|mt|ft|vs)$"
)  # "d.c.", "ph.d.", "et al."
MAX_WORDS = 10


def clean_label(text: str) -> str:
    """One label as a researcher would write it; ``""`` when ``text`` is no label (a sentence, a
    prompt echo, markup only). Idempotent: ``clean_label(clean_label(x)) == clean_label(x)``.

    Parameters
    ----------
    text : str
        One label as written (a list item, a model's answer line).

    Examples
    --------
    >>> clean_label(' 2. **Snow  Leopard** - a big cat of the mountains. ')
    'snow leopard'
    >>> clean_label('a photo of a goldfish'), clean_label('red panda red panda'), clean_label('T. Rex')
    ('goldfish', 'red panda', 't. rex')
    """
    parts = _clean_parts(text)
    return parts[0] if parts else ""


def is_plain(text: str) -> bool:
    """Whether ``text`` is already a clean label as far as a quick look tells (lower case, no
    markup, punctuation or leading article/template word, no doubled phrase): then
    :func:`clean_label` keeps it as it is or drops it as a sentence. A fast path for large pools."""
    if not _PLAIN.match(text):
        return False
    words = text.split()
    return words[0] not in _TEMPLATE_FIRST and (len(words) < 2 or _undouble(words) == text)


def split_glued(text: str) -> list[str]:
    """``text`` split where items are glued by a dangling hyphen ("rapeseed- granite boulder")."""
    return [p for p in _GLUE.split(text) if p.strip()]


def _clean_parts(text: str) -> list[str]:
    """The cleaned labels in one raw item: usually one, two or more for glued items."""
    return list(_cached_parts(str(text)))


@functools.lru_cache(maxsize=1 << 17)
def _cached_parts(text: str) -> tuple[str, ...]:
    """:func:`_clean_parts`, remembered: a journal repeats each label across rounds and classes."""
    return tuple(_parts(text))


def _parts(text: str) -> list[str]:
    low = text.lower() if text.isascii() else text  # ASCII: NFKC changes nothing
    if is_plain(low):  # the common case, a label clean but for case (a WordNet pool, a journal): fast
        return [] if _is_sentence(low.split()) else [low]
    s = unicodedata.normalize("NFKC", text).translate(_INVISIBLE).strip()
    if not s or _ECHO.match(s) or _CLOSING.match(s):
        return []
    out = []
    for part in split_glued(_unmark(s)):
        label = _clean_one(part)
        if label and label not in out:
            out.append(label)
    return out


def _unmark(s: str) -> str:
    """Markdown and list markers off the front (in any order: "**1.** Trout", "1. **Trout**")."""
    s = _MD_LINK.sub(r"\1", s)
    s = _MD_EMPH.sub("", s)
    for _ in range(3):
        before = s
        s = _HEADING.sub("", s)
        s = _BULLET.sub("", s)
        s = _NUMBER.sub("", s)
        s = _FIELD.sub("", s)
        if s == before:
            break
    return s


def _clean_one(s: str) -> str:
    s = s.replace("_", " ")
    inner = s.strip().strip("()[]{} ")
    s = _PAREN.sub("", s)
    s = _OPEN.sub("", s)  # an unclosed "(note: ..." runs to the end
    if not s.strip(_STRIP):
        s = inner  # "(koi)": the brackets held the label itself
    m = _EXPLAIN.search(s)
    if m is not None and m.start() > 0:
        s = s[: m.start()]
    s = _SLASH.split(s, maxsplit=1)[0]  # alternatives: the first name
    m = _SENTENCE_END.search(s)
    if m is not None:
        s = s[: m.start()]
    s = _strip_symbols(_strip_ends(_WS.sub(" ", s))).lower()
    if not s or not any(ch.isalnum() for ch in s):
        return ""
    words = s.split()
    if _is_sentence(words):
        return ""
    for _ in range(3):  # "the photo of a koi", "a photo of the koi"
        before = s
        s = _TEMPLATE.sub("", s)
        words = s.split()
        if len(words) > 1 and words[1] not in _KEEP_A:
            s = _ARTICLE.sub("", s)
        if s == before:
            break
    return _strip_ends(_undouble(s.split()))


def _strip_ends(s: str) -> str:
    """Quotes, markup and punctuation off both ends; a period that ends an abbreviation ("d.c.",
    "et al.") or starts a number (".22 caliber") stays."""
    core = s.strip(_STRIP).strip()
    if not core:
        return ""
    start = s.find(core)
    if start > 0 and s[start - 1] == "." and core[0].isdigit():
        core = "." + core
    end = s.find(core) + len(core)
    if s[end : end + 1] == "." and _ABBREV.search(core.lower()):
        core += "."
    return core


def _strip_symbols(s: str) -> str:
    """Emoji and other symbols at either end ("\U0001f41f goldfish")."""
    while s and unicodedata.category(s[0]).startswith("S"):
        s = s[1:].lstrip()
    while s and unicodedata.category(s[-1]).startswith("S"):
        s = s[:-1].rstrip()
    return s


def _is_sentence(words: list[str]) -> bool:
    """A phrase that talks (a preamble, a reason, a question) rather than names something."""
    if len(words) > MAX_WORDS:
        return True
    bare = [w.strip(_STRIP) for w in words]
    joined = " ".join(bare)
    if joined in _INTERJECTIONS or _CHATTER.match(joined):
        return True
    if len(bare) >= 3 and bare[0] in _SENTENCE_STARTS:
        return True
    return len(bare) >= 4 and any(w in _SENTENCE_WORDS for w in bare)


#: names that are a doubled word: a stutter of them is no stutter
_REDUPLICATED = frozenset(
    "chow chow|mahi mahi|bora bora|baden baden|walla walla|pago pago|wagga wagga|ylang ylang|can can|cha cha|choo choo"
    "|tom tom|pom pom|dum dum|yo yo|bye bye|aye aye|dik dik|mau mau|sing sing|beri beri|no no|hush hush|night night"
    "|knock knock|so so|goody goody|rah rah|ha ha|ho ho|tut tut|tsk tsk|hubba hubba|ack ack|cous cous|bon bon|muu muu"
    "|bunya bunya|kinkajou kinkajou|bulbul bulbul|gorilla gorilla|pica pica|naja naja|lynx lynx|crex crex|anser anser"
    "|vulpes vulpes|bufo bufo|rattus rattus|bison bison|alces alces|cygnus cygnus|buteo buteo".split("|")
)
#: a doubled word with a Latin ending is a zoological tautonym ("jaculus jaculus", "mephitis mephitis"), no stutter
_TAUTONYM = re.compile(r"[a-z]{3,}(?:us|um|is|es|ops)")


def _undouble(words: list[str]) -> str:
    """A stutter collapsed: "red panda red panda" -> "red panda", "submarine submarine" -> "submarine",
    "banana, banana" -> "banana"; a name that is a doubled word ("chow chow", "mahi mahi") stays."""
    bare = [w.rstrip(",") for w in words]
    n = len(bare)
    for size in range(n // 2, 0, -1):
        pair = " ".join(bare[: 2 * size])
        if (
            n % size == 0
            and bare == bare[:size] * (n // size)
            and pair not in _REDUPLICATED
            and not (n == 2 and _TAUTONYM.fullmatch(bare[0]))
        ):
            return " ".join(bare[:size])
    out: list[str] = []
    for w in words:  # "banana banana split": a doubled word inside a longer name
        if out and w == out[-1] and f"{w} {w}" not in _REDUPLICATED and not _TAUTONYM.fullmatch(w):
            continue
        out.append(w)
    return " ".join(out)


@dataclass
class CleanResult:
    """What cleaning did to a list of raw labels.

    ``labels``: the clean labels, de-duplicated, in order; ``dropped``: raw strings that were no
    label (sentences, prompt echoes, markup), in order; ``changed``: raw -> clean for every raw
    string whose cleaning did more than fold case and spaces (a glued raw item maps to its labels
    joined by " | ").
    """

    labels: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    changed: dict[str, str] = field(default_factory=dict)

    def to_settings(self) -> dict[str, Any]:
        """The record builders store as ``settings["label_cleaning"]``."""
        return {"changed": dict(self.changed), "dropped": list(self.dropped), "dropped_count": len(self.dropped)}


def written_plainly(text: str) -> bool:
    """Whether a label of a user's list is kept as written: a lower-case name without markup whose
    cleaning would only drop a leading article ("the hague", "the star-spangled banner") or
    apostrophe ("'hood"), or drop
    it as chatter while it has at most three words ("note", "here and now"), or that is a WordNet noun
    as written ("homo sapiens sapiens", not a stutter of "homo sapiens"). Such a line is a name
    a person (or WordNet) wrote on purpose; a decorated line ("1. **Trout** - a fish", "a photo
    of a goldfish", "Koi", "red panda red panda") is cleaned."""
    words = text.split()
    if not words or text != " ".join(words):
        return False
    rest = " ".join(words[1:] if len(words) > 1 and words[0] in ("a", "an", "the") else words).removeprefix("'")
    if not _PLAIN.match(rest):  # a leading apostrophe is WordNet's ("'hood")
        return False
    clean = clean_label(text)
    return clean in (text, rest) or (not clean and len(words) <= 3) or _wordnet_noun(text)


def _wordnet_noun(text: str) -> bool:
    """Whether ``text`` is a WordNet 3.0 noun as written: a name written on purpose, whatever the cleaning
    rules would make of it ("homo sapiens sapiens" and "dama dama" are no stutters); False without WordNet."""
    try:
        wn = load_wordnet()
    except ResourceError:
        return False
    key = text.replace(" ", "_")
    return any(key in {x.lower() for x in s.lemma_names()} for s in wn.synsets(key, "n"))


def clean_labels_report(raw: Iterable[str], *, keep: Callable[[str], bool] | None = None) -> CleanResult:
    """Clean every raw label (glued items split); keep the raw -> clean map and the dropped ones.
    ``keep``: raw labels for which it is true are taken as written (e.g. :func:`written_plainly`)."""
    out = CleanResult()
    seen: dict[str, None] = {}
    for item in raw:
        item = str(item)
        parts = [item] if keep is not None and keep(item) else _clean_parts(item)
        if not parts:
            if item.strip() and item not in out.dropped:
                out.dropped.append(item)
            continue
        joined = " | ".join(parts)
        if joined != item and joined != _WS.sub(" ", unicodedata.normalize("NFKC", item)).strip().lower():
            out.changed[item] = joined
        for label in parts:
            seen.setdefault(label, None)
    out.labels = list(seen)
    return out


def clean_labels(raw: Iterable[str]) -> list[str]:
    """Cleaned labels, empty ones dropped, glued items split, repeats dropped (first kept)."""
    return clean_labels_report(raw).labels


# -- whole answers -----------------------------------------------------------------------------
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_LIST_KEYS = (
    "labels", "label", "categories", "category", "items", "negatives", "negative_labels", "classes",
    "names", "objects", "concepts", "answers", "answer", "results", "list", "data", "output", "response",
)  # fmt: skip
_ITEM_KEYS = ("label", "name", "category", "class", "item", "text", "title", "object", "concept", "value")
_MARKED = re.compile(
    r"^\s*(?:[-*+]\s+|[\u2022\u00b7\u25aa\u25ba\u2023\u25e6\u25cf\u25cb\u25a0\u25a1\u2713\u2714\u27a4\u2192]\s*"
    r"|\(?#?\d{1,3}\s*[.):\]]+(?!\d+(?:[.,]\d|\s|$))\s*|\d{1,3}\s+[-\u2013\u2014]\s+|\(?[a-zA-Z]\)\s+|\*\*\d{1,3}[.)]\*\*\s*)"
)
_TABLE_SEP = re.compile(r"^\s*\|?[\s:|-]+\|?\s*$")
_COMMA = re.compile(r"\s*[,\u3001\uff0c]\s*|\s*;\s*")
_AND = re.compile(r"^(?:and|or|&)\s+", re.I)
_DECORATED_HEAD = re.compile(
    r"\s-{1,2}\s|[\u2013\u2014(]|,\s+(?:which|that|who|whose|where)\b", re.I
)  # "koi - note: ..." is a label and its note
_COMMA_EXPLAINS = re.compile(r",\s+(?:which|that|who|whose|where)\b", re.I)


def parse_label_list(text: str) -> list[str]:
    """The cleaned, de-duplicated labels of one model answer, in order.

    Reads a JSON array or object (bare, inside a fenced code block marked json, or inside prose; keys such as
    ``labels``/``categories``/``items``, objects with ``name``/``label``, or a label -> explanation
    map), numbered or bulleted lines (a preamble, headings and a closing remark dropped), a markdown
    table, one label a line, or a comma list ("Here are some: koi, carp and trout.").

    Parameters
    ----------
    text : str
        One model answer.

    Examples
    --------
    >>> parse_label_list('Sure! Here are 3:\\n1. **Koi** - a carp\\n2. Trout\\n3) the pike\\nHope this helps!')
    ['koi', 'trout', 'pike']
    """
    return clean_labels_report(raw_items(text)).labels


def raw_items(text: str) -> list[str]:
    """The raw label strings of one answer, before cleaning (see :func:`parse_label_list`)."""
    text = unicodedata.normalize("NFKC", str(text or "")).translate(_INVISIBLE)
    found = _json_items(text)
    if found is not None:
        return found
    return _text_items(text)


def _json_items(text: str) -> list[str] | None:
    """Items of the first JSON (or Python literal) list/object in ``text`` that holds labels."""
    candidates = [m.group(2) for m in _FENCE.finditer(text)]
    stripped = text.strip()
    candidates.append(stripped)
    for open_, close in (("{", "}"), ("[", "]")):
        i, j = stripped.find(open_), stripped.rfind(close)
        if 0 <= i < j:
            candidates.append(stripped[i : j + 1])
    for cand in candidates:
        cand = cand.strip()
        if not cand or cand[0] not in "[{":
            continue
        doc = _load_json(cand)
        if doc is None:
            continue
        items = _items_of(doc)
        if items:
            return items
    return None


def _load_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return json.loads(re.sub(r",\s*([\]}])", r"\1", text))  # a trailing comma
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)  # a Python list: ['koi', 'carp']
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _items_of(doc: Any, depth: int = 0) -> list[str]:
    if depth > 4:
        return []
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, list):
        out: list[str] = []
        for x in doc:
            out.extend(_items_of(x, depth + 1) if isinstance(x, (list, dict)) else [x] if isinstance(x, str) else [])
        return out
    if isinstance(doc, dict):
        lowered = {str(k).lower(): v for k, v in doc.items()}
        for key in _LIST_KEYS:
            if key in lowered and isinstance(lowered[key], (list, dict, str)):
                return _items_of(lowered[key], depth + 1)
        for key in _ITEM_KEYS:
            if isinstance(lowered.get(key), str):
                return [lowered[key]]
        lists = [v for v in doc.values() if isinstance(v, list)]
        if len(lists) == 1:
            return _items_of(lists[0], depth + 1)
        if lists:  # {"fish": [...], "birds": [...]}: grouped lists
            return [x for v in lists for x in _items_of(v, depth + 1)]
        if doc and all(isinstance(v, str) for v in doc.values()):
            return [str(k) for k in doc]  # {"koi": "a carp", ...}
    return []


def _text_items(text: str) -> list[str]:
    lines = [ln for ln in text.replace("\r", "\n").split("\n") if ln.strip() and not ln.strip().startswith("```")]
    table = [ln for ln in lines if ln.strip().startswith("|")]
    if len(table) >= 2:
        rows = [ln for ln in table if not _TABLE_SEP.match(ln)]
        cells = [next((c for c in row.strip().strip("|").split("|") if c.strip()), "") for row in rows]
        return cells[1:] if len(cells) > 1 else cells  # the first row is the header
    marked = [ln for ln in lines if _MARKED.match(ln)]
    if len(marked) >= 2 or (marked and len(lines) <= 3):
        return _list_items(marked)
    items: list[str] = []
    for ln in lines:
        items.extend(_line_items(ln))
    return items


def _list_items(marked: list[str]) -> list[str]:
    """List lines without headings, and without lines indented under an item (its explanations:
    "1. Koi" then "   - similar shape"); lines indented under a heading are the items."""
    out: list[str] = []
    parent: tuple[int, bool] | None = None  # (indent, is a heading) of the last outer line
    for ln in marked:
        indent = len(ln) - len(ln.lstrip())
        heading = _is_heading(ln)
        if parent is not None and indent > parent[0]:
            if not parent[1] and not heading:
                continue  # a note under an item
        else:
            parent = (indent, heading)
        if not heading:
            out.append(ln)
    return out


def _is_heading(line: str) -> bool:
    """A list line that only introduces others ("1. **Aquatic animals:**")."""
    return _unmark(line).strip().rstrip("*_ ").endswith(":")


def _talks(words: list[str]) -> bool:
    """Words that belong to a sentence, not to a list of names ("These categories share ...")."""
    bare = [w.strip(_STRIP).lower() for w in words]
    return bool(bare) and (bare[0] in _SENTENCE_STARTS or any(w in _SENTENCE_WORDS for w in bare))


def _split_outside_brackets(text: str) -> list[str]:
    """``text`` split at list commas (and semicolons) that are not inside brackets: a note
    "(a figure, with a similar name)" stays with its item."""
    parts: list[str] = []
    depth = start = 0
    for m in re.finditer(r"[(\[{]|[)\]}]|" + _COMMA.pattern, text):
        ch = m.group(0)
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif depth == 0:
            parts.append(text[start : m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


def _line_items(line: str) -> list[str]:
    """One unmarked line: a comma list (after a preamble ending in ":"), or one label. Notes in
    brackets are left out when telling a list from a sentence, and a list is never split inside them."""
    body = _unmark(line).strip()
    head, sep, tail = body.partition(":")
    if sep and "(" in head and ")" in tail:  # "lady of the lake (note: a figure), tomato": the colon is the note's
        head, sep, tail = body, "", ""
    if sep and not tail.strip():
        return []  # "Here are ten categories:"
    if sep and (_COMMA.search(tail) or _talks(head.split())) and not _DECORATED_HEAD.search(head):
        body = tail.strip()  # "Here are ten: koi, carp, ..." or "Categories: koi, carp"
    elif not sep and _talks(_PAREN.sub("", body).split()) and len(_PAREN.sub("", body).split()) >= 3:
        return [body]  # a sentence: cleaning drops it whole (commas and all)
    bare = _PAREN.sub("", body)
    if _COMMA.search(bare) and not _COMMA_EXPLAINS.search(bare):
        parts = [_AND.sub("", p.strip()) for p in _split_outside_brackets(body.rstrip("."))]
        if len(parts) >= 2:
            last = parts[-1]
            if " and " in last and all(len(x.split()) <= 3 for x in last.split(" and ", 1)):
                parts[-1:] = last.split(" and ", 1)  # "koi, carp and trout"
            return [p for p in parts if p.strip()]
    return [body]


# -- names or nonsense -------------------------------------------------------------------------
_CODE_CHARS = frozenset("<>{}[]=%$\\|^~@#;`*_+")
_VOWELS = frozenset("aeiouyæøœ")
#: a label that ends in one of these is a fragment of a sentence ("bother involving")
_DANGLING = frozenset(
    "of the and or with a an to for in on by from at as into onto than that which who whose is are was were be "
    "involving including regarding concerning such like via per versus vs".split()
)
_COMPATIBLE_SCRIPTS = ({"CJK", "HIRAGANA", "KATAKANA"},)  # Japanese mixes these inside one word


def _script(ch: str) -> str:
    """The script of a letter, as the first word of its Unicode name (LATIN, CYRILLIC, GREEK, CJK...)."""
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "?"


def _base_letters(word: str) -> str:
    """``word`` in lower case without accents ("ség" -> "seg"), for its shape."""
    return "".join(c for c in unicodedata.normalize("NFD", word.lower()) if not unicodedata.combining(c))


def looks_like_name(label: str) -> bool:
    """Whether a cleaned label looks like a name in some language: letters (most of its characters),
    no markup or code characters, no word that mixes scripts ("чтоs"), words of a plausible shape
    (Latin words with vowels, no run of six consonants, none longer than 30 letters) and no dangling
    function word at its end ("bother involving"). Digits and the punctuation of names are fine:
    "4x4", "t. rex", "jack-o'-lantern", "7-eleven", "北京烤鸭"."""
    text = label.strip()
    if not text or any(c in _CODE_CHARS for c in text) or "://" in text:
        return False
    chars = [c for c in text if not c.isspace()]
    letters = [c for c in chars if c.isalpha()]
    if not letters or sum(c.isalnum() for c in chars) < 0.6 * len(chars):
        return False
    words = text.split()
    if len(words) > 1 and words[-1].lower().strip(".,'") in _DANGLING:
        return False
    for word in words:
        scripts = {_script(c) for c in word if c.isalpha()}
        if len(scripts) > 1 and not any(scripts <= ok for ok in _COMPATIBLE_SCRIPTS):
            return False
        if scripts == {"LATIN"}:
            base = "".join(c for c in _base_letters(word) if c.isalpha())
            if (
                len(base) > 30
                or (len(base) >= 5 and not (set(base) & (_VOWELS | {"w"})))
                or re.search(r"[^aeiouyæøœ\W\d]{6,}", base)
            ):
                return False
    return True


def keep_names(labels: Iterable[str]) -> tuple[list[str], list[str]]:
    """``labels`` split into those that :func:`looks_like_name` and the rest (nonsense), in order."""
    kept: list[str] = []
    dropped: list[str] = []
    for label in labels:
        (kept if looks_like_name(label) else dropped).append(label)
    return kept, dropped
