"""How much a score moves between gradings, and what a grading costs, on this machine.

    python -m bench.repeatability runs PROBLEM SOLUTION [--runs 10] [--mode benchmark]
    python -m bench.repeatability overhead PROBLEM SOLUTION [SOLUTION ...]
    python -m bench.repeatability one PROBLEM SOLUTION MODE      # one grading, JSON report

`runs` grades one submission N times, each in a fresh process (a fresh harness and a fresh
runner, as a worker does), and prints the score's and each case's median spread across
runs. `overhead` times a test-mode grading from process start to report."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def one(problem: str, solution: str, mode: str) -> None:
    from grader.harness import grade
    from grader.problem import load_problem

    code = (REPO / "problems" / problem / "solutions" / f"{solution}.py").read_text()
    device = "cuda" if _has_cuda() else "cpu"
    report = grade(load_problem(problem), code, mode=mode, device=device)
    print(json.dumps(report.to_dict()))


def _has_cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def graded(problem: str, solution: str, mode: str) -> tuple[dict[str, Any], float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "bench.repeatability", "one", problem, solution, mode],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def runs(problem: str, solution: str, count: int, mode: str) -> dict[str, Any]:
    reports = []
    for index in range(count):
        report, wall = graded(problem, solution, mode)
        print(
            f"run {index + 1}: {report['status']} score {report['score']} ({wall:.1f} s)",
            flush=True,
        )
        reports.append(report)
    scores = [r["score"] for r in reports if r["score"]]
    cases = []
    for position, case in enumerate(reports[0]["cases"]):
        medians = [r["cases"][position]["time"]["median_s"] for r in reports]
        cases.append({
            "params": case["params"], "median_of_medians_us": statistics.median(medians) * 1e6,
            "cv_across_runs": cv(medians),
            "min_us": min(medians) * 1e6, "max_us": max(medians) * 1e6,
            "within_run_cv": statistics.median(r["cases"][position]["time"]["cv"] for r in reports),
        })  # fmt: skip
    summary = {
        "problem": problem, "solution": solution, "mode": mode, "runs": count,
        "statuses": sorted({r["status"] for r in reports}),
        "score_cv": cv(scores), "score_median_us": statistics.median(scores) * 1e6,
        "cases": cases, "device_name": reports[0]["device_name"],
    }  # fmt: skip
    print(
        f"score over {count} fresh-process gradings: "
        f"median {summary['score_median_us']:.3f} µs, cv {summary['score_cv']:.4f}"
    )
    for case in cases:
        print(
            f"  {case['params']}: median {case['median_of_medians_us']:.2f} µs, "
            f"cv across runs {case['cv_across_runs']:.4f} "
            f"(range {case['min_us']:.2f}-{case['max_us']:.2f})"
        )
    return summary


def overhead(problem: str, solutions: list[str]) -> dict[str, float]:
    walls = {}
    for solution in solutions:
        report, wall = graded(problem, solution, "test")
        walls[solution] = wall
        print(
            f"test-mode grading of {problem}/{solution}: {report['status']}, "
            f"{wall:.2f} s from process start to report"
        )
    return walls


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["runs", "overhead", "one"])
    parser.add_argument("problem")
    parser.add_argument("solutions", nargs="+")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--mode", default="benchmark")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.what == "one":
        one(
            args.problem,
            args.solutions[0],
            args.solutions[1] if len(args.solutions) > 1 else "test",
        )
        sys.exit(0)
    result: Any = (
        runs(args.problem, args.solutions[0], args.runs, args.mode)
        if args.what == "runs"
        else overhead(args.problem, args.solutions)
    )
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
