"""The ranked time (the harness's own clock, grader/clock.py) on this machine:
how much an honest score moves between fresh gradings, whether benchmark and leaderboard
mode agree, what the hostile timing cases score beside the honest solution, a launch-bound
KernelBench module, and each case's figure beside Nsight Compute's kernel time.

    python -m bench.ranked_clock spread [--runs 10] [--problems vectoradd rmsnorm matmul]
    python -m bench.ranked_clock modes [--problems ...]
    python -m bench.ranked_clock hostile [--device cuda]
    python -m bench.ranked_clock launch-bound [--runs 10]
    python -m bench.ranked_clock ncu [--problems ...]          # needs ncu on PATH
    python -m bench.ranked_clock all --runs 10 --out results.json
    ... --tree OTHER      # grade with another checkout's grader (today's against an older one)
    python -m bench.ranked_clock spread --standby none settled as-is   # as a worker grades
    ... --standby settled --standby-runners 1     # with one runner waiting instead of four

Gradings go through grader.harness.grade(), sandboxed, one after another in this process with
a fresh runner each (as a worker's pool process grades), the device's peaks measured once.
With `--standby`, `spread` grades as a worker does, its next runners started meanwhile
(grader/session.py's Standby): `settled` as the grader does it (a timed grading waits for
their starts), `as-is` without that wait, `none` with no runner started ahead. Prints one
JSON line per result; `--out` also writes them all. Results and their reading are in
docs/benchmarks.md, "The ranked time on a GPU: ten gradings and Nsight Compute" and the
sections after it."""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PROBLEMS = ["vectoradd", "rmsnorm", "matmul"]
# The hostile cases whose forged or steered times the ranked time must not believe, by file
# name prefix; their CUDA forms where the device is a GPU.
HOSTILE_CPU = ["28_", "30_", "33_", "36_", "37_", "85_", "86_", "92_", "93_", "94_", "95_", "96_"]
HOSTILE_CUDA = ["27_", "31_", "90_", "101_", "102_", "103_"]
# A KernelBench module whose forward makes several small launches from Python.
LAUNCH_BOUND = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        y = self.linear(x)
        y = torch.nn.functional.gelu(y)
        y = self.norm(y)
        y = y * 0.5 + x
        return torch.softmax(y, dim=-1)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return [256]
"""
LAUNCH_BOUND_SOLUTION = LAUNCH_BOUND.replace("class Model(", "class ModelNew(").split(
    "def get_inputs"
)[0]
results: list[dict[str, Any]] = []


def emit(row: dict[str, Any]) -> None:
    row = {**row, "at": round(time.time(), 3)}  # beside a clock log (windows_session.sh)
    results.append(row)
    print(json.dumps(row), flush=True)


def device_kind() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


_peaks: Any = None


def grade(
    problem: Any, code: str, mode: str, screen: bool = True, standby: Any = None
) -> dict[str, Any]:
    from grader.calibrate import measure_peaks
    from grader.harness import grade as run

    global _peaks
    kind = device_kind()
    if _peaks is None:
        _peaks = measure_peaks(kind)
    report = run(
        problem, code, mode=mode, device=kind, peaks=_peaks, screen=screen, standby=standby
    ).to_dict()
    report.pop("stdout", None)
    report.pop("stderr", None)
    return report


def solution(problem: str, name: str = "pytorch") -> str:
    return (REPO / "problems" / problem / "solutions" / f"{name}.py").read_text()


def case_figures(report: dict[str, Any]) -> list[float | None]:
    return [(case.get("time") or {}).get("median_s") for case in report.get("cases", [])]


def clocks(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Per case: the ranked figure, its spread over the batches, the runner's own events
    (benchmark mode) and the calls in a batch."""
    rows = []
    for case in report.get("cases", []):
        time_ = case.get("time") or {}
        rows.append({
            "ranked_us": _us(time_.get("median_s")),
            "batch_cv": time_.get("cv"),
            "events_us": _us((case.get("runner_time") or {}).get("median_s")),
            "harness_us": _us(time_.get("harness_per_call_s")),
            "floor_us": _us(time_.get("harness_floor_s")),
            "clock": time_.get("harness_clock"),
            "ranked_by": time_.get("ranked_by"),
            "calls_per_batch": time_.get("calls_per_batch"),
            "window_cost_us": _us(time_.get("window_cost_s")),
        })  # fmt: skip
    return rows


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def spread(
    problems: list[str], runs: int, mode: str, solutions: list[str], standby: str | None = None
) -> None:
    from grader.problem import load_problem
    from grader.session import Standby

    pool = None
    if standby not in (None, "none"):
        pool = Standby()
        if standby == "as-is":
            pool.settle = lambda *args, **kwargs: None  # type: ignore[method-assign]
    for name in problems:
        problem = load_problem(name)
        for solution_name in solutions:
            path = REPO / "problems" / name / "solutions" / f"{solution_name}.py"
            if not path.exists():
                continue
            scores, walls, per_case, detail = [], [], [], []
            for _ in range(runs):
                report = grade(problem, path.read_text(), mode, standby=pool)
                if report["status"] != "passed":
                    emit({"what": "spread", "problem": name, "solution": solution_name,
                          "status": report["status"], "standby": standby,
                          "message": report["message"][:500]})  # fmt: skip
                    continue
                scores.append(report["score"])
                walls.append(report["wall_s"])
                emit({"what": "grading", "problem": name, "solution": solution_name,
                      "score_us": _us(report["score"]), "wall_s": round(report["wall_s"], 2),
                      "flags": report["flags"], "short_calls": report.get("short_calls"),
                      "fingerprint": report.get("fingerprint"),
                      "cases": clocks(report)})  # fmt: skip
                per_case.append(case_figures(report))
                detail.append(clocks(report))
            if scores:
                emit({
                    "what": "spread", "problem": name, "solution": solution_name, "mode": mode,
                    "standby": standby,
                    "runs": len(scores), "scores_us": [round(s * 1e6, 3) for s in scores],
                    "score_cv": cv(scores), "grading_s_median": statistics.median(walls),
                    "case_cv": [cv([row[i] for row in per_case if row[i]])
                                for i in range(len(per_case[0]))],
                    "last_grading_cases": detail[-1],
                })  # fmt: skip
    if pool is not None:
        pool.close()


