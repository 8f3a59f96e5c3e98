"""The cross-check beside the medians: each solution graded once in leaderboard mode
(`kerneljudge grade`, sandboxed), and per timed case its reported median, the harness's own
per-call time over back-to-back calls on fresh inputs (grader/crosscheck.py) and their ratio.

    python bench/clock_ratios.py rmsnorm triton pytorch [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def ratios(problem: str, solution: str) -> dict[str, Any]:
    folder = REPO / "problems" / problem
    answer = subprocess.run(
        [sys.executable, "-m", "server.cli", "grade", str(folder),
         str(folder / "solutions" / f"{solution}.py"), "--mode", "leaderboard", "--json"],
        capture_output=True, text=True, cwd=REPO, timeout=300,
    )  # fmt: skip
    if answer.returncode not in (0, 1) or not answer.stdout.strip():
        return {"solution": solution, "error": answer.stderr[-2000:]}
    report = json.loads(answer.stdout)
    cases = []
    for case in report.get("cases") or []:
        timed = case.get("time") or {}
        if timed.get("harness_per_call_s") and timed.get("median_s"):
            cases.append({
                "case": case["params"],
                "median_us": timed["median_s"] * 1e6,
                "harness_per_call_us": timed["harness_per_call_s"] * 1e6,
                "ratio": timed["harness_per_call_s"] / timed["median_s"],
            })  # fmt: skip
    return {
        "solution": solution,
        "status": report["status"],
        "message": report["message"][:300],
        "flags": report.get("flags") or [],
        "cases": cases,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("solutions", nargs="+")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = []
    for solution in args.solutions:
        result = ratios(args.problem, solution)
        results.append(result)
        print(f"{args.problem} {solution}: {result.get('status')} {result.get('message', '')}")
        for case in result.get("cases", []):
            print(
                f"  {case['case']}: median {case['median_us']:.2f} µs, harness "
                f"{case['harness_per_call_us']:.2f} µs a call, ratio {case['ratio']:.3f}"
            )
        if "error" in result:
            print(result["error"])
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
