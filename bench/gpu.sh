#!/usr/bin/env bash
# The GPU host's measurements, as named suites run one after the other on this host's GPUs:
#   bash bench/gpu.sh SUITE [SUITE ...]
# from the repository root, with .whl/ filled by bench/fetch_wheels.sh (the service's wheels
# and Debian 12's bubblewrap .deb); problems from outside this repository (never committed)
# are carried in .ext/ (bench/outside/README.md). Each suite writes $OUT/SUITE.log (default
# $OUT=/tmp/kj-gpu) and the files named below, and prints the log's tail. Sections of
# docs/benchmarks.md name the suite that gave their numbers.
#   timing    our medians against Nsight Compute (validate_timing.py: timing_vs_ncu.json),
#             the 8192³ GEMM with idle gaps, test-mode grading overhead
#             (overhead.json), one submission graded RUNS (10) times in fresh processes in
#             REPEAT_MODE (benchmark; repeat_vectoradd.json)
#   sandbox   the sandbox with CUDA (start time, with /sys exposed read-only too), only the
#             worker's GPU inside it (hosts of several GPUs), tests/sandbox, the transport's
#             ground (transport_probe.py: transport_probe.json), the cost of isolation, the
#             GPU's state after
#   hostile   the hostile corpus's CUDA cases with the GPU's state around them, its CPU cases
#             (CPU_CASES=1), the ranked-input tests, a persisting-L2 window against the
#             flush, each figure a median of three (l2_persisting.json)
#   problems  the kernel languages present, tests/grader on CUDA (every built-in solution in
#             the sandbox; PYTEST_K narrows it, e.g. "helion or cute"), every built-in
#             problem's PyTorch solution in benchmark mode (PROBLEMS; problem_times.json)
#   service   the service's modules import, the service on CUDA end to end (service_demo.py),
#             a backlog through serve: turnaround, gradings a minute, the GPU's busy
#             fraction, scores over fresh gradings (backlog.json)
#   outside   GPU MODE's conv2d_py and sort_py and KernelBench 63 and 40 uploaded over REST,
#             validated on the worker, submitted (upload_demo.py; .ext/*.tar.gz, .ext/*.zip)
#   gpumode   GPU MODE's eval.py beside ours on its vectoradd_py (.ext/gpumode;
#             side_by_side.json) and, with CONV2D=1, on conv2d_py's example
#             (conv2d_side_by_side.json); GPU MODE's reference-kernels, where
#             .ext/reference-kernels is carried, swept on CUDA (sweep_cuda.json;
#             SWEEP_ONLY: globs, SWEEP_FROM: an earlier sweep's JSON to resume, JOBS,
#             SWEEP_S, SWEEP_TIMEOUT, RK_COMMIT)
#   kernelbench KernelBench's levels 1-4 as published (.ext/KernelBench, bench/outside/README.md)
#             swept on CUDA through the validation an upload gets (kernelbench_sweep.py:
#             kernelbench_sweep.json; KB_LEVELS "1 2 3 4", KB_SWEEP_ONLY: globs such as
#             "level1/19_*", KB_SWEEP_FROM: an earlier kernelbench_sweep.json to resume,
#             JOBS, KB_SWEEP_S (280), KB_SWEEP_TIMEOUT (240)), then KernelBench's own
#             eval_kernel_against_ref beside our grading on the same candidate kernels
#             (kernelbench_side_by_side.py: kernelbench_side_by_side.json; KB_SIDE_ONLY:
#             candidate globs, KB_KINDS: reference correct wrong slower hack, KB_SIDE_FROM:
#             an earlier kernelbench_side_by_side.json to resume, KB_SIDE_S (280),
#             KB_SIDE_TIMEOUT (240)); KB_STAGES picks "sweep", "side" or both (default),
#             KB_COMMIT; each stage starts no work after its S seconds (it can run one
#             problem's or candidate's timeouts past them), so a later command resumes it
#             from the JSON carried back
#   judging   a competition's final judging through serve (final_judging.py): ENTRANTS (10)
#             entrants on JUDGED (vectoradd,vectorsum; rmsnorm and matmul time kernels of
#             90 µs and more), K=RUNS (5) or fewer where K would
#             not fit JUDGING_S (480), JUDGINGS (1) judgings; COMPARE: an earlier run's
#             final_judging.json, whose first judging is checked beside this one
#             (final_judging.json)
#   baselines every built-in problem's baselines and PyTorch solution in leaderboard mode
#             (baselines.py; BASELINE_PROBLEMS narrows it), one JSON line each
#   profile   Nsight Compute outside and inside the sandbox (ncu_probe.json), profile mode
#             through serve against ncu's own run (ncu_profile.json; PROFILED: vectoradd's
#             solutions, DIRECT=1: graded in one process, VARIANTS=1)
#   batches   KernelBench level-1 candidates through the batch API with the project's client
#             (batch_throughput.py; .ext/KernelBench carried): BATCH_ITEMS (1000) per tier,
#             the tiers BATCH_TIERS ("quick standard") one after the other in one service,
#             standard and thorough in BATCH_MODE (benchmark); gradings per GPU-hour, POST to
#             verdict, the GPU's busy fraction. Paced to end within BATCH_S (500) seconds,
#             reporting the items that fit; BATCH_AT_ONCE=1 sends every item at once instead.
#             BATCH_PROBLEMS: level-1 numbers, BATCH_OWNER=author: the trainer's own problems.
#             More than one command's worth: bench/gpu_detached.sh with a larger BATCH_S
#             (batch_throughput_<tiers>.json)
# The harness's windows have their own command, bench/windows_session.sh.
# CUTE_PARTS: the pieces of CuTe DSL's .tar.xz (bench/README.md), unpacked beside the wheels.
set -u
[ $# -gt 0 ] || { sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 2; }
for suite in "$@"; do
  case "$suite" in
    timing | sandbox | hostile | problems | service | outside | gpumode | profile | judging \
      | baselines | kernelbench | batches) ;;
    *) echo "unknown suite: $suite (bash bench/gpu.sh with no suite lists them)"; exit 2 ;;
  esac
