#!/usr/bin/env bash
# The CUDA checks in one run: the @gpu tests (text exactness fp32/fp16, images + local features in
# fp32/fp16, knn with faiss-gpu and torch, scorers and test-time methods on CUDA), the GPU scoring
# benchmark, every method over the MOS-four protocol at full size, then the vlm
# and scoring suites on that machine's own Python/torch. Logs go to $OUT (or ./gpu-logs); the exit
# status is non-zero when any step failed (summary.log says which).
# On a bare machine, run scripts/gpu_wheels.sh here first and carry .whl/ (the wheels its image
# lacks and WordNet 3.0).
set -uo pipefail
OUT=${OUT:-gpu-logs}; mkdir -p "$OUT"; : > "$OUT/summary.log"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export NEGVOCAB_CACHE_DIR=${NEGVOCAB_CACHE_DIR:-/tmp/negvocab-cache}
if compgen -G ".whl/*.whl" >/dev/null; then
    if ! python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        2>&1 | tee "$OUT/install.log"; then
        echo "install: the carried wheels did not install (see install.log); nothing else was run" | tee -a "$OUT/summary.log"
        exit 1
    fi
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
if [ -f .whl/wordnet.tar.xz ]; then
    mkdir -p /tmp/wordnet && tar xJf .whl/wordnet.tar.xz -C /tmp/wordnet
    export NEGVOCAB_WORDNET_DIR=/tmp/wordnet
fi
status=0
step() {  # step NAME COMMAND...: run, log to $OUT/NAME.log, record the exit status
    local name=$1; shift
    "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    echo "$name: exit $rc" | tee -a "$OUT/summary.log"
    [ "$rc" -eq 0 ] || status=1
}
{
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'numpy', numpy.__version__)"
    python3 -c "import faiss; print('faiss', faiss.__version__, 'gpus', faiss.get_num_gpus())" 2>&1 | tail -1
} 2>&1 | tee "$OUT/env.log"
step gpu_tests python3 -m pytest -p no:cacheprovider -q -rs -m gpu tests/vlm tests/scoring
step bench_scoring_cuda timeout 150 python3 benchmarks/bench_scoring.py --device cuda
# OODD's dictionary runs in numpy on the CPU whatever the device: left out of the GPU run
step bench_paper_scale_cuda timeout 300 python3 benchmarks/bench_paper_scale.py --device cuda --skip oodd
parallel=$(python3 -c "import xdist" 2>/dev/null && echo "-n 8")
step suite timeout 240 python3 -m pytest -p no:cacheprovider -q tests/vlm tests/scoring $parallel
exit $status
