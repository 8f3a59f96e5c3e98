#!/usr/bin/env bash
# One GPU session's runs, on a host of one or two H200s, as two streams on separate GPUs:
#   bash bench/h200_session.sh validate   # A: timing vs ncu, repeatability, overhead
#                                         # B: the sandbox with CUDA (one GPU of two),
#                                         #    every built-in solution in the sandbox
#   bash bench/h200_session.sh service    # A: the service end to end on CUDA, the corpus
#                                         # B: every problem in benchmark mode, and our
#                                         #    medians again
#   bash bench/h200_session.sh outside    # problems from outside this repository (in .ext/,
#                                         # never committed) uploaded over REST, validated on
#                                         # the worker, submitted: GPU MODE (A), KernelBench
#                                         # and the built-in vectoradd's service demo (B)
#   bash bench/h200_session.sh again      # A: the service demo and the corpus again
#                                         # B: the built-in PROBLEMS named, again
#   bash bench/h200_session.sh recheck    # A: sort_py (large inputs) through REST, the
#                                         #    corpus's CUDA cases; B: the service demo,
#                                         #    every problem with the harness's own clock
#   bash bench/h200_session.sh worker     # one stream: the service demo through the outbox and
#                                         #    the worker package on CUDA, the persisting-L2
#                                         #    measurement three times over, the CUDA cases
#   bash bench/h200_session.sh repeat     # one stream: the persisting-L2 measurement again,
#                                         #    vectoradd graded 6 times in leaderboard mode,
#                                         #    each with inputs of its own (the nonce)
#   bash bench/h200_session.sh sandbox    # one stream: the sandbox's tests, the corpus's CUDA
#                                         #    cases, every built-in solution on CUDA
#   bash bench/h200_session.sh speed      # one stream: (PROBE=1) the device-resident transport
#                                         #    (bench/transport_probe.py), a backlog through
#                                         #    the service (bench/backlog.py: turnaround, test
#                                         #    and leaderboard gradings a minute, the GPU's
#                                         #    busy fraction, scores of vectoradd, rmsnorm and
#                                         #    matmul over fresh gradings), GPU MODE's eval.py
#                                         #    beside ours on its vectoradd_py (.ext/gpumode)
#   bash bench/h200_session.sh cases      # one stream: the corpus's CUDA cases, the GPU's
#                                         #    state around them, (NCU=1) our medians against ncu
#   bash bench/h200_session.sh speedcases # speed, then cases
#   bash bench/h200_session.sh ncuspeed   # one stream: Nsight Compute in the sandbox
#                                         #    (bench/ncu_probe.py), then the speed stream
#   bash bench/h200_session.sh ranking    # one stream: rmsnorm's ten fresh leaderboard
#                                         #    gradings through serve, our medians against ncu
#   bash bench/h200_session.sh compare    # one stream: our medians against ncu, the corpus's
#                                         #    CUDA cases and the GPU's state around them
#   bash bench/h200_session.sh gpumode    # one stream: Helion and CuTe DSL present?, the built-in
#                                         #    Helion and CuTe DSL solutions (LANGUAGES),
#                                         #    (CONV2D=1) conv2d_py's example under GPU MODE's
#                                         #    eval.py and ours, GPU MODE's reference-kernels
#                                         #    (.ext/reference-kernels) swept on CUDA
#                                         #    (bench/gpumode_sweep.py; SWEEP_ONLY, SWEEP_FROM),
#                                         #    (NCU_PROBE=1) Nsight Compute in the sandbox
#   bash bench/h200_session.sh profile    # one stream: profile mode under Nsight Compute through
#                                         #    the service against ncu's own run
#                                         #    (bench/ncu_profile_check.py; PROFILED; DIRECT=1:
#                                         #    graded in one process, not the service), (RMSNORM=1)
#                                         #    rmsnorm's ten fresh leaderboard gradings
#   bash bench/h200_session.sh ranked     # A: a persisting-L2 window against the flush
#                                         #    (bench/l2_persisting.py: honest medians with
#                                         #    the reset off and on too), the corpus's CUDA
#                                         #    cases; B: the ranked-input tests
# With one GPU the streams run one after the other. Needs .whl/ (bench/README.md: the
# service's wheels and Debian 12's bubblewrap .deb); problems from outside this repository
# (never committed) are carried in .ext/ (bench/outside/README.md). Logs and JSON go to $OUT.
set -u
what="${1:?validate or service}"
out="${OUT:-/tmp/kj-session}"; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bwrap && dpkg -x .whl/bubblewrap_*.deb /tmp/bwrap || exit 1
export KJ_BWRAP=/tmp/bwrap/usr/bin/bwrap PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# CuTe DSL (the cute extra), too large for one call's carry: CUTE_PARTS names the pieces of
# one .tar.xz of its wheels' files, in order (bench/README.md), unpacked beside the wheels.
# Its `cutlass` lies in nvidia_cutlass_dsl/dsl_packages, which a .pth file puts on the path
# of an installed environment; /tmp/site is no site directory, so it goes on PYTHONPATH.
if [ -n "${CUTE_PARTS:-}" ]; then
  cat $CUTE_PARTS | tar -xJ -C /tmp/site || exit 1
  export PYTHONPATH=$PYTHONPATH:/tmp/site/nvidia_cutlass_dsl/dsl_packages
