"""Where a launch-bound call's device time moves: from one process to the next, or with where
its tensors lie. Outside the grader: each of --procs fresh processes builds the launch-bound
KernelBench module of bench/ranked_clock.py on the GPU and, for each of --placements copies
of it (the module and its input made again behind a kept block of random size, so they lie
elsewhere), times --calls calls queued behind a sleeping kernel (as the harness's windows
see them: launched before the device reaches them), each between two events, L2 flushed
before each call. Prints one JSON line per process (the median of each placement, the SM
clock before and after, and the first call whose queuing waited for room in the device's
queue) and a summary: the spread between processes against the spread
between placements within one.

    python -m bench.launch_spread [--procs 10] [--placements 6] [--calls 200]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import subprocess
import sys
import time
from typing import Any

from bench.ranked_clock import LAUNCH_BOUND


def sm_clock() -> str:
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=False,
        ).stdout.strip()  # fmt: skip
    except OSError:
        return ""


def child(placements: int, calls: int) -> dict[str, Any]:
    import torch

    scope: dict[str, Any] = {}
    exec(compile(LAUNCH_BOUND, "launch_bound.py", "exec"), scope)
    torch.manual_seed(0)
    base = scope["Model"](*scope["get_init_inputs"]()).cuda()
    x0 = scope["get_inputs"]()[0].cuda()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream()
    kept: list[torch.Tensor] = []
    medians, clocks, blocked = [], [sm_clock()], []
    with torch.no_grad():
        for placement in range(placements):
            if placement:
                kept.append(torch.empty(random.randint(1, 300) << 20, dtype=torch.uint8,
                                        device="cuda"))  # fmt: skip
            model, x = copy.deepcopy(base), x0.clone()
            for _ in range(20):
                model(x)
            torch.cuda.synchronize()
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(calls)]  # fmt: skip
            torch.cuda._sleep(200_000_000)  # about 0.1 s: every call below is queued before it
            queued = []
            for start, end in events:
                began = time.perf_counter()
                flush.fill_(1)
                start.record(stream)
                model(x)
                end.record(stream)
                queued.append(time.perf_counter() - began)
            torch.cuda.synchronize()
            # A launch that had to wait for room in the device's queue: where it first happened.
            blocked.append(next((i for i, s in enumerate(queued) if s > 2e-3), None))
            times = [start.elapsed_time(end) * 1e3 for start, end in events[5:]]
            medians.append(round(statistics.median(times), 3))
    clocks.append(sm_clock())
    return {"medians_us": medians, "sm_clock": clocks, "first_blocked_call": blocked}


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=10)
    parser.add_argument("--placements", type=int, default=6)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.placements, args.calls)), flush=True)
        return
    rows = []
    for _ in range(args.procs):
        out = subprocess.run(
            [sys.executable, "-m", "bench.launch_spread", "--child",
             "--placements", str(args.placements), "--calls", str(args.calls)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if out.returncode:
            print(json.dumps({"error": out.stderr[-2000:]}), flush=True)
            return
        row = {**json.loads(out.stdout.strip().splitlines()[-1]), "at": round(time.time(), 3)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    first = [row["medians_us"][0] for row in rows]
    means = [statistics.fmean(row["medians_us"]) for row in rows]
    within = [cv(row["medians_us"]) for row in rows]
    print(json.dumps({
        "what": "summary", "between_processes_cv_first_placement": round(cv(first), 5),
        "between_processes_cv_of_placement_means": round(cv(means), 5),
        "within_process_cv_over_placements": [round(c, 5) for c in within],
        "within_process_cv_median": round(statistics.median(within), 5),
    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
