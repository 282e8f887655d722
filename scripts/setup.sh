#!/usr/bin/env bash
# Set up a fresh machine for negvocab: WordNet 3.0 (Debian wordnet-base), the package with every runtime
# extra and its test and docs extras at the versions of constraints.txt. Idempotent; safe to run again.
# Downloads from PyPI and Debian (and, with --cpu-torch, PyTorch's CPU-only wheel index). Each step is
# printed as it starts, with pip's own progress (no -q).
#
#   bash scripts/setup.sh              # into the active virtual environment; outside one, into .venv here
#                                      # (created if missing, reused if there; then: source .venv/bin/activate)
#   bash scripts/setup.sh --system     # into the python3 first on PATH, whatever it is (CI: .ci/run)
#   bash scripts/setup.sh --cpu-torch  # torch's CPU-only build (no CUDA libraries): for a machine without a GPU
#   bash scripts/setup.sh --dry-run    # print every step and command; install nothing
set -euo pipefail
cd "$(dirname "$0")/.."

CPU_INDEX=https://download.pytorch.org/whl/cpu  # PyTorch's index of CPU-only torch/torchvision wheels
SYSTEM="" CPU_TORCH="" DRY=""
for arg in "$@"; do
    case "$arg" in
        --system) SYSTEM=1 ;;
        --cpu-torch) CPU_TORCH=1 ;;
        --dry-run) DRY=1 ;;
        *) echo "usage: bash scripts/setup.sh [--system] [--cpu-torch] [--dry-run]" >&2; exit 2 ;;
    esac
done

say() { echo "setup: $*" >&2; }
run() {  # print a command, then run it (--dry-run: print only)
    echo "  + $*" >&2
    [ -n "$DRY" ] || "$@"
}
STEP=0
step() { STEP=$((STEP + 1)); say "[$STEP/5] $*"; }

if [ -n "$SYSTEM" ]; then
    PY=python3
    say "installing into $(command -v python3) (--system)"
elif python3 -c "import sys; sys.exit(sys.prefix == sys.base_prefix)"; then
    PY=python3  # already inside a virtual environment: install there
    say "installing into the active virtual environment $(python3 -c 'import sys; print(sys.prefix)')"
elif [ -x .venv/bin/python ]; then
    PY=.venv/bin/python
    say "reusing .venv in $(pwd) (an existing virtual environment; --system installs into python3)"
else
    PY=.venv/bin/python
    say "installing into $(pwd)/.venv (a new virtual environment; --system installs into python3)"
    run python3 -m venv .venv
fi

say "what it installs: WordNet 3.0 (Debian wordnet-base, ~30 MB); optional Chromium and TeX for the browser"
say "  and LaTeX tests; torch + torchvision; negvocab with [all,test,docs] at constraints.txt's versions."
say "  Size of the environment: about 6.9 GB with PyPI's default torch on Linux, about 3.2 GB of it CUDA"
say "  libraries; about 2.4 GB with the CPU-only build (--cpu-torch). Time: mostly downloads (minutes)."
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    GPU=1
else
    GPU=""
fi
if [ -z "$GPU" ] && [ -z "$CPU_TORCH" ]; then
    say "no NVIDIA GPU found: the CPU-only torch build saves about 4.5 GB (CUDA libraries, triton, CUDA kernels):"
    say "  bash scripts/setup.sh --cpu-torch    (torch from $CPU_INDEX; without the flag: PyPI's CUDA build)"
fi
if [ -n "$CPU_TORCH" ]; then
    say "torch: the CPU-only build from $CPU_INDEX (for the CUDA build run setup.sh without --cpu-torch)"
fi

apt_install() {  # apt_install WHAT PACKAGE... : one Debian install, said before it starts
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    run $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive run $SUDO apt-get install -y --no-install-recommends "$@"
}

step "WordNet 3.0"
if [ ! -f /usr/share/wordnet/data.noun ] && ! "$PY" -c "import nltk; nltk.data.find('corpora/wordnet')" >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        apt_install wordnet-base
    else
        echo "WordNet 3.0 not found: install Debian/Ubuntu 'wordnet-base' or run python -m nltk.downloader wordnet" >&2
        exit 1
    fi
else
    say "  WordNet 3.0 found"
fi

# Headless Chromium for the report's browser test (tests/report/test_html.py); optional.
step "Chromium (optional: the report's browser test)"
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        apt_install chromium || echo "chromium not installed: the report's browser test will be skipped" >&2
    else
        echo "chromium not found: the report's browser test will be skipped (install Debian/Ubuntu 'chromium')" >&2
    fi
else
    say "  chromium found"
fi

# TeX and poppler for the LaTeX tables' compile test and the figures' font test (tests/report/test_latex.py,
# test_plots.py); optional: those tests are skipped without them.
step "TeX and poppler (optional: the LaTeX and font tests)"
if ! command -v pdflatex >/dev/null 2>&1 || ! command -v lualatex >/dev/null 2>&1 || ! command -v pdffonts >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1; then
        apt_install texlive-latex-recommended texlive-science texlive-fonts-recommended texlive-luatex poppler-utils \
            || echo "TeX not installed: the LaTeX compile test will be skipped" >&2
    else
        echo "pdflatex not found: the LaTeX compile test will be skipped (install Debian's texlive-latex-recommended)" >&2
    fi
else
    say "  TeX and poppler found"
fi

# torch/torchvision first: an unpinned 'torch' would pull a multi-GB build. The CPU index is tried only
# when asked for; where it cannot be reached, PyPI's build is installed instead (never a failed set-up).
PIP=("$PY" -m pip install --disable-pip-version-check --progress-bar on -c constraints.txt)
step "torch and torchvision"
TORCH_FROM=()
if [ -n "$CPU_TORCH" ]; then
    if [ -n "$DRY" ] || "$PY" -c "import urllib.request as u; u.urlopen('$CPU_INDEX/', timeout=5)" >/dev/null 2>&1; then
        TORCH_FROM=(--index-url "$CPU_INDEX" --extra-index-url https://pypi.org/simple)
    else
        say "  $CPU_INDEX cannot be reached: installing PyPI's torch build instead (with CUDA libraries)"
    fi
fi
run "${PIP[@]}" "${TORCH_FROM[@]}" torch torchvision
# Every runtime extra ([all]: vlm, llm, report, hf, grid, ray, pytorch-ood; ray ~15 s, ~250 MB), the test and
# docs extras. The exact versions the project is tested with come from constraints.txt (pyproject.toml only
# declares compatible ranges).
step "negvocab with [all,test,docs], then WordNet where nltk reads it"
run "${PIP[@]}" -e '.[all,test,docs]'
# Copy WordNet 3.0 where nltk can read it (once); fails early with the install hint if missing.
run "$PY" -m negvocab.labels.wordnet
if [ "$PY" = .venv/bin/python ]; then
    say "done; activate the environment with: source .venv/bin/activate"
else
    say "done"
fi
