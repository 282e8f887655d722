#!/usr/bin/env bash
# Set up a fresh machine for negvocab: WordNet 3.0 (Debian wordnet-base), the package and its
# test extras at the versions of constraints.txt. Idempotent; safe to run again. Downloads only from PyPI and Debian.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f /usr/share/wordnet/data.noun ] && ! python3 -c "import nltk; nltk.data.find('corpora/wordnet')" >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wordnet-base >/dev/null
    else
        echo "WordNet 3.0 not found: install Debian/Ubuntu 'wordnet-base' or run python -m nltk.downloader wordnet" >&2
        exit 1
    fi
fi

# Headless Chromium for the report's browser test (tests/report/test_html.py); optional.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null || echo "chromium not installed: the report's browser test will be skipped" >&2
    else
        echo "chromium not found: the report's browser test will be skipped (install Debian/Ubuntu 'chromium')" >&2
    fi
fi

# TeX and poppler for the LaTeX tables' compile test and the figures' font test (tests/report/test_latex.py,
# test_plots.py); optional: those tests are skipped without them.
if ! command -v pdflatex >/dev/null 2>&1 || ! command -v lualatex >/dev/null 2>&1 || ! command -v pdffonts >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends texlive-latex-recommended \
            texlive-science texlive-fonts-recommended texlive-luatex poppler-utils >/dev/null \
            || echo "TeX not installed: the LaTeX compile test will be skipped" >&2
    else
        echo "pdflatex not found: the LaTeX compile test will be skipped (install Debian's texlive-latex-recommended)" >&2
    fi
fi

# grid and ray extras: the grid's Parquet table and its Ray engine are tested too (ray: ~15 s, ~250 MB).
# The exact versions the project is tested with come from constraints.txt (pyproject.toml only
# declares compatible ranges). torch/torchvision first: an unpinned 'torch' would pull a multi-GB build.
python3 -m pip install -q --disable-pip-version-check -c constraints.txt torch torchvision
python3 -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[test,grid,ray,docs,pytorch-ood]'
# Copy WordNet 3.0 where nltk can read it (once); fails early with the install hint if missing.
python3 -m negvocab.labels.wordnet
