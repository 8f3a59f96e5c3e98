#!/usr/bin/env bash
# The grading validation on a GPU host (docs/benchmarks.md): our medians against Nsight
# Compute, fresh-process repeatability, grading overhead. Writes JSON under $OUT.
set -u
out="${OUT:-/tmp/kj-validation}"; mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TORCH_EXTENSIONS_DIR=/tmp/kj-bench-extensions
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== overhead: test-mode grading from process start to report =="
python3 bench/repeatability.py overhead vectoradd pytorch --out "$out/overhead.json"
echo "== our medians against ncu =="
python3 bench/validate_timing.py compare "$out" 2>&1 | grep -v '^{'
echo "== one submission graded ${RUNS:-10} times in fresh processes =="
python3 bench/repeatability.py runs vectoradd pytorch --runs "${RUNS:-10}" --out "$out/repeat_vectoradd.json"
