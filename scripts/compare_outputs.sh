#!/usr/bin/env bash
# Show that two revisions give the same results: run the demo and the example grids (grid.toml and the
# field's methods, grid_field.toml: random weights,
# offline) from each revision in the same folder, then compare every output file. Both run under torch's
# deterministic mode (fixed text chunks: clock-sized chunks differ by 1e-7 under load) with input files'
# mtimes fixed (the grid's set digests read them). Files must be
# byte-identical, except JSON/HTML that record the time of the run, compared with times masked, and results
# files whose row keys changed, compared row by row and value for value (scripts/compare_rows.py).
#   bash scripts/compare_outputs.sh OLD_REV [NEW_REV]      (NEW_REV defaults to the working tree)
set -euo pipefail
old=${1:?usage: compare_outputs.sh OLD_REV [NEW_REV]}; new=${2:-}
repo=$(cd "$(dirname "$0")/.." && pwd); work=$(mktemp -d); run=$work/run
mkdir -p "$work/mpl" && printf 'svg.hashsalt: negvocab\n' > "$work/mpl/matplotlibrc"  # fixed SVG ids
snap() {  # snap SRC OUT: the demo and the grid from source tree SRC, results moved to OUT
    rm -rf "$run" && mkdir -p "$run" && cp -r "$1/examples" "$run/"
    (cd "$run" && export PYTHONPATH="$1" NEGVOCAB_CACHE_DIR="$run/cache" SOURCE_DATE_EPOCH=0 MATPLOTLIBRC="$work/mpl" &&
        nv() { python3 -c 'import sys, torch; torch.use_deterministic_algorithms(True); from negvocab.cli import main; sys.argv[0] = "negvocab"; main()' "$@"; } &&
        nv demo --random-weights --pool 300 -o demo >demo.log 2>&1 && python3 examples/grid_data.py >/dev/null &&
        find examples -type f -exec touch -d @1000000000 {} + &&  # the grid's set digests read mtimes
        nv grid run examples/grid.toml --random-weights -o grid-out >grid.log 2>&1 &&
        nv grid run examples/grid_field.toml --random-weights -o grid-field >grid-field.log 2>&1)
    mv "$run" "$2"
}
git -C "$repo" worktree add -q --detach "$work/old" "$old"
snap "$work/old" "$work/a"
if [ -n "$new" ]; then git -C "$repo" worktree add -q --detach "$work/new" "$new"; snap "$work/new" "$work/b"; else snap "$repo" "$work/b"; fi
mask() { sed -E 's/[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z?/TIME/g; s/report made [0-9-]+ [0-9:]+ UTC/report made TIME/g; s/"([a-z_]*seconds|created)": *("[^"]*"|[0-9.e-]+)/"\1": X/g' "$1"; }
same=0; masked=0; rekeyed=0; differ=0
files=$(cd "$work/a" && find demo grid-out grid-field -type f | sort)
[ "$files" == "$(cd "$work/b" && find demo grid-out grid-field -type f | sort)" ] || { echo "the two runs wrote different files"; differ=1; }
for f in $files; do
    if cmp -s "$work/a/$f" "$work/b/$f"; then same=$((same + 1))
    elif [[ $f == *.json || $f == *.html ]] && diff -q <(mask "$work/a/$f") <(mask "$work/b/$f") >/dev/null; then masked=$((masked + 1))
    elif [[ $f == *.json || $f == *.csv || $f == *.parquet ]] &&
        PYTHONPATH="$repo" python3 "$repo/scripts/compare_rows.py" "$work/a/$f" "$work/b/$f" | sed "s|$work/b/||"; then
        rekeyed=$((rekeyed + 1))  # the same rows, value for value, under the row keys of the new reader
    else differ=$((differ + 1)); echo "DIFFERS: $f"; fi
done
echo "$old vs ${new:-working tree}: $same files byte-identical, $masked equal but for the run's time, $rekeyed with the same rows under other row keys, $differ differ"
git -C "$repo" worktree remove --force "$work/old"; [ -n "$new" ] && git -C "$repo" worktree remove --force "$work/new"
[ "$differ" -eq 0 ]
