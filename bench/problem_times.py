"""Every built-in problem's PyTorch solution (the reference's own operation) graded in
benchmark mode on this GPU: the per-case medians show whether each benchmark case is long
enough that launch overhead does not dominate (about 50 µs or more on an H200).

    python -m bench.problem_times [--out FILE] [PROBLEM ...]

One harness process; each grading has its own sandboxed runner, as on a worker."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from grader.calibrate import measure_peaks
from grader.harness import grade
from grader.problem import BUILTIN_DIR, builtin_problems, load_problem


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problems", nargs="*")
    parser.add_argument("--solution", default="pytorch")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    names = args.problems or [problem.name for problem in builtin_problems()]
    peaks = measure_peaks("cuda")
    rows = []
    for name in names:
        code = (BUILTIN_DIR / name / "solutions" / f"{args.solution}.py").read_text()
        started = time.monotonic()
        report = grade(load_problem(name), code, mode="benchmark", device="cuda", peaks=peaks)
        wall = time.monotonic() - started
        cases: list[dict[str, Any]] = [
            {
                "params": case.params,
                "median_us": case.time["median_s"] * 1e6 if case.time else None,
                "cv": case.time["cv"] if case.time else None,
                "sol": (case.roofline or {}).get("sol_fraction"),
                # The runner's own event times (benchmark mode's detail, never ranked).
                "runner_events_us": (
                    case.runner_time["median_s"] * 1e6 if case.runner_time else None
                ),
            }
            for case in report.cases
            if case.kind == "benchmark"
        ]
        score_us = (report.score or 0) * 1e6
        rows.append({"problem": name, "status": report.status, "score_us": score_us,
                     "message": report.message[:300], "flags": report.flags, "wall_s": wall,
                     "cases": cases})  # fmt: skip
        print(f"{name}: {report.status} score {score_us:.2f} µs in {wall:.1f} s "
              f"{report.message[:200]}", flush=True)  # fmt: skip
        for case in cases:
            params = {k: v for k, v in case["params"].items() if k != "seed"}
            median = f"{case['median_us']:.2f}" if case["median_us"] is not None else "-"
            sol = f"{case['sol']:.3f}" if case["sol"] is not None else "-"
            events = case["runner_events_us"]
            events_us = f"{events:.2f}" if events is not None else "-"
            print(f"    {params}: {median} µs a call, cv {case['cv']}, SOL {sol}, "
                  f"the runner's events {events_us} µs", flush=True)  # fmt: skip
        for flag in report.flags:
            print(f"    flag: {flag}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
