"""The harness's own clock beside the runner's medians, case by case: a problem's solutions
graded a few times in one mode on this device, each case's median, the harness's per-call
time over its batches of fresh calls, their ratio, and what the grading concluded. What
the cross-check's bounds (grader/plausibility.py) are set from.

    python bench/crosscheck_probe.py rmsnorm pytorch triton --mode leaderboard --runs 2"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader.calibrate import measure_peaks
from grader.harness import grade
from grader.problem import BUILTIN_DIR, load_problem


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("solutions", nargs="+")
    parser.add_argument("--mode", default="leaderboard")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    peaks = measure_peaks(args.device)
    problem = load_problem(args.problem)
    rows: list[dict[str, Any]] = []
    for name in args.solutions:
        code = (BUILTIN_DIR / args.problem / "solutions" / f"{name}.py").read_text()
        for run in range(args.runs):
            started = time.monotonic()
            seed = 1000 + run if args.mode == "leaderboard" else None
            report = grade(
                problem, code, mode=args.mode, device=args.device, peaks=peaks, secret_seed=seed
            )
            wall = time.monotonic() - started
            print(f"{args.problem}/{name} run {run}: {report.status} in {wall:.1f} s "
                  f"{report.message[:300]}", flush=True)  # fmt: skip
            for flag in report.flags:
                print(f"  flag: {flag[:300]}")
            cases = []
            for case in report.cases:
                if not case.time:
                    continue
                median = case.time["median_s"]
                own = case.time.get("harness_per_call_s")
                ratio = own / median if own else None
                cases.append({"params": case.params, "median_us": median * 1e6,
                              "harness_per_call_us": own * 1e6 if own else None,
                              "ratio": ratio, "samples": case.time["samples"],
                              "status": case.status})  # fmt: skip
                shown = f"{own * 1e6:9.1f}" if own else "        -"
                n = case.time["samples"]
                print(f"  {case.params}: median {median * 1e6:9.2f} µs  own clock {shown} µs"
                      f"  ratio {ratio or 0:5.2f}  n={n}  {case.status}")  # fmt: skip
            rows.append({"solution": name, "run": run, "status": report.status,
                         "message": report.message[:500], "flags": report.flags,
                         "wall_s": wall, "phases": report.phases, "cases": cases})  # fmt: skip
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
