"""LaTeX for the tables: ASCII-only escapes (pdflatex's default font encoding), stacked column heads, and
the float a table sits in (a short caption, the tabular shrunk to the line width only where wider, notes)."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["latex_escape", "latex_float", "stacked_head"]


#: characters that print wrong under pdflatex's default (OT1) font encoding, or are not ASCII
_LATEX_SYMBOLS = {
    ">=": "$\\geq$", "<=": "$\\leq$", "≥": "$\\geq$", "≤": "$\\leq$", "±": "$\\pm$", "×": "$\\times$",
    "<": "$<$", ">": "$>$", "|": "$|$", "–": "--", "—": "---", "’": "'", "‘": "`", "“": "``", "”": "''",
    "…": "...", "−": "$-$",
}  # fmt: skip


def latex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped, ASCII only (``>=`` as ``$\\geq$``: pdflatex's
    default font encoding prints ``>`` as an inverted question mark); other non-ASCII characters as ``?``."""
    out = re.sub(r"([&%$#_{}])", r"\\\1", str(text)).replace("~", "\\textasciitilde{}").replace("^", "\\^{}")
    out = re.sub("|".join(map(re.escape, sorted(_LATEX_SYMBOLS, key=len, reverse=True))),
                 lambda m: _LATEX_SYMBOLS[m.group(0)], out)  # fmt: skip
    return out.encode("ascii", "replace").decode("ascii")


def stacked_head(text: str, width: int = 10) -> str:
    """A column head on several short lines (at spaces and before ``@``: "wordnet / @100",
    "mcm / (no / vocabulary)"): a column as narrow as its numbers."""
    words = re.findall(r"@?[^\s@]+", str(text))
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + len(w) + (not w.startswith("@")) <= width:
            lines[-1] += w if w.startswith("@") else f" {w}"
        else:
            lines.append(w)
    if len(lines) < 2:
        return latex_escape(text)
    # "{}" keeps a line that starts with "[" ("[tt]") from being read as the optional argument of \\
    body = "\\\\".join(("{}" if x.startswith("[") else "") + latex_escape(x) for x in lines)
    return f"\\begin{{tabular}}[b]{{@{{}}c@{{}}}}{body}\\end{{tabular}}"


def latex_float(
    tabular: Sequence[str], caption: str, label: str, notes: Sequence[str], *, wide: bool = False, needs: str = ""
) -> str:
    """A ``table`` (``wide``: ``table*``) float around ``tabular`` lines: a short caption, the label, the
    tabular shrunk to the line width only where it is wider (at compile time, with graphicx's
    ``\\resizebox`` where loaded), and ``notes`` in small type under it."""
    env = "table*" if wide else "table"
    box = "\\nvtablebox"
    needs = needs or "\\usepackage{booktabs}"
    notes_text = latex_escape(" ".join(notes))
    return "\n".join([
        f"% needs {needs} (graphicx: shrinks a table wider than the column)",
        f"\\begin{{{env}}}[t]", "\\centering", "\\footnotesize", "\\setlength{\\tabcolsep}{3pt}",
        f"\\caption{{{latex_escape(caption)}}}", f"\\label{{{label}}}",
        f"\\ifdefined{box}\\else\\newsavebox{{{box}}}\\fi", f"\\begin{{lrbox}}{{{box}}}", *tabular, "\\end{lrbox}",
        f"\\ifdim\\wd{box}>\\linewidth\\typeout{{negvocab: table {label} is \\the\\wd{box}\\space wide, shrunk to the "
        f"\\the\\linewidth\\space line (negvocab table --wide: table*)}}"
        f"\\ifdefined\\resizebox\\resizebox{{\\linewidth}}{{!}}{{\\usebox{{{box}}}}}"
        f"\\else\\usebox{{{box}}}\\fi\\else\\usebox{{{box}}}\\fi",
        *([f"\\par\\smallskip\\parbox{{\\linewidth}}{{\\scriptsize\\raggedright {notes_text}}}"] if notes else []),
        f"\\end{{{env}}}",
    ]) + "\n"  # fmt: skip
