"""Our timing protocol against Nsight Compute on this GPU.

    python -m bench.validate_timing ours            # our median per kernel (JSON lines)
    python -m bench.validate_timing profile NAME    # run under ncu: NAME's calls in NVTX ranges
    python -m bench.validate_timing compare OUT     # both, and the table (needs ncu on PATH)
    python -m bench.validate_timing gaps NAME [MS ...]   # NAME with idle gaps between samples
    python -m bench.validate_timing ours --min-pause-ms MS  # ours, with a minimum pause

`ours` uses grader.timing.Timer exactly as the runner does (L2 flush, launch lead, events,
the stopping rule). The ncu pass replays each kernel of PROFILE_CALLS calls with
`--clock-control none --cache-control all` and sums gpu__time_duration per call."""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from bench.kernels import KERNELS, REPO
from grader import timing
from grader.calibrate import measure_peaks
from grader.timing import Timer, summarize

PROFILE_CALLS = 5
RANGE = "kjcall"


def ours() -> dict[str, dict[str, float]]:
    timer = Timer("cuda")
    results = {}
    for name, build in KERNELS.items():
        call, bytes_moved, flops = build()
        call()  # compiles a load_inline or Triton kernel outside the timing budget
        torch.cuda.synchronize()
        samples, _ = timer.time_case(lambda _data, c=call: c(), None, budget_s=10.0)
        stats = summarize(samples.seconds, samples.sm_clock_mhz)
        results[name] = {**stats, "bytes": bytes_moved, "flops": flops}
        print(json.dumps({"kernel": name, **results[name]}), flush=True)
        torch.cuda.empty_cache()
    return results


def gaps(name: str, gaps_ms: tuple[float, ...]) -> None:
    """How much of a compute-bound kernel's gap to Nsight Compute is the clock: the same
    samples with the GPU left idle between them, so the clock recovers from the power limit
    that back-to-back calls hold it at."""
    timer = Timer("cuda")
    call, _, _ = KERNELS[name]()
    timer.warm_up(lambda _data: call(), None)
    for gap_ms in gaps_ms:
        seconds, clocks = [], []
        for _ in range(20):
            time.sleep(gap_ms / 1e3)
            sample, _ = timer.one_call(lambda _data: call(), None)
            seconds.append(sample)
            clocks.append(timer.sm_clock_mhz())
        stats = summarize(seconds)
        known = [c for c in clocks if c is not None]
        print(json.dumps({
            "kernel": name, "gap_ms": gap_ms, "median_us": stats["median_s"] * 1e6,
            "cv": stats["cv"], "sm_clock_mhz_median": statistics.median(known) if known else None,
        }), flush=True)  # fmt: skip


def profile(name: str) -> None:
    call, _, _ = KERNELS[name]()
    for _ in range(3):  # compile and warm up outside the profiled ranges
        call()
    torch.cuda.synchronize()
    for _ in range(PROFILE_CALLS):
        torch.cuda.nvtx.range_push(RANGE)
        call()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()


def ncu_per_call(name: str) -> tuple[list[float], list[str]]:
    command = [
        "ncu", "--clock-control", "none", "--cache-control", "all",
        "--nvtx", "--nvtx-include", f"{RANGE}/",
        "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
        sys.executable, "-m", "bench.validate_timing", "profile", name,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=400, cwd=REPO)
    rows = [
        row
        for row in csv.DictReader(io.StringIO(_csv_part(done.stdout)))
        if row.get("Metric Name") == "gpu__time_duration.sum"
    ]
    if not rows:
        raise RuntimeError(
            f"ncu listed no kernels for {name}: {done.stdout[-800:]} {done.stderr[-800:]}"
        )
    durations = [float(row["Metric Value"].replace(",", "")) * 1e-9 for row in rows]
    per_call = len(durations) // PROFILE_CALLS
    sums = [sum(durations[i * per_call : (i + 1) * per_call]) for i in range(PROFILE_CALLS)]
    return sums, sorted({row["Kernel Name"][:60] for row in rows})


def _csv_part(text: str) -> str:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    return "\n".join(lines[start:])


def compare(out_dir: Path) -> None:
    peaks = measure_peaks("cuda")
    print(json.dumps({"peaks": peaks.to_dict()}), flush=True)
    mine = ours()
    rows = []
    for name, stats in mine.items():
        try:
            ncu_calls, kernels = ncu_per_call(name)
            ncu_median = statistics.median(ncu_calls)
        except Exception as exc:  # keep the other kernels' results
            print(f"ncu failed for {name}: {exc}", flush=True)
            ncu_median, kernels = float("nan"), []
        floor = peaks.floor_s(stats["bytes"], stats["flops"])
        rows.append({
            "kernel": name, "ours_median_us": stats["median_s"] * 1e6,
            "ours_cv": stats["cv"], "samples": stats["samples"],
            "sm_clock_mhz": stats["sm_clock_mhz"], "ncu_us": ncu_median * 1e6,
            "ratio": stats["median_s"] / ncu_median, "sol_fraction": floor / stats["median_s"],
            "kernels": kernels,
        })  # fmt: skip
    (out_dir / "timing_vs_ncu.json").write_text(
        json.dumps({"peaks": peaks.to_dict(), "rows": rows}, indent=1)
    )
    copy_tb, matmul_tf = peaks.copy_bytes_per_s / 1e12, peaks.matmul_flops_per_s / 1e12
    print(f"peaks: copy {copy_tb:.3f} TB/s, bf16 matmul {matmul_tf:.1f} TFLOP/s")
    header = ("kernel", "ours µs", "cv", "n", "ncu µs", "ratio", "SOL")
    print("{:32} {:>10} {:>7} {:>4} {:>10} {:>7} {:>6}  clock".format(*header))
    for r in rows:
        print(
            f"{r['kernel']:32} {r['ours_median_us']:10.2f} {r['ours_cv']:7.4f} {r['samples']:4d} "
            f"{r['ncu_us']:10.2f} {r['ratio']:7.4f} {r['sol_fraction']:6.3f}  {r['sm_clock_mhz']}"
        )


if __name__ == "__main__":
    os.environ.setdefault("TORCH_EXTENSIONS_DIR", "/tmp/kj-bench-extensions")
    if sys.argv[1] == "ours":
        if "--min-pause-ms" in sys.argv:
            timing.COOL_DOWN_MIN_S = float(sys.argv[sys.argv.index("--min-pause-ms") + 1]) / 1e3
        print(json.dumps({"min_pause_s": timing.COOL_DOWN_MIN_S}), flush=True)
        ours()
    elif sys.argv[1] == "gaps":
        gaps(sys.argv[2], tuple(float(ms) for ms in sys.argv[3:]) or (0.0, 2.0, 10.0, 50.0))
    elif sys.argv[1] == "profile":
        profile(sys.argv[2])
    else:
        compare(Path(sys.argv[2]))
