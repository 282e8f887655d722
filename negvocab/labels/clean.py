"""Label cleaning: one label (:func:`clean_label`) and a model's free-text answer (:func:`parse_label_list`).

PLACEHOLDER written on the llm-transport branch so that the LLM client's json_object/text modes
work before the label-clean branch lands; the label-clean branch writes the real module (same two
functions, same signatures) and replaces this file at merge.
"""

from __future__ import annotations

import json
import re

from negvocab.llm.text import clean_label as _clean_item

_FENCE = re.compile(r"```[a-zA-Z]*\s*(.*?)```", re.DOTALL)
_EXPLANATION = re.compile(r"\s+(?:-|--|\u2013|\u2014)\s+.*$|\s*:\s+.*$|\s*\(.*?\)\s*$")


def clean_label(text: str) -> str:
    """One label, cleaned; ``""`` when the text is not a label (placeholder: markers, emphasis,
    explanations after `` - `` / ``:`` and a trailing parenthesis removed, lower case)."""
    s = _clean_item(str(text))
    s = _EXPLANATION.sub("", s.replace("**", "")).strip()
    s = _clean_item(s)
    if not s or len(s.split()) > 6 or s.endswith(":"):
        return ""
    return s


def _json_items(text: str) -> list[str] | None:
    """The strings of a JSON array, or of the first list in a JSON object; None if not JSON."""
    fenced = _FENCE.search(text)
    body = (fenced.group(1) if fenced else text).strip()
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict):
        data = next((v for v in data.values() if isinstance(v, list)), None)
    if not isinstance(data, list):
        return None
    return [x for x in data if isinstance(x, str)]


def parse_label_list(text: str) -> list[str]:
    """Raw model text in (JSON, fenced JSON, numbered/bulleted lines, comma lists), cleaned
    de-duplicated labels out, in order (placeholder; see the module docstring)."""
    text = str(text or "")
    items = _json_items(text)
    if items is None:
        lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("```")]
        if len(lines) == 1 and "," in lines[0]:
            lines = lines[0].split(",")
        elif lines and lines[0].rstrip().endswith(":"):  # a preamble line
            lines = lines[1:]
        items = lines
    return list(dict.fromkeys(label for label in map(clean_label, items) if label))
