#!/usr/bin/env bash
# One GPU command for the harness's windows (grader/gate.py, grader/clock.py): the honest
# solutions' spread over fresh leaderboard gradings, the CUDA hostile timing cases beside
# them, then bench/gated_clock_probe.py's windows (a runner that keeps its context busy on a
# side stream beside an honest one); KJ_GPU_CLOCK=windows unless set (the default). Run
# from the repository root on a GPU host with the Debian bubblewrap package in .whl/; results under
# $OUT (default /tmp/kj-windows), at most eight files. STAGES picks among spread, hostile,
# launch (a launch-bound module's gradings), placement (bench/launch_spread.py: the same
# module's device time by process and by where its tensors lie), modes (benchmark beside leaderboard mode),
# excess (bench/window_excess.py: where a window's
# figure parts from the runner's median), ncu (each case beside Nsight Compute's kernel time)
# and probe (default: spread hostile probe);
# SPREAD_S bounds the spread (default 240 s), PROBLEMS names its problems.
#   [STAGES="spread hostile probe"] [SPREAD_S=240] bash bench/windows_session.sh [RUNS]
set -u
OUT=${OUT:-/tmp/kj-windows}
RUNS=${1:-3}
mkdir -p "$OUT" /tmp/bwrap
dpkg -x .whl/bubblewrap_*.deb /tmp/bwrap
export KJ_BWRAP=/tmp/bwrap/usr/bin/bwrap PYTHONUNBUFFERED=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
export TORCH_EXTENSIONS_DIR=/tmp/kj-ext KJ_GPU_CLOCK=${KJ_GPU_CLOCK:-windows}
if mkdir -p /sys/fs/cgroup/kj 2>/dev/null; then export KJ_SANDBOX_CGROUP=/kj; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$OUT/gpu.txt"
date -u +%FT%TZ | tee -a "$OUT/gpu.txt"
STAGES=${STAGES:-spread hostile probe}
# CLOCKS_MS: the GPU's SM clock, power and use logged every CLOCKS_MS ms into clocks.csv
# (nvidia-smi), beside the results' `at` times.
if [ -n "${CLOCKS_MS:-}" ]; then
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu \
        --format=csv,noheader -lms "$CLOCKS_MS" > "$OUT/clocks.csv" &
    CLOCKS_PID=$!
    trap 'kill $CLOCKS_PID 2>/dev/null' EXIT
fi
stage() { [[ " $STAGES " == *" $1 "* ]]; }
if stage spread; then
    timeout "${SPREAD_S:-240}" python3 -m bench.ranked_clock spread --runs "$RUNS" \
        --problems ${PROBLEMS:-vectoradd rmsnorm matmul} \
        > "$OUT/spread.jsonl" 2> "$OUT/spread.err"
    echo "spread: $?"
fi
if stage hostile; then
    timeout 180 python3 -m bench.ranked_clock hostile > "$OUT/hostile.jsonl" 2> "$OUT/hostile.err"
    echo "hostile: $?"
fi
if stage launch; then
    timeout "${LAUNCH_S:-200}" python3 -m bench.ranked_clock launch-bound --runs "$RUNS" \
        > "$OUT/launch.jsonl" 2> "$OUT/launch.err"
    echo "launch-bound: $?"
fi
if stage placement; then
    timeout "${PLACEMENT_S:-150}" python3 -m bench.launch_spread --procs "$RUNS" \
        > "$OUT/placement.jsonl" 2> "$OUT/placement.err"
    echo "placement: $?"
fi
if stage modes; then
    timeout "${MODES_S:-120}" python3 -m bench.ranked_clock modes \
        --problems ${PROBLEMS:-vectoradd rmsnorm matmul} > "$OUT/modes.jsonl" 2> "$OUT/modes.err"
    echo "modes: $?"
fi
if stage excess; then
    timeout "${EXCESS_S:-240}" python3 -m bench.window_excess --runs "${EXCESS_RUNS:-3}" ${EXCESS_ARGS:-} \
        > "$OUT/excess.jsonl" 2> "$OUT/excess.err"
    echo "excess: $?"
fi
if stage ncu; then
    timeout "${NCU_S:-300}" python3 -m bench.ranked_clock ncu > "$OUT/ncu.jsonl" 2> "$OUT/ncu.err"
    echo "ncu: $?"
fi
if stage probe; then
    timeout 100 python3 -m bench.gated_clock_probe --batches 3 --modes windows windows+spin \
        --problems vectoradd:pytorch rmsnorm:pytorch matmul:pytorch --out "$OUT/probe" \
        > "$OUT/probe.log" 2>&1
    echo "probe: $?"
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
