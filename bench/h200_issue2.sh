#!/usr/bin/env bash
# On a GPU host with only torch/triton installed: carry the service's wheels in .whl/,
# run the single-machine service on CUDA end to end, then the grader tests there.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
echo "== service demo (serve + worker on cuda, HTTP submissions) =="
python3 bench/service_demo.py 2>&1 | tee "${OUT:-/tmp}/service_demo.log" | grep -v '"GET /api'
echo "== grader and sandbox tests on this host =="
python3 -m pytest -q -p no:cacheprovider tests/grader tests/sandbox 2>&1 | tail -15