def modes(problems: list[str]) -> None:
    """Benchmark and leaderboard mode on the same code: the ranked figures side by side, and
    benchmark mode's runner-reported event times beside them."""
    from grader.problem import load_problem

    for name in problems:
        problem = load_problem(name)
        bench = grade(problem, solution(name), "benchmark")
        ranked = grade(problem, solution(name), "leaderboard")
        emit({
            "what": "modes", "problem": name, "statuses": [bench["status"], ranked["status"]],
            "benchmark_us": [_us(x) for x in case_figures(bench)],
            "leaderboard_us": [_us(x) for x in case_figures(ranked)],
            "runner_events_us": [_us((c.get("runner_time") or {}).get("median_s"))
                                 for c in bench.get("cases", [])],
            "scores_us": [_us(bench["score"]), _us(ranked["score"])],
            "benchmark_cases": clocks(bench), "leaderboard_cases": clocks(ranked),
        })  # fmt: skip


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1e6, 3)


def hostile(device: str) -> None:
    from grader.problem import load_problem

    prefixes = HOSTILE_CUDA if device == "cuda" else HOSTILE_CPU
    honest: dict[tuple[str, str], float] = {}
    for path in sorted((REPO / "tests" / "hostile" / "cases").glob("*.py")):
        if not any(path.name.startswith(p) for p in prefixes):
            continue
        text = path.read_text()
        header = dict(
            line[2:].split(": ", 1)
            for line in text.splitlines()
            if line.startswith("# ") and ": " in line
        )
        problem_name = header.get("problem", "vectoradd").strip()
        mode = header.get("mode", "leaderboard").strip()
        problem = load_problem(problem_name)
        key = (problem_name, mode)
        if key not in honest:
            report = grade(problem, solution(problem_name), mode)
            if report["score"] is None:
                emit({"what": "hostile", "case": "honest " + problem_name,
                      "status": report["status"], "message": report["message"][:500]})  # fmt: skip
                continue
            honest[key] = report["score"]
        # Screening off, as the hostile corpus grades: the clock is what is tried here.
        report = grade(problem, text, mode, screen=False)
        score = report.get("score")
        emit({
            "what": "hostile", "case": path.name, "status": report["status"],
            "score_us": _us(score), "honest_us": _us(honest[key]),
            "ratio": None if not score else round(score / honest[key], 4),
            "message": report["message"][:300], "flags": report["flags"][:3],
        })  # fmt: skip


def launch_bound(runs: int) -> None:
    from grader.problem import load_problem

    with tempfile.TemporaryDirectory() as folder:
        module = Path(folder) / "launch_bound.py"
        module.write_text(LAUNCH_BOUND)
        problem = load_problem(module)
        scores, walls, cvs = [], [], []
        for _ in range(runs):
            report = grade(problem, LAUNCH_BOUND_SOLUTION, "leaderboard")
            if report["status"] != "passed":
                emit({"what": "launch-bound", "status": report["status"],
                      "message": report["message"][:500]})  # fmt: skip
                return
            scores.append(report["score"])
            walls.append(report["wall_s"])
            cvs.append(report["cases"][0]["time"]["cv"])
            emit({"what": "grading", "problem": "launch-bound", "score_us": _us(report["score"]),
                  "wall_s": round(report["wall_s"], 2), "short_calls": report.get("short_calls"),
                  "message": report["message"], "cases": clocks(report)})  # fmt: skip
        emit({"what": "launch-bound", "scores_us": [_us(s) for s in scores],
              "score_cv": cv(scores), "within_grading_cv": cvs,
              "grading_s_median": statistics.median(walls)})  # fmt: skip


# -- Nsight Compute ---------------------------------------------------------------------

NCU_CALLS = 5


