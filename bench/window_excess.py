"""Where a window's figure parts from the runner's own median on a GPU (grader/gate.py,
grader/clock.py's Windows): leaderboard gradings of built-in solutions with the harness's
side of each window changed one way at a time, printing per case the runner's median, the
windows' figure and their ratio, and the window cost calibrated for that grading.

    python -m bench.window_excess [--runs 3] [--problems vectoradd rmsnorm]
        [--variants as_is unqueued landed_first double_flush]

Variants (the harness's side only; the runner and its timer are unchanged):
- `as_is`: what a grading does (each set's inputs land just before its window, L2 flushed,
  the windows queued once the runner has queued its calls: grader/gate.py's QUEUED);
- `unqueued`: the windows queued as soon as the request is sent, so that a window may wait
  for the runner's host to launch its call;
- `landed_first`: every set's inputs land before the first window, so none lands between
  the runner's calls (what the runner's own timer sees);
- `double_flush`: L2 flushed twice before each window (dirty lines the landing left are
  surely written back before the window opens);

`--problems` takes built-in problems and `launch-bound` (bench/ranked_clock.py's module of
several small launches).

A probe, not the grader: the ranked numbers these gradings print are not scores."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

import torch

from bench.ranked_clock import LAUNCH_BOUND, LAUNCH_BOUND_SOLUTION, grade, solution
from grader import gate, session

REPO = Path(__file__).resolve().parent.parent

_original_wait = gate.QUEUED_WAIT_S

_original_enqueue = gate.Gate.enqueue
_calibrated: list[Any] = []


def _variant_enqueue(variant: str) -> Any:
    def enqueue(self: gate.Gate, count: int, before: Any = None, after: Any = None) -> Any:
        if variant == "landed_first" and before is not None:
            with torch.cuda.stream(self.stream):
                self.stream.wait_stream(torch.cuda.current_stream())
                for i in range(count):
                    before(i)
            return _original_enqueue(self, count, None, after)
        if variant == "double_flush":
            flush = self.flush

            def twice(i: int) -> None:
                if before is not None:
                    before(i)
                torch.amax(flush)

            return _original_enqueue(self, count, twice, after)
        return _original_enqueue(self, count, before, after)

    return enqueue


def _variant_wait(variant: str) -> None:
    gate.QUEUED_WAIT_S = 0.0 if variant == "unqueued" else _original_wait


def _record_calibration() -> None:
    original = session.RunnerSession._calibrate

    def calibrate(self: Any) -> Any:
        overheads = original(self)
        _calibrated.append(overheads.window_points)
        return overheads

    session.RunnerSession._calibrate = calibrate  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--problems", nargs="+", default=["vectoradd", "rmsnorm"])
    parser.add_argument("--variants", nargs="+",
                        default=["as_is", "unqueued", "landed_first"])  # fmt: skip
    args = parser.parse_args()
    from grader.problem import load_problem

    _record_calibration()
    folder = tempfile.mkdtemp()
    (Path(folder) / "launch_bound.py").write_text(LAUNCH_BOUND)
    for name in args.problems:
        if name == "launch-bound":
            problem, code = load_problem(Path(folder) / "launch_bound.py"), LAUNCH_BOUND_SOLUTION
        else:
            problem, code = load_problem(name), solution(name)
        for variant in args.variants:
            gate.Gate.enqueue = _variant_enqueue(variant)  # type: ignore[method-assign]
            _variant_wait(variant)
            ratios: list[list[float]] = []
            for _ in range(args.runs):
                report = grade(problem, code, "leaderboard")
                rows = []
                for case in report.get("cases", []):
                    time_ = case.get("time") or {}
                    runner = (case.get("runner_time") or time_).get("median_s")
                    harness = time_.get("harness_per_call_s")
                    rows.append({
                        "runner_us": round(runner * 1e6, 3) if runner else None,
                        "harness_us": round(harness * 1e6, 3) if harness else None,
                        "ratio": round(harness / runner, 4) if runner and harness else None,
                    })  # fmt: skip
                ratios.append([r["ratio"] or 0.0 for r in rows])
                points = _calibrated[-1] if _calibrated else ()
                print(json.dumps({
                    "problem": name, "variant": variant, "status": report["status"],
                    "score_us": round(report["score"] * 1e6, 3) if report.get("score") else None,
                    "message": report["message"][:300] if report["status"] != "passed" else "",
                    "window_points_us": [[round(a * 1e6, 3), round(b * 1e6, 3)]
                                         for a, b in points],
                    "cases": rows,
                }), flush=True)  # fmt: skip
            if ratios and ratios[0]:
                print(json.dumps({
                    "problem": name, "variant": variant, "summary": True,
                    "median_ratio_per_case": [round(statistics.median(r[i] for r in ratios), 4)
                                              for i in range(len(ratios[0]))],
                }), flush=True)  # fmt: skip
    gate.Gate.enqueue = _original_enqueue  # type: ignore[method-assign]
    _variant_wait("as_is")


if __name__ == "__main__":
    main()
