"""`negvocab report GRID`: one report for a grid folder (its paper tables with bold, comparisons, sweeps,
a results table per model) that fits 1280 px and an A4 page with every word whole."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
from typer.testing import CliRunner

from negvocab.cli import app
from negvocab.grid.tidy import load_rows
from negvocab.report.grid_section import _cell
from tests.grid.test_grid_tables import MODELS, _write_grid
from tests.report.test_html import CHROMIUM, _overflow, _printable_px, needs_chromium

_WORDS_JS = r"""<script>
addEventListener("load", () => {
  const broken = [];
  for (const cell of document.querySelectorAll("td, th")) {
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT | NodeFilter.SHOW_ELEMENT);
    const parts = [];  // text nodes; a <br> is a line break, i.e. white space between words
    for (let n = walk.nextNode(); n; n = walk.nextNode()) {
      if (n.nodeType === Node.TEXT_NODE) parts.push({ node: n, text: n.textContent });
      else if (n.tagName === "BR") parts.push({ node: null, text: " " });
    }
    const text = parts.map((p) => p.text).join("");
    let at = 0;
    for (const word of text.split(/\s+/)) {
      const start = text.indexOf(word, at); at = start + word.length;
      if (word.length < 2) continue;
      const pieces = [];
      let seen = 0;
      for (const p of parts) {
        const a = Math.max(start - seen, 0), b = Math.min(start + word.length - seen, p.text.length);
        if (p.node && a < b) {
          const r = document.createRange(); r.setStart(p.node, a); r.setEnd(p.node, b);
          pieces.push(...r.getClientRects());
        }
        seen += p.text.length;
      }
      const lines = new Set(pieces.filter((p) => p.width > 0).map((p) => Math.round(p.top)));
      // a word may wrap only where the report offers a break (after _ / @)
      if (lines.size > 1 && !/[_/@]/.test(word)) broken.push(word);
    }
  }
  document.body.setAttribute("data-broken", JSON.stringify(broken.slice(0, 20)));
});
</script>"""


def _grid_report(tmp_path):
    from negvocab.grid.tidy import _grid_folder

    _write_grid(tmp_path / "g", np.random.default_rng(0), failed_model=None)
    _grid_folder(tmp_path / "g").write(tmp_path / "g")  # tables.md, comparisons.md, ... as grid run leaves them
    out = tmp_path / "report.html"
    res = CliRunner().invoke(app, ["report", str(tmp_path / "g"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_report_takes_a_grid_folder(tmp_path):
    out = _grid_report(tmp_path)
    text = out.read_text()
    for anchor in ("grid-tables", "grid-comparisons", "grid-model-1", "grid-model-2"):
        assert f'id="{anchor}"' in text, anchor
    assert all(f">{m}</h2>" in text for m in MODELS)
    said = (tmp_path / "g" / "comparisons.md").read_text().splitlines()
    assert said and all(re.sub(r"^- ", "", s).split(" ")[0] in text for s in said)
    bold = (tmp_path / "g" / "tables.md").read_text().count("**") // 2
    assert text.count("<b>") == bold  # the paired test's bold, as the grid wrote it
    rows, _, _ = load_rows([tmp_path / "g"])
    assert f"{100 * rows[0]['fpr']:.2f}" in text
    assert _cell("**12.50** [8.33, 25.00]") == ("12.50", "[8.33, 25.00]", True)
    assert _cell("50.00 ± 70.71") == ("50.00", "± 70.71", False) and _cell("-") == ("-", "", False)


def _broken_words(html_path, width):
    probe = html_path.with_name(f"words-{width}.html")
    probe.write_text(html_path.read_text().replace("</body>", _WORDS_JS + "</body>"))
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000", "--dump-dom",
         probe.as_uri()], capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    found = re.search(r'data-broken="([^"]*)"', dom)
    assert found, "the probe did not run"
    return json.loads(found.group(1).replace("&quot;", '"'))


@needs_chromium
def test_the_grid_report_fits_1280_px_and_a4_with_words_whole(tmp_path):
    out = _grid_report(tmp_path)
    html = out.read_text()
    as_printed = tmp_path / "as-printed.html"  # the print rules on screen, at the A4 width inside the margins
    as_printed.write_text(html.replace("@media print", "@media all"))
    for page, width in ((out, 1280), (as_printed, _printable_px(html))):
        assert _overflow(page, width, tmp_path / f"grid-{width}.png") == [], width
        assert _broken_words(page, width) == [], width