def ncu(problems: list[str]) -> None:
    """Each benchmark case's ranked figure (benchmark mode) beside Nsight Compute's kernel
    time for the same solution on the same public inputs (`--clock-control none
    --cache-control all`), summed over the kernels of a call, median over NCU_CALLS calls."""
    from grader.problem import load_problem

    for name in problems:
        report = grade(load_problem(name), solution(name), "benchmark")
        ours = case_figures(report)
        events = [(c.get("runner_time") or {}).get("median_s") for c in report["cases"]]
        theirs = _ncu_times(name)
        emit({
            "what": "ncu", "problem": name, "ours_us": [_us(x) for x in ours],
            "runner_events_us": [_us(x) for x in events],
            "ncu_us": [_us(x) for x in theirs],
            "ours_over_ncu": [None if not (a and b) else round(a / b, 4)
                              for a, b in zip(ours, theirs, strict=False)],
        })  # fmt: skip


def _ncu_times(problem: str) -> list[float | None]:
    command = [
        os.environ.get("KJ_NCU", "ncu"), "--clock-control", "none", "--cache-control", "all",
        "--profile-from-start", "off", "--csv", "--page", "raw",
        "--metrics", "gpu__time_duration.sum", "--print-nvtx-rename", "kernel", "--nvtx",
        sys.executable, __file__, "ncu-target", problem,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    rows = [row for row in csv.reader(io.StringIO(done.stdout)) if len(row) > 3]
    if not rows:
        print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
        return []
    header = rows[0]
    name_at, time_at = header.index("Kernel Name"), header.index("gpu__time_duration.sum")
    unit = rows[1][time_at] if len(rows) > 1 else "nsecond"
    scale = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3}.get(unit, 1e-9)
    per_call: dict[tuple[int, int], float] = {}
    for row in rows[2:]:
        label = row[name_at].split("/")[0]  # "kj-case C call K" renamed by its range
        if not label.startswith("kj-case "):
            continue
        parts = label.split()
        key = (int(parts[1]), int(parts[3]))
        per_call[key] = per_call.get(key, 0.0) + float(row[time_at].replace(",", "")) * scale
    cases = sorted({case for case, _ in per_call})
    return [statistics.median(t for (c, _), t in per_call.items() if c == case) for case in cases]


def ncu_target(problem_name: str) -> None:
    """Under ncu: the solution's calls on each benchmark case's public inputs, each call in an
    NVTX range of its own, profiled only between cudaProfilerStart and Stop."""
    import torch

    from grader.inputs import seeded_case
    from grader.problem import load_problem

    problem = load_problem(problem_name)
    with tempfile.TemporaryDirectory() as folder:
        for name, text in problem.files.items():
            (Path(folder) / name).write_text(text)
        (Path(folder) / "submission.py").write_text(solution(problem_name))
        sys.path.insert(0, folder)
        os.chdir(folder)
        import reference  # type: ignore[import-not-found]
        import submission  # type: ignore[import-not-found]

        for index, case in enumerate(problem.benchmarks_for("cuda")):
            data = reference.generate_input(**seeded_case(case, None))
            for _ in range(3):
                submission.custom_kernel(data)
            torch.cuda.synchronize()
            for call in range(NCU_CALLS):
                torch.cuda.profiler.start()
                torch.cuda.nvtx.range_push(f"kj-case {index} call {call}")
                submission.custom_kernel(data)
                torch.cuda.nvtx.range_pop()
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["spread", "modes", "hostile", "launch-bound", "ncu",
                                         "all", "ncu-target"])  # fmt: skip
    parser.add_argument("problem", nargs="?")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--problems", nargs="+", default=PROBLEMS)
    parser.add_argument("--mode", default="leaderboard")
    parser.add_argument("--solutions", nargs="+", default=["pytorch"])
    parser.add_argument("--tree", type=Path, help="grade with this checkout's grader")
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--standby",
        nargs="+",
        choices=["settled", "as-is", "none"],
        help="spread: grade as a worker does (none: no runner started ahead)",
    )
    parser.add_argument(
        "--standby-runners",
        type=int,
        help="spread --standby: runners kept waiting on a GPU (default: the worker's)",
    )
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve() if args.tree else REPO))
    if args.what == "ncu-target":
        ncu_target(args.problem)
        return
    started = time.time()
    kind = device_kind()
    emit({"what": "machine", "device": kind, "tree": str(args.tree or REPO),
          "gpu": _gpu_name(kind), "started": time.strftime("%Y-%m-%d %H:%M:%S")})  # fmt: skip
    if args.standby_runners is not None:
        from grader import session

        session.STANDBY_RUNNERS["cuda"] = args.standby_runners
    if args.what in ("spread", "all"):
        for standby in args.standby or [None]:
            spread(args.problems, args.runs, args.mode, args.solutions, standby)
    if args.what in ("modes", "all"):
        modes(args.problems)
    if args.what in ("hostile", "all"):
        hostile(kind)
    if args.what in ("launch-bound", "all"):
        launch_bound(args.runs)
    if args.what == "ncu" or (args.what == "all" and kind == "cuda"):
        ncu(args.problems)
    emit({"what": "done", "seconds": round(time.time() - started, 1)})
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


def _gpu_name(kind: str) -> str:
    if kind != "cuda":
        return ""
    import torch

    return str(torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
