#!/usr/bin/env bash
# mypy over the public API ([tool.mypy] in pyproject.toml): negvocab/__init__.py and every module it
# exports a name from (negvocab._EXPORTS, negvocab._MODULES), so a new export is checked from the day
# it is added. Exits non-zero on any type error. Usage: bash scripts/check_types.sh [mypy options]
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" python3 - <<'PY'
import importlib.util
import os

import negvocab

root = os.getcwd()
mods = sorted(set(negvocab._EXPORTS.values()) | set(negvocab._MODULES.values()))
print("negvocab/__init__.py")
for m in mods:
    print(os.path.relpath(importlib.util.find_spec(m).origin, root))
PY
)
echo "mypy over the public API: ${#files[@]} modules" >&2
exec python3 -m mypy "$@" "${files[@]}"