done
out="${OUT:-/tmp/kj-gpu}"; mkdir -p "$out"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
mkdir -p /tmp/bwrap && dpkg -x .whl/bubblewrap_*.deb /tmp/bwrap || exit 1
# The project is not installed on the GPU host: the wheels and the checkout go on the path.
export KJ_BWRAP=/tmp/bwrap/usr/bin/bwrap PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# CuTe DSL's `cutlass` lies in nvidia_cutlass_dsl/dsl_packages, which a .pth file puts on the
# path of an installed environment; /tmp/site is no site directory, so it goes on PYTHONPATH.
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

step() {  # step SECONDS TITLE COMMAND...: one bounded step of a suite
  local limit=$1 title=$2; shift 2
  echo "== $title ($(date +%T))"
  local started=$SECONDS
  timeout -k 10 "$limit" "$@"; local rc=$?
  echo "== $title: exit $rc after $((SECONDS - started)) s"
}

gpu_state() {  # gpu_state WHEN
  step 30 "GPU state $1" python3 -c "from grader.hygiene import gpu_state; print(gpu_state())"
}

sandbox_check() {  # sandbox_check TITLE [ENV=VALUE ...]: the sandbox's own start on CUDA
  local title=$1; shift
  step 60 "$title" env "$@" python3 -c "
import time; from grader.confine import check_sandbox
t = time.monotonic(); problem = check_sandbox('cuda')
print('ok' if not problem else problem, f'{time.monotonic() - t:.1f} s')"
}

