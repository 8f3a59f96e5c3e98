"""Turnaround of test-mode submissions through a single-machine install on this host: the
time from `POST /api/v1/submissions` until the API reports a verdict, as a user waits for it.

    python -m bench.turnaround [--runs 6] [--problem vectoradd] [--solution pytorch]

`kerneljudge serve` with its local worker (sandboxed, as in production), one submission at
a time with a short pause between them (the worker's pool forks a fresh process after
each grading). The first one also pays for the worker's first start; the median is taken
over the rest."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.service_demo import REPO, TERMINAL, add_user, serving


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--problem", default="vectoradd")
    parser.add_argument("--solution", default="pytorch")
    args = parser.parse_args()
    code = (REPO / "problems" / args.problem / "solutions" / f"{args.solution}.py").read_text()
    data_dir = Path(tempfile.mkdtemp(prefix="kj-turnaround-"))
    env = {**os.environ, "KJ_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    token = add_user(env, "timer")
    headers = {"Authorization": f"Bearer {token}"}
    seconds, statuses = [], []
    with (
        serving(env, data_dir / "serve.log") as base,
        httpx.Client(base_url=base, timeout=120) as http,
    ):
        for run in range(args.runs):
            started = time.monotonic()
            sent = http.post(
                "/api/v1/submissions",
                json={"problem": args.problem, "code": f"{code}\n# run {run}\n", "mode": "test"},
                headers=headers,
            )
            sid = sent.json()["id"]
            while (status := http.get(f"/api/v1/submissions/{sid}", headers=headers).json())[
                "status"
            ] not in TERMINAL:
                time.sleep(0.05)
            seconds.append(time.monotonic() - started)
            statuses.append(status["status"])
            time.sleep(2)
    print(json.dumps({
        "problem": args.problem, "solution": args.solution, "statuses": statuses,
        "seconds": [round(s, 2) for s in seconds],
        "median_after_first_s": round(statistics.median(seconds[1:] or seconds), 2),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
