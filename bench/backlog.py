"""Gradings per minute and the GPU's busy fraction under a backlog, through a single-machine
install on this host (`kerneljudge serve` with its local sandboxed worker): several users
submit at once, and the script times the backlog from its first POST to its last verdict
while sampling the GPU's utilisation with nvidia-smi. Then the turnaround of single test
submissions, one after another, and where each grading's time went (its report's phases).

    python -m bench.backlog [--problem vectoradd [--problem rmsnorm ...]] [--test 24]
        [--leaderboard 10] [--users 4] [--turnarounds 5] [--out backlog.json]

Each problem's PyTorch solution (`solutions/pytorch.py`); the test-mode backlog and the
turnarounds use the first problem, and each problem gets a leaderboard-mode backlog (whose
scores show how much a score moves from one grading to the next). On a host without a GPU
it runs the same on the CPU worker (the busy fraction is then left out)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.service_demo import REPO, TERMINAL, add_user, call, serving


class Utilisation:
    """nvidia-smi's GPU utilisation (percent of time a kernel ran), sampled every 100 ms."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._process: subprocess.Popen[str] | None = None
        smi = shutil.which("nvidia-smi")
        if smi is None:
            return
        self._process = subprocess.Popen(
            [smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100"],
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                self.samples.append((time.monotonic(), float(line.split(",")[0])))
            except ValueError:
                continue

    def mean_between(self, start: float, end: float) -> float | None:
        inside = [value for moment, value in self.samples if start <= moment <= end]
        return statistics.fmean(inside) if inside else None

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()


def submit(base: str, token: str, problem: str, code: str, mode: str) -> int:
    body = {"problem": problem, "code": code, "mode": mode}
    return int(call("POST", f"{base}/api/v1/submissions", token, body)["id"])


def wait_all(base: str, owners: dict[int, str], timeout_s: float) -> dict[int, dict[str, Any]]:
    done: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    while len(done) < len(owners) and time.monotonic() < deadline:
        for submission_id, token in owners.items():
            if submission_id in done:
                continue
            seen = call("GET", f"{base}/api/v1/submissions/{submission_id}", token)
            if seen["status"] in TERMINAL:
                done[submission_id] = seen
        time.sleep(0.1)
    return done


def phases(reports: list[dict[str, Any]]) -> dict[str, float]:
    """Median seconds per phase over the gradings (from their reports)."""
    names = {name for report in reports for name in report.get("phases") or {}}
    return {
        name: statistics.median((report.get("phases") or {}).get(name, 0.0) for report in reports)
        for name in sorted(names)
    }


def backlog(
    base: str, tokens: list[str], problem: str, code: str, mode: str, count: int, gpu: Utilisation
) -> dict[str, Any]:
    started = time.monotonic()
    owners = {}
    for index in range(count):
        token = tokens[index % len(tokens)]
        owners[submit(base, token, problem, code, mode)] = token
    done = wait_all(base, owners, timeout_s=60 + 120 * count)
    ended = time.monotonic()
    reports = list(done.values())
    statuses: dict[str, int] = {}
    for report in reports:
        statuses[report["status"]] = statuses.get(report["status"], 0) + 1
    wall = ended - started
    return {
        "mode": mode,
        "submissions": count,
        "finished": len(reports),
        "statuses": statuses,
        "wall_s": wall,
        "gradings_per_minute": 60 * len(reports) / wall if wall > 0 else None,
        "gpu_busy_percent": gpu.mean_between(started, ended),
        "scores": [r["score"] for r in reports if r.get("score") is not None],
        "not_passed": [
            {
                "id": r["id"],
                "status": r["status"],
                "message": r["message"][:800],
                "flags": r["flags"],
            }
            for r in reports
            if r["status"] != "passed"
        ][:3],
        "fewest_samples_in_a_case": min(
            (c["time"]["samples"] for r in reports for c in r.get("cases") or [] if c.get("time")),
            default=None,
        ),
        "phases_median_s": phases(reports),
        "flags": sorted({flag for r in reports for flag in r.get("flags") or []})[:5],
    }


def turnarounds(base: str, token: str, problem: str, code: str, runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        started = time.monotonic()
        submission_id = submit(base, token, problem, code, "test")
        wait_all(base, {submission_id: token}, timeout_s=120)
        seconds.append(time.monotonic() - started)
        time.sleep(0.5)
    return seconds


def spread(scores: list[float]) -> dict[str, float]:
    """The scores' coefficient of variation and range, relative to their median."""
    if len(scores) < 2:
        return {}
    median = statistics.median(scores)
    return {
        "median": median,
        "cv": statistics.stdev(scores) / statistics.fmean(scores),
        "range_over_median": (max(scores) - min(scores)) / median,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", action="append")
    parser.add_argument("--test", type=int, default=24, help="test-mode submissions at once")
    parser.add_argument("--leaderboard", type=int, default=10, help="leaderboard-mode ones")
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--turnarounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    problems = args.problem or ["vectoradd"]
    codes = {
        name: (REPO / "problems" / name / "solutions" / "pytorch.py").read_text()
        for name in problems
    }
    data_dir = Path(tempfile.mkdtemp(prefix="kj-backlog-"))
    env = {
        **os.environ,
        "KJ_DATA_DIR": str(data_dir),
        "PYTHONUNBUFFERED": "1",
        "KJ_SUBMISSION_RATE_LIMIT": "0",
    }
    tokens = [add_user(env, f"user{i}") for i in range(args.users)]
    gpu = Utilisation()
    first = problems[0]
    result: dict[str, Any] = {"problems": problems}
    try:
        with serving(env, data_dir / "serve.log") as base:
            # The worker's first grading also pays for its start; one before the clock.
            turnarounds(base, tokens[0], first, codes[first], 1)
            if args.turnarounds:
                result["turnaround_s"] = turnarounds(
                    base, tokens[0], first, codes[first], args.turnarounds
                )
                print(json.dumps({"turnaround_s": result["turnaround_s"]}), flush=True)
            if args.test:
                result["test"] = backlog(base, tokens, first, codes[first], "test", args.test, gpu)
                print(json.dumps({"test": result["test"]}), flush=True)
            for name in problems if args.leaderboard else []:
                ranked = backlog(
                    base, tokens, name, codes[name], "leaderboard", args.leaderboard, gpu
                )
                ranked["score_spread"] = spread(ranked["scores"])
                result[f"leaderboard_{name}"] = ranked
                print(json.dumps({f"leaderboard_{name}": ranked}), flush=True)
    finally:
        gpu.stop()
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