cuda_cases() {  # the corpus cases that run on CUDA, as a pytest -k expression
  grep -l 'device.*cuda' tests/hostile/cases/*.py | xargs -n1 basename \
    | sed 's/\.py$//' | paste -sd'|' | sed 's/|/ or /g'
}

timing() {
  step 60 "overhead: test-mode grading from process start to report" \
    python3 -m bench.repeatability overhead vectoradd pytorch --out "$out/overhead.json"
  step 260 "our medians against ncu" python3 -m bench.validate_timing compare "$out"
  step 40 "GEMM 8192 with idle gaps between samples" \
    python3 -m bench.validate_timing gaps gemm_bf16_8192_torch
  step 420 "vectoradd graded ${RUNS:-10} times in fresh processes, ${REPEAT_MODE:-benchmark} mode" \
    python3 -m bench.repeatability runs vectoradd pytorch --runs "${RUNS:-10}" \
    --mode "${REPEAT_MODE:-benchmark}" --out "$out/repeat_vectoradd.json"
}

sandbox() {
  sandbox_check "sandbox check (cuda)"
  sandbox_check "sandbox check (cuda), /sys exposed read-only" \
    KJ_SANDBOX_RO_PATHS=/sys/devices:/sys/bus:/sys/module
  if [ "$gpus" -gt 1 ]; then
    step 90 "only this worker's GPU in the sandbox" python3 -m bench.gpu_nodes_check
  fi
  step 120 "sandbox tests" python3 -m pytest -q -p no:cacheprovider -rs tests/sandbox
  step 60 "the transport: a slab across the sandbox, context starts beside a timed kernel" \
    python3 -m bench.transport_probe --skip-grading --out "$out/transport_probe.json"
  step 100 "cost of isolation on CUDA" python3 -m bench.sandbox_overhead --device cuda --runs 3
  gpu_state "after the sandbox suite"
}

hostile() {
  gpu_state "before the corpus"
  step 240 "hostile corpus, CUDA cases" python3 -m pytest -q -p no:cacheprovider -rs \
    tests/hostile/test_corpus.py -k "$(cuda_cases)"
  gpu_state "after the CUDA cases"
  if [ -n "${CPU_CASES:-}" ]; then
    step 200 "hostile corpus, CPU cases (a cgroup v2 host)" python3 -m pytest -q \
      -p no:cacheprovider tests/hostile -k "not ($(cuda_cases))"
  fi
  step 200 "ranked inputs: learnt in one grading, never met again" python3 -m pytest -q \
    -p no:cacheprovider tests/hostile/test_ranked_inputs.py
  step 200 "persisting-L2 window against the flush, each median of three" \
    python3 -m bench.l2_persisting --repeats 3 --out "$out/l2_persisting.json"
}

problems() {
  step 60 "kernel languages on this worker" python3 -c "
import importlib.metadata as m, importlib.util as u
for name, dist in (('helion', 'helion'), ('cutlass', 'nvidia-cutlass-dsl')):
    print(name, m.version(dist) if u.find_spec(name) else 'absent')"
  step 300 "tests/grader on CUDA, built-in solutions in the sandbox${PYTEST_K:+: $PYTEST_K}" \
    python3 -m pytest -q -p no:cacheprovider -p no:benchmark -rs -n 6 tests/grader \
    ${PYTEST_K:+-k "$PYTEST_K"}
  step 240 "built-in problems in benchmark mode: ${PROBLEMS:-all}" \
    python3 -m bench.problem_times --out "$out/problem_times.json" ${PROBLEMS:-}
}

service() {
  step 60 "the service's modules import" python3 -c \
    "import server.app, server.worker.gpu, server.worker.recorders, server.cli, celery.bin.celery, kombu.transport.sqlalchemy"
  step 240 "service demo: serve + a sandboxed worker on CUDA, HTTP submissions" \
    python3 -m bench.service_demo problems/vectoradd/solutions/pytorch.py \
    problems/vectoradd/solutions/triton.py problems/vectoradd/solutions/wrong_zeros.py
  step 270 "backlog through serve: turnaround, test and leaderboard gradings a minute" \
    python3 -m bench.backlog --problem vectoradd --problem rmsnorm --problem matmul \
    --test 40 --leaderboard 10 --users 4 --turnarounds 6 --out "$out/backlog.json"
}

outside() {
  # conv2d_py as published: its own example solution leaves cuDNN's TF32 on, which the
  # reference turns off, so validation on Hopper must refuse it; uploaded again without
  # that example (the same files, so the same version, validated again) it goes live.
  step 300 "conv2d_py uploaded (refused), again without its TF32 example, submitted" \
    python3 -m bench.upload_demo .ext/conv2d_py.tar.gz expect:invalid \
    .ext/conv2d_py_v2.tar.gz pass:bench/outside/conv2d_no_tf32.py \
    pass:bench/outside/conv2d_cheat_reuse_buffer.py \
    fail:.ext/pmpp_v2/conv2d_py/solutions/wrong/empty.py
  step 240 "sort_py uploaded, validated, submitted" python3 -m bench.upload_demo \
    .ext/sort_py.tar.gz pass:.ext/pmpp_v2/sort_py/solutions/correct/ref.py \
    fail:bench/outside/sort_wrong_descending.py
  step 200 "KernelBench 63 uploaded, validated, submitted" python3 -m bench.upload_demo \
    .ext/kb63_conv2d.zip pass:bench/outside/conv63_correct.py \
    fail:bench/outside/conv63_wrong_weights.py
  step 200 "KernelBench 40 uploaded, validated, submitted" python3 -m bench.upload_demo \
    .ext/kb40_layernorm.zip pass:bench/outside/ln40_correct.py \
    fail:bench/outside/ln40_wrong_lastdim.py
}

gpumode() {  # each part where its checkout is carried in .ext/
  if [ -d .ext/gpumode/pmpp_v2/vectoradd_py ]; then
    step 60 "GPU MODE's eval.py and kerneljudge grade on its vectoradd_py" \
      python3 -m bench.gpumode_side_by_side .ext/gpumode/pmpp_v2/vectoradd_py \
      problems/vectoradd/solutions/pytorch.py --out "$out/side_by_side.json"
  fi
  [ -d .ext/reference-kernels ] || return 0
  if [ -n "${CONV2D:-}" ]; then
    step 120 "conv2d_py's solutions/correct/ref.py, their eval.py and ours, test mode" \
      python3 -m bench.gpumode_side_by_side .ext/reference-kernels/problems/pmpp_v2/conv2d_py \
      .ext/reference-kernels/problems/pmpp_v2/conv2d_py/solutions/correct/ref.py --mode test \
      --out "$out/conv2d_side_by_side.json"
  fi
  local resume=(); if [ -n "${SWEEP_FROM:-}" ]; then cp "$SWEEP_FROM" "$out/sweep_cuda.json"; resume=(--resume); fi
  local only=(); if [ -n "${SWEEP_ONLY:-}" ]; then read -ra only <<<"$SWEEP_ONLY"; only=(--only "${only[@]}"); fi
  step "${SWEEP_S:-330}" "GPU MODE's reference-kernels swept on CUDA, ${JOBS:-1} problems at once" \
    python3 -m bench.gpumode_sweep .ext/reference-kernels --device cuda --jobs "${JOBS:-1}" \
    --timeout "${SWEEP_TIMEOUT:-240}" --commit "${RK_COMMIT:-f83cb92}" \
    --declare bench/gpumode_declared.yml --json "$out/sweep_cuda.json" "${resume[@]}" "${only[@]}"
}

kernelbench() {  # .ext/KernelBench: its levels swept, then its harness beside ours
  [ -d .ext/KernelBench/KernelBench ] || { echo "no .ext/KernelBench (bench/outside/README.md)"; return 1; }
  local stages=${KB_STAGES:-sweep side} commit=${KB_COMMIT:-423217d9fda91e0c2d67e4a43bf62f96f6d104f1}
  if [[ " $stages " == *" sweep "* ]]; then
    local limit=${KB_SWEEP_S:-280} each=${KB_SWEEP_TIMEOUT:-240} resume=() only=()
    if [ -n "${KB_SWEEP_FROM:-}" ]; then cp "$KB_SWEEP_FROM" "$out/kernelbench_sweep.json"; resume=(--resume); fi
    if [ -n "${KB_SWEEP_ONLY:-}" ]; then read -ra only <<<"$KB_SWEEP_ONLY"; only=(--only "${only[@]}"); fi
    step $((limit + each + 30)) "KernelBench levels ${KB_LEVELS:-1 2 3 4} swept on CUDA, ${JOBS:-1} at once" \
      python3 -m bench.kernelbench_sweep .ext/KernelBench --levels ${KB_LEVELS:-1 2 3 4} \
      --device cuda --jobs "${JOBS:-1}" --timeout "$each" --budget-s "$limit" --commit "$commit" \
      --json "$out/kernelbench_sweep.json" "${resume[@]}" "${only[@]}"
  fi
  if [[ " $stages " == *" side "* ]]; then
    local limit=${KB_SIDE_S:-280} each=${KB_SIDE_TIMEOUT:-240} resume=() only=() kinds=()
    if [ -n "${KB_SIDE_FROM:-}" ]; then cp "$KB_SIDE_FROM" "$out/kernelbench_side_by_side.json"; resume=(--resume); fi
    if [ -n "${KB_SIDE_ONLY:-}" ]; then read -ra only <<<"$KB_SIDE_ONLY"; only=(--only "${only[@]}"); fi
    if [ -n "${KB_KINDS:-}" ]; then read -ra kinds <<<"$KB_KINDS"; kinds=(--kinds "${kinds[@]}"); fi
    # each candidate runs up to two children (KernelBench's, ours) and a baseline per problem
    step $((limit + 3 * each + 30)) "KernelBench's eval_kernel_against_ref beside our grading" \
      python3 -m bench.kernelbench_side_by_side .ext/KernelBench --device cuda --timeout "$each" \
      --budget-s "$limit" --commit "$commit" --candidates /tmp/kj-kernelbench-candidates \
      --json "$out/kernelbench_side_by_side.json" "${resume[@]}" "${only[@]}" "${kinds[@]}"
  fi
}

judging() {
  local budget=${JUDGING_S:-480}
  step "$budget" "a final judging: ${ENTRANTS:-10} entrants on ${JUDGED:-vectoradd,vectorsum}" \
    python3 -m bench.final_judging --entrants "${ENTRANTS:-10}" \
    --problems "${JUDGED:-vectoradd,vectorsum}" --runs "${RUNS:-5}" --judgings "${JUDGINGS:-1}" \
    --budget-s $((budget - 40)) --out "$out/final_judging.json" ${COMPARE:+--compare "$COMPARE"}
}

baselines() {
  step "${BASELINES_S:-500}" "baselines: ${BASELINE_PROBLEMS:-every built-in problem}" \
    python3 -m bench.baselines --solutions pytorch ${BASELINE_PROBLEMS:-}
}

profile() {
  step 120 "Nsight Compute outside and inside the sandbox" python3 -m bench.ncu_probe \
    --out "$out/ncu_probe.json"
  step 330 "profile mode through serve against ncu's own run (vectoradd: ${PROFILED:-pytorch triton cuda_inline})" \
    python3 -m bench.ncu_profile_check ${PROFILED:-pytorch triton cuda_inline} ${DIRECT:+--direct} \
    ${VARIANTS:+--variants} --out "$out/ncu_profile.json"
  gpu_state "after the profiles"
}

batches() {
  local tiers=${BATCH_TIERS:-quick standard} limit=${BATCH_S:-500}
  local budget=(--budget-s $((limit - 30))); [ -n "${BATCH_AT_ONCE:-}" ] && budget=()
  step "$limit" "KernelBench level 1 through the batch API: ${BATCH_ITEMS:-1000} items in each of $tiers" \
    python3 -m bench.batch_throughput --items "${BATCH_ITEMS:-1000}" --tier "${tiers// /,}" \
    --mode "${BATCH_MODE:-benchmark}" --owner "${BATCH_OWNER:-organizer}" "${budget[@]}" \
    ${BATCH_PROBLEMS:+--problems $BATCH_PROBLEMS} --out "$out/batch_throughput_${tiers// /_}.json"
  gpu_state "after the batches"
}

for suite in "$@"; do
  "$suite" >"$out/$suite.log" 2>&1
  echo "---- $suite"; grep -v '"GET /api' "$out/$suite.log" | tail -c 6000
done
