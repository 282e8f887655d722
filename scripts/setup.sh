#!/usr/bin/env bash
# Set up a fresh machine for negvocab: WordNet 3.0 (Debian wordnet-base), the package with every runtime
# extra and its test and docs extras at the versions of constraints.txt. Idempotent; safe to run again.
# Downloads only from PyPI and Debian.
#
#   bash scripts/setup.sh            # into the active virtual environment; outside one, creates .venv
#                                    # here and installs into it (then: source .venv/bin/activate)
#   bash scripts/setup.sh --system   # into the python3 first on PATH, whatever it is (CI: .ci/run)
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
    --system) PY=python3 ;;
    "")
        if python3 -c "import sys; sys.exit(sys.prefix == sys.base_prefix)"; then
            PY=python3  # already inside a virtual environment: install there
        else
            [ -x .venv/bin/python ] || python3 -m venv .venv
            PY=.venv/bin/python
            echo "setup: installing into $(pwd)/.venv (a new virtual environment; --system installs into python3)" >&2
        fi
        ;;
    *) echo "usage: bash scripts/setup.sh [--system]" >&2; exit 2 ;;
esac

if [ ! -f /usr/share/wordnet/data.noun ] && ! "$PY" -c "import nltk; nltk.data.find('corpora/wordnet')" >/dev/null 2>&1; then
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

# Every runtime extra ([all]: vlm, llm, report, hf, grid, ray, pytorch-ood; ray ~15 s, ~250 MB), the test and
# docs extras. The exact versions the project is tested with come from constraints.txt (pyproject.toml only
# declares compatible ranges). torch/torchvision first: an unpinned 'torch' would pull a multi-GB build.
"$PY" -m pip install -q --disable-pip-version-check -c constraints.txt torch torchvision
"$PY" -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[all,test,docs]'
# Copy WordNet 3.0 where nltk can read it (once); fails early with the install hint if missing.
"$PY" -m negvocab.labels.wordnet
if [ "$PY" = .venv/bin/python ]; then
    echo "setup: done; activate the environment with: source .venv/bin/activate" >&2
fi
