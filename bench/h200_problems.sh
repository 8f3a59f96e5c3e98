#!/usr/bin/env bash
# Every built-in problem's example solutions on the GPU host, through the real harness:
# correct ones must pass, wrong ones fail, CUDA-only ones run here (tests/grader).
# Needs the test wheels in .whl/ (see bench/README.md); the load_inline builds take about a
# minute each.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pytest -q -p no:cacheprovider -rs tests/grader/test_builtin_problems.py "$@" 2>&1 | tail -25
