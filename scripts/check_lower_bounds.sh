#!/usr/bin/env bash
# Install truth: the lower ends of the ranges pyproject.toml declares, installed into a fresh venv
# (uv pip install --resolution lowest-direct), then the CLI smoke tests and the API tests that need no
# model download. A bound that fails here must be raised in pyproject.toml.
#
#   bash scripts/check_lower_bounds.sh                       # the declared bounds
#   bash scripts/check_lower_bounds.sh 'pydantic>=1.10,<3'   # plant a too-low bound: must fail
#   bash scripts/check_lower_bounds.sh --planted             # plant typer>=0.12 (fails with click >= 8.2);
#                                                            # exits 0 only if the check then FAILS (CI runs it)
#
# torch/torchvision are held at the pinned versions of constraints.txt (the multi-GB wheels come from
# pip's own index and cache, as in scripts/setup.sh); every other direct dependency at its lower end.
# The venv is kept in $NEGVOCAB_LOWER_VENV (default ~/.cache/negvocab/lower-venv) so that torch is
# installed once; the rest is reinstalled at the lower ends on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ "${1:-}" = "--planted" ]; then
    # The check must catch a bound that is too low: typer 0.12 with the click >= 8.2 it resolves to.
    t0=$(date +%s)
    LOG="${TMPDIR:-/tmp}/negvocab-lower-planted.log"
    if bash "$0" 'typer>=0.12,<1' > "$LOG" 2>&1; then
        echo "lower bounds: the planted too-low bound typer>=0.12 PASSED the check (it must fail)" >&2
        exit 1
    fi
    # It must fail for the planted bound, not for anything else (the plant not applied, an install error):
    # the plant is applied and typer 0.12 installed, so what failed is the package running on it.
    if ! grep -q "^planted 'typer>=0.12,<1'" "$LOG" || ! grep -q "typer==0\.12" "$LOG"; then
        tail -n 20 "$LOG" >&2
        echo "lower bounds: the planted check failed for another reason than the planted bound (see $LOG)" >&2
        exit 1
    fi
    tail -n 3 "${TMPDIR:-/tmp}/negvocab-lower-planted.log"
    echo "lower bounds: the planted too-low bound typer>=0.12 failed the check, as it must ($(( $(date +%s) - t0 )) s)"
    exit 0
fi
PLANT=${1:-}
VENV=$(realpath -m "${NEGVOCAB_LOWER_VENV:-$HOME/.cache/negvocab/lower-venv}")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)

command -v uv >/dev/null 2>&1 || python3 -m pip install -q --disable-pip-version-check -c constraints.txt uv

TORCH=$(grep -E '^torch==' constraints.txt)
VISION=$(grep -E '^torchvision==' constraints.txt)
HAVE=$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('torch'), m.version('torchvision'))" 2>/dev/null || true)
if [ "$HAVE" != "${TORCH#torch==} ${VISION#torchvision==}" ]; then  # (no pipe into grep -q: pipefail)
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$TORCH" "$VISION"
fi
printf '%s\n%s\n' "$TORCH" "$VISION" > "$WORK/torch.txt"
# Never touch an interpreter that is not this venv's (packages are uninstalled below).
"$VENV/bin/python" -c "import sys; sys.exit(0 if sys.prefix != sys.base_prefix and sys.prefix == '$VENV' else f'{sys.prefix} is not the venv $VENV')"

# The project as a clean copy (tracked files as they are now); a planted bound edits the copy only.
SRC="$WORK/src"
mkdir -p "$SRC"
# (tar keeps symbolic links as links: negvocab/prompts links to prompts/, which cp --parents dropped,
# so the wheel built from the copy had no prompt templates; files deleted but not committed are skipped)
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi; done \
    | tar --null -T - -cf - | tar -xf - -C "$SRC"
[ -f "$SRC/negvocab/prompts/gpt_siblings.txt" ] || { echo "the copy of the project lacks negvocab/prompts" >&2; exit 1; }
if [ -n "$PLANT" ]; then
    "$VENV/bin/python" - "$SRC/pyproject.toml" "$PLANT" <<'EOF'
import re, sys
path, plant = sys.argv[1], sys.argv[2]
name = re.match(r"[A-Za-z0-9_.\-]+", plant).group(0)
text = open(path, encoding="utf-8").read()
new, n = re.subn(rf'^(\s*)"{re.escape(name)}[<>=!~][^"]*"', rf'\1"{plant}"', text, count=1, flags=re.M)
if n != 1:
    sys.exit(f"no dependency {name!r} in pyproject.toml to plant {plant!r} on")
open(path, "w", encoding="utf-8").write(new)
print(f"planted {plant!r}")
EOF
fi

# Every direct dependency (the base, the extras its tests need: vlm, llm, report, and the test extra) at the
# lowest version its range allows: what the venv
# holds of them besides torch/torchvision (numpy, pillow, jinja2 came with torchvision) goes first.
DIRECT=$("$VENV/bin/python" - "$SRC/pyproject.toml" <<'PY'
import re, sys, tomllib
p = tomllib.load(open(sys.argv[1], "rb"))["project"]
reqs = p["dependencies"] + [r for x in ("vlm", "llm", "report", "test") for r in p["optional-dependencies"][x]]
print(" ".join(sorted({re.match(r"[A-Za-z0-9_.\-]+", r).group(0).lower() for r in reqs} - {"torch", "torchvision"})))
PY
)
# shellcheck disable=SC2086
uv pip uninstall --quiet --python "$VENV/bin/python" $DIRECT negvocab 2>/dev/null || true
# --upgrade: what earlier runs left in the venv does not count; indirect dependencies at their newest
uv pip install --quiet --python "$VENV/bin/python" --resolution lowest-direct --upgrade \
    -c "$WORK/torch.txt" "$SRC[vlm,llm,report,test]"
uv pip freeze --python "$VENV/bin/python" > "$WORK/freeze.txt"
echo "lower ends installed in $(( $(date +%s) - start )) s:"
grep -iE '^(open-clip-torch|faiss-cpu|numpy|nltk|pydantic|openai|tenacity|typer|click|rich|tqdm|platformdirs|safetensors|pillow|matplotlib|scikit-learn|scipy|pandas|jinja2|torch|torchvision|httpx)==' "$WORK/freeze.txt" | tr '\n' ' '
echo

# The CLI smoke tests and the API tests that need no model download (open_clip models are built
# with random weights), run on the installed wheel from the copy, not on this checkout.
cd "$SRC"
rm -rf negvocab  # import the installed package, not the copy's source
env -u PYTHONPATH "$VENV/bin/python" -c "import negvocab, sys; assert '$VENV' in negvocab.__file__, negvocab.__file__"
env -u PYTHONPATH "$VENV/bin/negvocab" --help >/dev/null
# (the text encoder's other architecture families, ~80 s each, are left to the main suite: ViT-B-32's
# text tests run here)
env -u PYTHONPATH "$VENV/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" --durations=5 -W ignore::DeprecationWarning \
    tests/cli/test_app.py tests/test_public_api.py tests/scoring/test_metrics.py tests/vocab/test_vocabulary.py \
    tests/vocab/test_index.py tests/llm/test_client.py tests/vlm/test_text.py tests/report/test_plots.py \
    -k "not other_architecture_families"
echo "lower bounds: ok in $(( $(date +%s) - start )) s"