fi
# A container's cgroup v2 with no controllers delegated: the sandbox's cgroups go under /kj.
if [ -z "${KJ_SANDBOX_CGROUP:-}" ] && [ -w /sys/fs/cgroup ]; then
  mkdir -p /sys/fs/cgroup/kj && export KJ_SANDBOX_CGROUP=/kj
fi
export CUDA_DEVICE_ORDER=PCI_BUS_ID TORCH_EXTENSIONS_DIR=/tmp/kj-bench-extensions
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,memory.used \
  --format=csv,noheader
echo "cgroups: $(stat -fc %T /sys/fs/cgroup); own: $(tr '\n' ' ' </proc/self/cgroup)"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

step() {  # step SECONDS TITLE COMMAND...: one bounded step of a stream
  local limit=$1 title=$2; shift 2
  echo "== $title ($(date +%T))"
  local started=$SECONDS
  timeout -k 10 "$limit" "$@"; local rc=$?
  echo "== $title: exit $rc after $((SECONDS - started)) s"
}

validate_a() {
  step 60 "overhead: test-mode grading from process start to report" \
    python3 bench/repeatability.py overhead vectoradd pytorch --out "$out/overhead.json"
  step 260 "our medians against ncu" python3 bench/validate_timing.py compare "$out"
  step 40 "GEMM 8192 with idle gaps between samples" \
    python3 bench/validate_timing.py gaps gemm_bf16_8192_torch
  step 300 "vectoradd graded ${RUNS:-10} times in fresh processes" \
    python3 bench/repeatability.py runs vectoradd pytorch --runs "${RUNS:-10}" \
    --out "$out/repeat_vectoradd.json"
}

validate_b() {
  step 60 "sandbox check (cuda)" python3 -c "
import time; from grader.confine import check_sandbox
t = time.monotonic(); problem = check_sandbox('cuda')
print('ok' if not problem else problem, f'{time.monotonic() - t:.1f} s')"
  step 60 "sandbox check (cuda), /sys exposed read-only" env \
    KJ_SANDBOX_RO_PATHS=/sys/devices:/sys/bus:/sys/module python3 -c "
import time; from grader.confine import check_sandbox
t = time.monotonic(); problem = check_sandbox('cuda')
print('ok' if not problem else problem, f'{time.monotonic() - t:.1f} s')"
  if [ "$gpus" -gt 1 ]; then
    step 90 "only this worker's GPU in the sandbox" python3 bench/gpu_nodes_check.py
  fi
  step 90 "sandbox tests" python3 -m pytest -q -p no:cacheprovider tests/sandbox
  step 240 "built-in solutions in the sandbox, test mode on CUDA" python3 -m pytest -q \
    -p no:cacheprovider -p no:benchmark -rs -n 6 tests/grader/test_builtin_problems.py
}

service_demo() {
  step 60 "the service's modules import" python3 -c \
    "import server.app, server.worker.gpu, server.worker.recorders, server.cli, celery.bin.celery, kombu.transport.sqlalchemy"
  step 240 "service demo: serve + a sandboxed worker on CUDA, HTTP submissions" \
    python3 bench/service_demo.py problems/vectoradd/solutions/pytorch.py \
    problems/vectoradd/solutions/triton.py problems/vectoradd/solutions/wrong_zeros.py
}

