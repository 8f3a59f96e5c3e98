"""The built-in problems' baselines on this host's device: each reference as given (eager) and
under torch.compile, graded in leaderboard mode through the grader a worker runs
(grader/baselines.py), and each example solution's ranked score with its speedup over them.
One JSON line per problem, then one per solution, then the provenance.

    python -m bench.baselines [--device cuda|cpu] [--solutions pytorch,triton] [PROBLEM ...]

One harness process; every grading has its own sandboxed runner, as on a worker. Feeds
docs/benchmarks.md, "Baselines of the built-in problems"."""

from __future__ import annotations

import argparse
import json
import secrets
import time
from typing import Any

from bench.provenance import provenance
from grader.baselines import BaselineKind, score_of, time_baselines, why_not
from grader.calibrate import measure_peaks
from grader.harness import grade
from grader.problem import BUILTIN_DIR, builtin_problems, example_solutions, load_problem
from grader.report import Mode, Status

# Example solutions that are meant to fail (their names say so) are left out.
WRONG = ("wrong",)


def emit(row: dict[str, Any]) -> None:
    print(json.dumps(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("problems", nargs="*", help="default: every built-in problem")
    parser.add_argument("--device", default="cuda")
    parser.add_argument(
        "--solutions", default="", help="comma-separated names; default: every correct one"
    )
    args = parser.parse_args()
    names = args.problems or [problem.name for problem in builtin_problems()]
    wanted = {name for name in args.solutions.split(",") if name}
    peaks = measure_peaks(args.device)
    device_name = ""
    for name in names:
        problem = load_problem(name)
        seed = secrets.randbits(62)  # ranked inputs, as a problem's secret seed gives them
        started = time.monotonic()
        timed = time_baselines(problem, device=args.device, secret_seed=seed, peaks=peaks)
        device_name = timed.eager.device_name or device_name
        base = {kind.value: score_of(timed.of(kind)) for kind in BaselineKind}
        emit({
            "problem": name,
            "eager_us": _us(base["eager"]),
            "compile_us": _us(base["compile"]),
            "eager_why_not": why_not(timed.eager),
            "compile_why_not": why_not(timed.compile),
            "compile_over_eager": base["eager"] / base["compile"]
            if base["eager"] and base["compile"] else None,
            "wall_s": round(time.monotonic() - started, 1),
        })  # fmt: skip
        for path, code in example_solutions(BUILTIN_DIR / name).items():
            solution = path.rsplit("/", 1)[-1].removesuffix(".py")
            if solution.startswith(WRONG) or (wanted and solution not in wanted):
                continue
            report = grade(problem, code, mode=Mode.LEADERBOARD, device=args.device,
                           secret_seed=seed, peaks=peaks)  # fmt: skip
            score = report.score if report.status == Status.PASSED else None
            emit({
                "problem": name,
                "solution": solution,
                "status": report.status.value,
                "score_us": _us(score),
                "speedup_eager": base["eager"] / score if score and base["eager"] else None,
                "speedup_compile": base["compile"] / score if score and base["compile"] else None,
                "message": report.message[:200] if score is None else "",
            })  # fmt: skip
    emit({"provenance": provenance(device=args.device, device_name=device_name)})


def _us(seconds: float | None) -> float | None:
    return round(seconds * 1e6, 3) if seconds is not None else None


if __name__ == "__main__":
    main()
