"""The cost of isolation: wall time from start to report of a test-mode grading, with the
runner in the sandbox and without it, alternating, in this process.

    python -m bench.sandbox_overhead [--device cpu|cuda] [--runs 5] [--solution pytorch]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from grader.harness import grade
from grader.problem import load_problem

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--solution", default="pytorch")
    args = parser.parse_args()
    problem = load_problem(ROOT / "problems" / "vectoradd")
    code = (ROOT / "problems" / "vectoradd" / "solutions" / f"{args.solution}.py").read_text()
    walls: dict[str, list[float]] = {"sandbox": [], "bare": []}
    for _ in range(args.runs):
        for label, isolate in (("sandbox", True), ("bare", False)):
            started = time.monotonic()
            report = grade(problem, code, mode="test", device=args.device, isolate=isolate)
            walls[label].append(time.monotonic() - started)
            if report.status != "passed":
                raise SystemExit(f"{label}: {report.status}: {report.message}\n{report.stderr}")
    summary = {
        "date": time.strftime("%Y-%m-%d"),
        "host": platform.node(),
        "device": args.device,
        "solution": args.solution,
        "runs": args.runs,
        **{f"{label}_median_s": round(statistics.median(v), 3) for label, v in walls.items()},
        **{f"{label}_all_s": [round(x, 3) for x in v] for label, v in walls.items()},
    }
    summary["overhead_s"] = round(summary["sandbox_median_s"] - summary["bare_median_s"], 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
