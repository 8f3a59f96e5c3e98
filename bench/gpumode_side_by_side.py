"""GPU MODE's own eval.py and KernelJudge's grader on the same problem and submission, one
after the other on this GPU: each one's wall time for a leaderboard-mode run, the GPU's
busy fraction meanwhile (nvidia-smi), and the per-case times each reports (their mean,
our median); with `--mode test`, each one's verdict on the problem's test cases. The
problem is a folder of GPU MODE's reference-kernels as published, brought in as
bench/outside/README.md says (never committed); eval.py and utils.py sit beside it.

    python -m bench.gpumode_side_by_side .ext/gpumode/pmpp_v2/vectoradd_py \
        problems/vectoradd/solutions/pytorch.py [--mode leaderboard|test] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.backlog import Utilisation

REPO = Path(__file__).resolve().parent.parent


def case_lines(cases: list[dict[str, Any]]) -> str:
    """eval.py's test file: one `key: value; key: value` line per case."""
    return "".join("; ".join(f"{k}: {v}" for k, v in case.items()) + "\n" for case in cases)


def their_run(problem: Path, submission: Path, gpu: Utilisation, mode: str) -> dict[str, Any]:
    """eval.py as GPU MODE's runner uses it: the problem's files in one folder, the cases in
    a file, results on the file descriptor POPCORN_FD names."""
    spec = yaml.safe_load((problem / "task.yml").read_text())
    with tempfile.TemporaryDirectory(prefix="kj-gpumode-") as root:
        work = Path(root)
        for entry in spec["files"]:
            source = entry["source"]
            origin = submission if source == "@SUBMISSION@" else problem / source
            shutil.copy(origin, work / entry["name"])
        cases = spec["tests" if mode == "test" else "benchmarks"]
        (work / "cases.txt").write_text(case_lines(cases))
        results = work / "results.txt"
        with results.open("w") as sink:
            started = time.monotonic()
            finished = subprocess.run(
                [sys.executable, "eval.py", mode, "cases.txt"],
                cwd=work,
                env={**os.environ, "POPCORN_FD": str(sink.fileno())},
                pass_fds=(sink.fileno(),),
                capture_output=True,
                text=True,
                timeout=600,
            )
            wall = time.monotonic() - started
        logged = dict(
            line.split(": ", 1) for line in results.read_text().splitlines() if ": " in line
        )
    means = {
        logged.get(f"benchmark.{i}.spec", str(i)): float(logged[f"benchmark.{i}.mean"]) / 1e3
        for i in range(int(logged.get("benchmark-count", 0)))
        if f"benchmark.{i}.mean" in logged
    }
    return {
        "exit": finished.returncode,
        "check": logged.get("check"),
        "failures": {k: v for k, v in logged.items() if k.endswith(".error")},
        "wall_s": wall,
        "gpu_busy_percent": gpu.mean_between(started, started + wall),
        "mean_us": means,
        "stderr": finished.stderr[-1500:],
    }


def our_run(problem: Path, submission: Path, gpu: Utilisation, mode: str) -> dict[str, Any]:
    """`kerneljudge grade` on the same folder: a fresh process, a sandboxed runner, as a
    competitor grades locally (a worker keeps its runner started ahead, which this is not)."""
    started = time.monotonic()
    finished = subprocess.run(
        [sys.executable, "-m", "server.cli", "grade", str(problem), str(submission),
         "--mode", mode, "--device", "cuda", "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    wall = time.monotonic() - started
    report = json.loads(finished.stdout)
    return {
        "exit": finished.returncode,
        "status": report["status"],
        "message": report.get("message", "")[:1500],
        "wall_s": wall,
        "grading_wall_s": report["wall_s"],
        "gpu_busy_percent": gpu.mean_between(started, started + wall),
        "median_us": {
            "; ".join(f"{k}: {v}" for k, v in case["params"].items()): case["time"]["median_s"]
            * 1e6
            for case in report["cases"]
            if case.get("time")
        },
        "samples": [case["time"]["samples"] for case in report["cases"] if case.get("time")],
        "phases": report["phases"],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem", type=Path)
    parser.add_argument("submission", type=Path)
    parser.add_argument("--mode", choices=("leaderboard", "test"), default="leaderboard")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    gpu = Utilisation()
    try:
        result = {
            "gpumode_eval": their_run(args.problem, args.submission, gpu, args.mode),
            "kerneljudge_grade": our_run(args.problem, args.submission, gpu, args.mode),
        }
    finally:
        gpu.stop()
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
