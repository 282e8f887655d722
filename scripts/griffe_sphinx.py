"""A griffe extension (loaded by mkdocs.yml) that turns the reST of negvocab's docstrings into the Markdown
mkdocstrings renders, so the hundreds of docstrings need no edit:

- roles (``:class:`~negvocab.x.Y```, ``:func:``, ``:meth:``, ``:mod:``, ``:attr:``, ``:data:``, ``:exc:``,
  ``:obj:``) become optional cross-references: a link where the target has an entry in the reference,
  plain code where it has none (mkdocs-autorefs decides, so a build never fails on one); a name written
  without its module is looked up where the docstring stands, then among the public names;
- ``:math:`x``` becomes code; ``.. math::`` blocks and reST literal blocks (``text::`` then an indented
  block) become fenced code blocks;
- doctest examples (``>>>``) outside a NumPy "Examples" section become ``pycon`` code blocks (the NumPy
  parser renders the ones inside it), and ``# doctest: +FLAG`` comments are dropped everywhere;
- bare ``docs/methods.md#scores`` citations become links, and links written from the repository root
  (``[x](docs/methods.md#scores)``) point from docs/reference/;
- ``#:`` comments above a module or class attribute become its docstring (Sphinx's convention).
"""

from __future__ import annotations

import ast
import html
import re
from collections.abc import Iterator

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|mod|attr|data|exc|obj):`([^`]+)`")
MATH_ROLE = re.compile(r":math:`([^`]+)`")
METHODS_CITATION = re.compile(r"(?<!\]\()(?<![\w/\[`])docs/methods\.md#([\w-]+)")  # bare, not a link nor code
REPO_LINK = re.compile(r"\]\(docs/")  # a link written from the repository root: [x](docs/methods.md#scores)
DOCTEST_FLAG = re.compile(r"\s*#\s*doctest:\s*[+-]\w+(?:\s*,\s*[+-]\w+)*\s*$")
SECTION_RULE = re.compile(r"^\s*-{3,}\s*$")
ITEM = re.compile(r"^(\*{0,2}\w[\w, *]*?) : (.+)$")  # a NumPy item: "name : type"
ITEM_SECTIONS = {"Parameters", "Other Parameters", "Attributes"}
DETERMINERS = {"a", "an", "the", "one", "what", "each", "every", "how", "which", "whether"}


def _prose(text: str) -> bool:
    """Whether the "type" of a NumPy item is in fact its description ("k : the number of neighbours")."""
    words = text.split()
    return text.endswith(".") or "; " in text or ": " in text or words[0].lower() in DETERMINERS or len(words) >= 10


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


class SphinxToMarkdown(griffe.Extension):
    """Rewrite every docstring of the loaded package once its whole tree is known (names resolve)."""

    def on_attribute_instance(self, *, node: object, attr: griffe.Attribute, **kwargs: object) -> None:
        """Give an attribute without a docstring the ``#:`` comment lines just above it."""
        if attr.docstring is not None or attr.lineno is None:
            return
        filepath = attr.filepath
        if isinstance(filepath, list) or filepath not in attr.lines_collection:
            return
        lines = attr.lines_collection[filepath]
        comment: list[str] = []
        i = attr.lineno - 2  # the line above (lineno is 1-based)
        while i >= 0 and lines[i].lstrip().startswith("#:"):
            comment.insert(0, lines[i].lstrip()[2:].strip())
            i -= 1
        if comment:
            attr.docstring = griffe.Docstring(" ".join(comment), lineno=attr.lineno, parent=attr)

    def on_package(self, *, pkg: griffe.Module, **kwargs: object) -> None:
        """Rewrite the docstrings of every object of the package."""
        exports = _literal(pkg, "_EXPORTS")
        modules = _literal(pkg, "_MODULES")
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = rewrite(obj.docstring.value, lambda t, o=obj: resolve(t, o, exports, modules))


def _literal(pkg: griffe.Module, name: str) -> dict[str, str]:
    member = pkg.members.get(name)
    if member is None or member.is_alias:
        return {}
    try:
        return dict(ast.literal_eval(str(member.value)))
    except (ValueError, SyntaxError):
        return {}


def _walk(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]


def resolve(target: str, obj: griffe.Object, exports: dict[str, str], modules: dict[str, str]) -> str:
    """The full dotted path a role's target names, seen from ``obj``'s docstring."""
    target = target.lstrip(".")
    head, _, rest = target.partition(".")
    if head == obj.package.name:
        first, _, tail = rest.partition(".")
        if first in exports:
            return ".".join(filter(None, [exports[first], first, tail]))
        if first in modules:
            return ".".join(filter(None, [modules[first], tail]))
        return target
    scope: griffe.Object | None = obj
    while scope is not None:
        member = scope.members.get(head)
        if member is not None:
            base = member.target_path if member.is_alias else member.path
            return ".".join(filter(None, [base, rest]))
        scope = scope.parent
    if head in exports:
        return ".".join(filter(None, [exports[head], head, rest]))
    return target


def _role(match: re.Match[str], resolver: object) -> str:
    text = match.group(2).strip()
    if "<" in text and text.endswith(">"):  # :func:`title <target>`
        title, target = text[:-1].split("<", 1)
        title = title.strip()
    else:
        target = text
        title = text.lstrip("~")
        if text.startswith("~"):
            title = title.rsplit(".", 1)[-1]
    identifier = resolver(target.lstrip("~"))  # type: ignore[operator]
    return f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(title)}</code></autoref>'


def _inline(line: str, resolver: object) -> str:
    line = REPO_LINK.sub("](../", line)  # the reference pages are docs/reference/*.md
    line = METHODS_CITATION.sub(r"[docs/methods.md#\1](../methods.md#\1)", line)
    line = ROLE.sub(lambda m: _role(m, resolver), line)
    return MATH_ROLE.sub(lambda m: "`" + m.group(1) + "`", line)


def _block(lines: list[str], start: int, base: int) -> int:
    """The end of the block whose lines from ``start`` are indented more than ``base`` (blank lines inside)."""
    end = start
    i = start
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
        if lines[i].strip():
            end = i + 1
        i += 1
    return end


def _fence(body: list[str], indent: str, lang: str) -> list[str]:
    width = min((_indent(x) for x in body if x.strip()), default=0)
    return [f"{indent}```{lang}", *(indent + x[width:] for x in body), f"{indent}```"]


def rewrite(text: str, resolver: object) -> str:  # long: one pass over the lines, each reST form in turn
    """The Markdown mkdocstrings should see for a docstring written with reST roles and blocks."""
    lines = text.splitlines()
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        pad = line[: _indent(line)]
        if i + 1 < len(lines) and stripped and SECTION_RULE.match(lines[i + 1]):  # a NumPy section heading
            section = stripped
            out += [line, lines[i + 1]]
            i += 2
            continue
        if stripped.startswith(".. math::"):
            end = _block(lines, i + 1, _indent(line))
            first = stripped[len(".. math::") :].strip()
            body = ([pad + " " * len(".. math:: ") + first] if first else []) + lines[i + 1 : end]
            out += ["", *_fence(body, pad, "tex"), ""]
            i = end
            continue
        if stripped.startswith(">>>"):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            block = [DOCTEST_FLAG.sub("", x) for x in lines[i:end]]
            out += block if section == "Examples" else ["", *_fence(block, pad, "pycon"), ""]
            i = end
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            nxt = i + 1
            while nxt < len(lines) and not lines[nxt].strip():
                nxt += 1
            if nxt < len(lines) and _indent(lines[nxt]) > _indent(line):
                end = _block(lines, nxt, _indent(line))
                out += [_inline(line[:-1], resolver), "", *_fence(lines[nxt:end], pad, ""), ""]
                i = end
                continue
        item = ITEM.match(line) if section in ITEM_SECTIONS else None
        if item and _prose(item.group(2)):  # "name : description": the description under the name
            out += [item.group(1), "    " + _inline(item.group(2), resolver)]
        else:
            out.append(_inline(line, resolver))
        i += 1
    return "\n".join(out)
