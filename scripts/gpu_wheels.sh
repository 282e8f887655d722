#!/usr/bin/env bash
# Prepare .whl/ for scripts/gpu_check.sh on the lent GPU machine (Python 3.12, its own torch, no
# network): the wheels negvocab's vlm/scoring code and tests need that its image lacks, at the
# versions pinned here, plus WordNet 3.0 packed from this machine's set-up. Run it here, then call
# the device with carry [".whl"] and command "bash scripts/gpu_check.sh".
set -euo pipefail
dest=${1:-.whl}
pyver=${PYVER:-3.12}  # the device's Python
rm -rf "$dest" && mkdir -p "$dest"  # one version of each: two stop the install there
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dest" \
    open_clip_torch==3.3.0 ftfy==6.3.1 wcwidth==0.7.0 \
    pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.7.0 typing-inspection==0.4.5 \
    nltk==3.10.4 defusedxml==0.7.1 platformdirs==4.14.8 tenacity==9.2.1 typer==0.29.1 \
    faiss-cpu==1.15.1
wordnet=$(python3 -c "from negvocab.labels.wordnet import load_wordnet; print(load_wordnet().root.path)")
tar cJf "$dest/wordnet.tar.xz" -C "$wordnet" .
du -sh "$dest"; ls "$dest"