service_a() {
  service_demo
  step 100 "cost of isolation on CUDA" python3 bench/sandbox_overhead.py --device cuda --runs 3
  corpus
}

service_b() {
  step 240 "every built-in problem in benchmark mode" \
    python3 bench/problem_times.py --out "$out/problem_times.json"
  step 90 "our medians again (ncu's are in the validate run)" python3 bench/validate_timing.py ours
}

cuda_cases() {  # the corpus cases that run on CUDA, as a pytest -k expression
  grep -l 'device.*cuda' tests/hostile/cases/*.py | xargs -n1 basename \
    | sed 's/\.py$//' | paste -sd'|' | sed 's/|/ or /g'
}

cuda_corpus() {
  step 150 "hostile corpus, CUDA cases" python3 -m pytest -q -p no:cacheprovider -rs \
    tests/hostile/test_corpus.py -k "$(cuda_cases)"
}

corpus() {  # the hostile corpus: CUDA cases, GPU state around them, then the CPU cases
  step 30 "GPU state before the corpus" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  cuda_corpus
  step 30 "GPU state after the CUDA cases" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  step 200 "hostile corpus, CPU cases (a cgroup v2 host)" python3 -m pytest -q \
    -p no:cacheprovider tests/hostile -k "not ($(cuda_cases))"
}

run_streams() {  # run_streams A B: on GPUs 0 and 1 at once, or one after the other
  if [ "$gpus" -gt 1 ]; then
    CUDA_VISIBLE_DEVICES=0 "$1" >"$out/a.log" 2>&1 &
    CUDA_VISIBLE_DEVICES=1 "$2" >"$out/b.log" 2>&1 &
    wait
  else
    "$1" >"$out/a.log" 2>&1; "$2" >"$out/b.log" 2>&1
  fi
  echo "---- stream A"; grep -v '"GET /api' "$out/a.log" | tail -c 5500
  echo "---- stream B"; tail -c 5500 "$out/b.log"
}

again_a() {  # a second try of the service stream's first half
  service_demo
  corpus
}

again_b() {  # named built-in problems (PROBLEMS)
  step 200 "built-in problems in benchmark mode: ${PROBLEMS:-all}" \
    python3 bench/problem_times.py ${PROBLEMS:-}
}

sort_upload() {  # GPU MODE's sort_py: 100M-element benchmark cases
  step 240 "sort_py uploaded, validated, submitted" python3 bench/upload_demo.py \
    .ext/sort_py.tar.gz pass:.ext/pmpp_v2/sort_py/solutions/correct/ref.py \
    fail:bench/outside/sort_wrong_descending.py
}

outside_a() {  # GPU MODE's conv2d_py and sort_py through REST, validated on this worker
  # conv2d_py as published: its own example solution leaves cuDNN's TF32 on, which the
  # reference turns off, so validation on Hopper must refuse it; uploaded again without
  # that example (the same files, so the same version, validated again) it goes live.
  step 300 "conv2d_py uploaded (refused), again without its TF32 example, submitted" \
    python3 bench/upload_demo.py .ext/conv2d_py.tar.gz expect:invalid \
    .ext/conv2d_py_v2.tar.gz pass:bench/outside/conv2d_no_tf32.py \
    pass:bench/outside/conv2d_cheat_reuse_buffer.py \
    fail:.ext/pmpp_v2/conv2d_py/solutions/wrong/empty.py
  sort_upload
}

outside_b() {  # KernelBench level 1 modules the same way
  step 200 "KernelBench 63 uploaded, validated, submitted" python3 bench/upload_demo.py \
    .ext/kb63_conv2d.zip pass:bench/outside/conv63_correct.py \
    fail:bench/outside/conv63_wrong_weights.py
  step 200 "KernelBench 40 uploaded, validated, submitted" python3 bench/upload_demo.py \
    .ext/kb40_layernorm.zip pass:bench/outside/ln40_correct.py \
    fail:bench/outside/ln40_wrong_lastdim.py
  service_demo  # a built-in problem's leaderboard on this device type, for comparison
}

recheck_a() {  # sort_py (large inputs) through REST, then the CUDA corpus cases
  sort_upload
  cuda_corpus
}

recheck_b() {  # the service demo, then every built-in problem with the harness's clock
  service_demo
  step 240 "every built-in problem in benchmark mode, with the harness's clock" \
    python3 bench/problem_times.py --out "$out/problem_times.json"
}

ranked_a() {  # catalogue line 31 measured, then the CUDA cases with the new ones
  step 200 "persisting-L2 window against the flush, reset off and on" \
    python3 bench/l2_persisting.py --out "$out/l2_persisting.json"
  step 30 "GPU state before the corpus" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  cuda_corpus
  step 30 "GPU state after the CUDA cases" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
}

ranked_b() {  # ranked inputs that never repeat, graded in this host's sandbox
  step 200 "ranked inputs: learnt in one grading, never met again" python3 -m pytest -q \
    -p no:cacheprovider tests/hostile/test_ranked_inputs.py
}

worker_stream() {
  service_demo
  step 200 "persisting-L2 window against the flush, each median of three" \
    python3 bench/l2_persisting.py --repeats 3 --out "$out/l2_persisting.json"
  cuda_corpus
}

repeat_stream() {
  step 200 "persisting-L2 window against the flush, each median of three" \
    python3 bench/l2_persisting.py --repeats 3 --out "$out/l2_persisting.json"
  step 420 "vectoradd graded ${RUNS:-6} times in leaderboard mode, fresh processes" \
    python3 bench/repeatability.py runs vectoradd pytorch --runs "${RUNS:-6}" \
    --mode leaderboard --out "$out/repeat_leaderboard.json"
}

sandbox_stream() {  # after a change to the sandbox: its tests, the CUDA cases, CUDA builds
  step 120 "sandbox tests on a GPU host" python3 -m pytest -q -p no:cacheprovider -rs \
    tests/sandbox
  cuda_corpus
  step 300 "built-in solutions on CUDA, in the sandbox" python3 -m pytest -q \
    -p no:cacheprovider -rs tests/grader/test_builtin_problems.py
}

speed_stream() {  # the grader with inputs and outputs in device memory, through the service
  if [ -n "${PROBE:-}" ]; then
    step 60 "the transport: a slab across the sandbox, context starts beside a timed kernel" \
      python3 bench/transport_probe.py --skip-grading --out "$out/probe.json"
  fi
  step 270 "backlog through serve: turnaround, test and leaderboard gradings a minute" \
    python3 bench/backlog.py --problem vectoradd --problem rmsnorm --problem matmul \
    --test 40 --leaderboard 10 --users 4 --turnarounds 6 --out "$out/backlog.json"
  step 60 "GPU MODE's eval.py and kerneljudge grade on its vectoradd_py" \
    python3 bench/gpumode_side_by_side.py .ext/gpumode/pmpp_v2/vectoradd_py \
    problems/vectoradd/solutions/pytorch.py --out "$out/side_by_side.json"
}

cases_stream() {  # the corpus's CUDA cases (and, with NCU=1, our medians against Nsight Compute)
  step 30 "GPU state before the corpus" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  step 240 "hostile corpus, CUDA cases" python3 -m pytest -q -p no:cacheprovider -rs \
    tests/hostile/test_corpus.py -k "$(cuda_cases)"
  step 30 "GPU state after the CUDA cases" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  if [ -n "${NCU:-}" ]; then
    step 200 "our medians against ncu" python3 bench/validate_timing.py compare "$out"
  fi
}


ncu_and_speed() {
  step 120 "Nsight Compute outside and inside the sandbox" python3 bench/ncu_probe.py \
    --out "$out/ncu_probe.json"
  speed_stream
}

gpumode_stream() {
  step 60 "kernel languages on this worker" python3 -c "
import importlib.metadata as m, importlib.util as u
for name, dist in (('helion', 'helion'), ('cutlass', 'nvidia-cutlass-dsl')):
    print(name, m.version(dist) if u.find_spec(name) else 'absent')"
  # LANGUAGES: the built-in solutions graded in the sandbox (a pytest -k expression; empty: none)
  [ -n "${LANGUAGES-helion or cute}" ] && step 180 "built-in solutions in ${LANGUAGES-helion or cute}, in the sandbox, test mode on CUDA" \
    python3 -m pytest -q -p no:cacheprovider -rs tests/grader/test_builtin_problems.py \
    -k "${LANGUAGES-helion or cute}"
  if [ -n "${CONV2D:-}" ]; then  # GPU MODE's eval.py and ours on conv2d_py's own example
    step 120 "conv2d_py's solutions/correct/ref.py, their eval.py and ours, test mode" \
      python3 bench/gpumode_side_by_side.py .ext/reference-kernels/problems/pmpp_v2/conv2d_py \
      .ext/reference-kernels/problems/pmpp_v2/conv2d_py/solutions/correct/ref.py --mode test \
      --out "$out/conv2d_side_by_side.json"
  fi
  # SWEEP_FROM: an earlier run's JSON (carried in .ext/): only the problems it lacks are swept;
  # SWEEP_ONLY: globs of the problems to sweep (all, without it)
  local resume=(); if [ -n "${SWEEP_FROM:-}" ]; then cp "$SWEEP_FROM" "$out/sweep_cuda.json"; resume=(--resume); fi
  local only=(); if [ -n "${SWEEP_ONLY:-}" ]; then read -ra only <<<"$SWEEP_ONLY"; only=(--only "${only[@]}"); fi
  step "${SWEEP_S:-330}" "GPU MODE's reference-kernels swept on CUDA, ${JOBS:-1} problems at once" \
    python3 bench/gpumode_sweep.py .ext/reference-kernels --device cuda --jobs "${JOBS:-1}" \
    --timeout "${SWEEP_TIMEOUT:-240}" --commit "${RK_COMMIT:-f83cb92}" --declare bench/gpumode_declared.yml \
    --json "$out/sweep_cuda.json" "${resume[@]}" "${only[@]}"
  if [ -n "${NCU_PROBE:-}" ]; then
    step 90 "Nsight Compute outside and inside the sandbox" python3 bench/ncu_probe.py \
      --out "$out/ncu_probe.json"
  fi
}

profile_stream() {  # profile mode under Nsight Compute through the service; rmsnorm's ranking
  step 330 "profile mode through serve against ncu's own run (vectoradd: ${PROFILED:-pytorch triton cuda_inline})" \
    python3 bench/ncu_profile_check.py ${PROFILED:-pytorch triton cuda_inline} ${DIRECT:+--direct} ${VARIANTS:+--variants} \
    --out "$out/ncu_profile.json"
  step 30 "GPU state after the profiles" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  if [ -n "${RMSNORM:-}" ]; then
    step 200 "rmsnorm: ten fresh leaderboard gradings through serve" \
      python3 bench/backlog.py --problem rmsnorm --test 0 --leaderboard 10 --users 4 \
      --turnarounds 0 --out "$out/backlog_rmsnorm.json"
  fi
}

compare_stream() {
  step 240 "our medians against ncu" python3 bench/validate_timing.py compare "$out"
  NCU= cases_stream
}

ranking_stream() {  # rmsnorm's ten fresh leaderboard gradings, then our medians against ncu
  step 200 "rmsnorm: ten fresh leaderboard gradings through serve" \
    python3 bench/backlog.py --problem rmsnorm --test 0 --leaderboard 10 --users 4 \
    --turnarounds 0 --out "$out/backlog_rmsnorm.json"
  step 30 "GPU state after the gradings" python3 -c \
    "from grader.hygiene import gpu_state; print(gpu_state())"
  step 300 "our medians against ncu" python3 bench/validate_timing.py compare "$out"
}





speed_and_cases() {
  speed_stream
  cases_stream
}

one_stream() {  # one_stream NAME: a single stream, on this host's first GPU
  CUDA_VISIBLE_DEVICES=0 "$1" >"$out/a.log" 2>&1
  echo "---- stream"; grep -v '"GET /api' "$out/a.log" | tail -c 9000
}

case "$what" in
  validate) run_streams validate_a validate_b ;;
  outside) run_streams outside_a outside_b ;;
  service) run_streams service_a service_b ;;
  again) run_streams again_a again_b ;;
  recheck) run_streams recheck_a recheck_b ;;
  ranked) run_streams ranked_a ranked_b ;;
  worker) one_stream worker_stream ;;
  repeat) one_stream repeat_stream ;;
  sandbox) one_stream sandbox_stream ;;
  speed) one_stream speed_stream ;;
  cases) one_stream cases_stream ;;
  speedcases) one_stream speed_and_cases ;;
  ncuspeed) one_stream ncu_and_speed ;;
  compare) one_stream compare_stream ;;
  ranking) one_stream ranking_stream ;;
  gpumode) one_stream gpumode_stream ;;
  profile) one_stream profile_stream ;;
  *) echo "unknown: $what"; exit 2 ;;
esac
