#!/usr/bin/env bash
# Isolation on the GPU host: the sandbox with CUDA, the hostile corpus's CUDA cases, every
# built-in problem's solutions inside the sandbox (load_inline builds included), and the
# cost of isolation. Needs in .whl/: the test wheels (bench/README.md) and Debian 12's
# bubblewrap .deb (`apt-get download bubblewrap`), unpacked here with dpkg -x, never into /.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bwrap && dpkg -x .whl/bubblewrap_*.deb /tmp/bwrap || exit 1
export KJ_BWRAP=/tmp/bwrap/usr/bin/bwrap PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
echo "== cgroups: $(stat -fc %T /sys/fs/cgroup) own: $(cat /proc/self/cgroup | tr '\n' ' ')"
echo "== sandbox check (cuda)"
python3 -c "
import time; from grader.confine import check_sandbox
t = time.monotonic(); problem = check_sandbox('cuda')
print('ok' if not problem else problem, f'{time.monotonic() - t:.1f} s')"
echo "== sandbox check (cuda) with /sys exposed read-only: does CUDA start faster?"
KJ_SANDBOX_RO_PATHS=/sys/devices:/sys/bus:/sys/module python3 -c "
import time; from grader.confine import check_sandbox
t = time.monotonic(); problem = check_sandbox('cuda')
print('ok' if not problem else problem, f'{time.monotonic() - t:.1f} s')"
echo "== GPU state after the check"
python3 -c "from grader.hygiene import gpu_state; print(gpu_state())"
echo "== sandbox tests"
python3 -m pytest -q -p no:cacheprovider tests/sandbox 2>&1 | tail -5
echo "== hostile corpus (CPU and CUDA cases)"
python3 -m pytest -q -p no:cacheprovider -rs tests/hostile "$@" 2>&1 | tail -40
echo "== GPU state after the corpus"
python3 -c "from grader.hygiene import gpu_state; print(gpu_state())"
echo "== cost of isolation"
python3 bench/sandbox_overhead.py --device cuda --runs 3
echo "== built-in problems' solutions in the sandbox"
python3 -m pytest -q -p no:cacheprovider -rs tests/grader/test_builtin_problems.py 2>&1 | tail -25
