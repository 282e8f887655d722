#!/usr/bin/env bash
# mypy over the whole package ([tool.mypy] in pyproject.toml): every module under negvocab/, so a new
# module is checked from the day it is added. Exits non-zero on any type error.
# Usage: bash scripts/check_types.sh [mypy options]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 -m mypy "$@" negvocab
