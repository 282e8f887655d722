"""Prompt templates: plain text files in ``prompts/``, one per task, identified by content hash.

A template file has a ``[system]`` section and a ``[user]`` section; ``{name}`` placeholders are
filled with :meth:`str.format` (write ``{{`` / ``}}`` for literal braces). The packaged templates
ship inside the wheel (``negvocab/prompts`` is a link to the top-level ``prompts/`` folder); a
user's own file can replace any of them. The SHA-256 of the file's bytes is the template's
version: every generated label records the template name and this hash, and a changed template
starts a new run.
"""

from __future__ import annotations

import hashlib
import os
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from negvocab.core.errors import InputError
from negvocab.core.textfiles import read_text

__all__ = ["OPTIONAL_FIELDS", "PromptTemplate", "TASKS", "load_prompt", "parse_template"]

#: task -> placeholders its template must use
TASKS: dict[str, frozenset[str]] = {
    "gpt_siblings": frozenset({"class_name", "n"}),
    "eoe_near": frozenset({"class_name", "n"}),
    "eoe_far": frozenset({"class_list", "n"}),
    "eoe_fine": frozenset({"class_list", "n"}),
    # NegRefine's two Yes/No questions (ah-ansari/NegRefine src/neg_filter.py, MIT), verbatim with their typo
    "negrefine_proper_noun": frozenset({"label"}),
    "negrefine_subcategory": frozenset({"label", "class_name"}),
    # ANTS's caption and reasoning prompts (ZhuWenjie98/ANTS mllm/qwen.py, MIT), verbatim; sent with an image
    "ants_caption": frozenset(),
    "ants_similar": frozenset({"class_name"}),
}
#: placeholders a template may use, per task (beyond the required ones)
OPTIONAL_FIELDS: dict[str, frozenset[str]] = {
    "gpt_siblings": frozenset({"synonyms", "wnid", "id_classes"}),
    "eoe_near": frozenset({"synonyms", "wnid"}),
    "eoe_far": frozenset(),
    "eoe_fine": frozenset(),
    "negrefine_proper_noun": frozenset(),
    "negrefine_subcategory": frozenset(),
    "ants_caption": frozenset(),
    "ants_similar": frozenset(),
}


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template: its task name, where it came from, its two sections and its hash."""

    name: str
    source: str
    system: str
    user: str
    sha256: str

    @property
    def version(self) -> str:
        """Short content hash (12 hex digits), recorded with every label."""
        return self.sha256[:12]

    @property
    def fields(self) -> frozenset[str]:
        """The placeholder names used in the template."""
        return _fields(self.system) | _fields(self.user)

    def render(self, **values: object) -> list[dict[str, str]]:
        """Chat messages (system + user) with the placeholders filled."""
        missing = self.fields - set(values)
        if missing:
            raise InputError(f"prompt {self.name!r}: no value for placeholder(s) {sorted(missing)}")
        messages = []
        if self.system:
            messages.append({"role": "system", "content": self.system.format(**values)})
        messages.append({"role": "user", "content": self.user.format(**values)})
        return messages


def _fields(text: str) -> frozenset[str]:
    try:
        return frozenset(f for _, f, _, _ in string.Formatter().parse(text) if f)
    except ValueError as e:
        raise InputError(
            f"malformed placeholder in prompt template ({e}); write {{{{ and }}}} for literal braces"
        ) from e


def parse_template(text: str, *, name: str, source: str) -> PromptTemplate:
    """Parse template text with ``[system]`` / ``[user]`` sections (no markers: all user)."""
    sections: dict[str, list[str]] = {}
    current = "user" if not text.lstrip().startswith("[") else None
    for line in text.splitlines():
        marker = line.strip().lower()
        if marker in ("[system]", "[user]"):
            current = marker[1:-1]
            if current in sections:
                raise InputError(f"{source}: section {line.strip()} appears twice")
            sections[current] = []
        elif current is None:
            raise InputError(f"{source}: text before the first [system] or [user] section")
        else:
            sections.setdefault(current, []).append(line)
    system = "\n".join(sections.get("system", [])).strip()
    user = "\n".join(sections.get("user", [])).strip()
    if not user:
        raise InputError(f"{source}: the prompt template has no [user] text")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    template = PromptTemplate(name=name, source=source, system=system, user=user, sha256=digest)
    used = template.fields
    if name in TASKS:
        missing = TASKS[name] - used
        unknown = used - TASKS[name] - OPTIONAL_FIELDS[name]
        if missing:
            raise InputError(f"{source}: the {name} template must use placeholder(s) {sorted(missing)}")
        if unknown:
            allowed = sorted(TASKS[name] | OPTIONAL_FIELDS[name])
            raise InputError(
                f"{source}: unknown placeholder(s) {sorted(unknown)}; the {name} template may use {allowed}"
            )
    return template


def load_prompt(task: str, path: str | os.PathLike[str] | None = None, *, variant: str = "") -> PromptTemplate:
    """The template for ``task`` (one of :data:`TASKS`): the packaged file (``prompts/<task>_<variant>.txt``
    with a ``variant``: ``gpt_siblings_labelspace`` for a label space other than ImageNet-1k), or ``path`` if given."""
    if task not in TASKS:
        raise InputError(f"unknown prompt task {task!r}; choose one of {sorted(TASKS)}")
    if path is not None:
        p = Path(path)
        return parse_template(read_text(p, "prompt template file"), name=task, source=str(p))
    file = f"{task}_{variant}.txt" if variant else f"{task}.txt"
    resource = resources.files("negvocab").joinpath("prompts", file)
    try:
        text = resource.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError) as e:
        raise InputError(f"packaged prompt template prompts/{file} is missing; reinstall negvocab") from e
    return parse_template(text, name=task, source=f"prompts/{file}")
