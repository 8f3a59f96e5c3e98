"""End-to-end run of a single-machine install on this host's device, as a user would do it:
`kerneljudge user add`, `kerneljudge serve`, then HTTP only (submit, poll, leaderboard).

    python -m bench.service_demo [SOLUTION ...]   # default: vectoradd's pytorch and triton

Prints each report (status, score, per-case medians, device) and the leaderboard. Used to
show the service grading on a GPU worker (see docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rig import processes
from rig.processes import REPO_ROOT as REPO
from rig.processes import TERMINAL, add_user

# A GPU host's first `serve` imports torch and probes its device before answering.
STARTUP_S = 300.0
DEFAULT = ["problems/vectoradd/solutions/pytorch.py", "problems/vectoradd/solutions/triton.py"]


def call(method: str, url: str, token: str | None = None, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def main() -> int:
    solutions = sys.argv[1:] or DEFAULT
    data_dir = Path(tempfile.mkdtemp(prefix="kj-demo-"))
    env = {**os.environ, "KJ_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    token = add_user(env, "demo")
    try:
        with serving(env, data_dir / "serve.log") as base:
            return demo(base, token, solutions)
    finally:
        print("\n-- serve log tail --")
        print((data_dir / "serve.log").read_text()[-3000:])


def host_env(data_dir: Path, device: str) -> dict[str, str]:
    """The environment of a `serve` of its own in `data_dir`: none of this shell's KJ_
    settings but the sandbox's (bubblewrap's path, its cgroup), and on `device` "cpu" a
    CPU worker even where a GPU is present."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJ_")}
    env |= {"KJ_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    for passed in ("KJ_BWRAP", "KJ_SANDBOX_CGROUP"):
        if passed in os.environ:
            env[passed] = os.environ[passed]
    if device == "cpu":
        env["KJ_GPU_TYPES"] = "cpu"
    return env


@contextmanager
def serving(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`kerneljudge serve` (API, results step and a local grading worker) on a free port,
    until the block ends; yields its base URL once it answers. Stopped from outside (a
    step's time limit), this process still ends the service and its process group: nothing
    may keep the GPU after the run."""
    previous = signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        with processes.serving(env, log_path, startup_s=STARTUP_S) as base:
            yield base
    finally:
        signal.signal(signal.SIGTERM, previous)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def demo(base: str, token: str, solutions: list[str]) -> int:
    """Submit each solution in leaderboard mode, print the reports and the leaderboard."""
    problem = call("GET", f"{base}/api/v1/problems/vectoradd")
    print("problem vectoradd offered on:", problem["gpu_types"])
    ids = {}
    for path in solutions:
        code = (REPO / path).read_text()
        accepted = call(
            "POST", f"{base}/api/v1/submissions", token,
            {"problem": "vectoradd", "code": code, "mode": "leaderboard"},
        )  # fmt: skip
        print(f"POST {path} ->", accepted)
        ids[path] = accepted["id"]
    failures = 0
    for path, sid in ids.items():
        started = time.monotonic()
        while True:
            report = call("GET", f"{base}/api/v1/submissions/{sid}", token)
            if report["status"] in TERMINAL:
                break
            time.sleep(0.5)
        failures += report["status"] != "passed"
        print(f"\n== submission {sid} ({path}): {report['status']} after "
              f"{time.monotonic() - started:.1f} s of polling")  # fmt: skip
        print("device:", report["device_name"], "| gpu:", report["gpu"],
              "| worker:", report["worker"])  # fmt: skip
        print("score (s):", report["score"], "|", report["message"])
        for case in report["cases"]:
            timing = case.get("time") or {}
            print(
                "  ", case["params"], case["status"],
                f"median {timing.get('median_s', 0) * 1e6:.2f} us",
                f"cv {timing.get('cv', 0):.3f}", f"n={timing.get('samples')}",
                f"sm_clock={timing.get('sm_clock_mhz')}",
            )  # fmt: skip
    board = call("GET", f"{base}/api/v1/leaderboards/vectoradd")
    print("\nGET /api/v1/leaderboards/vectoradd ->", json.dumps(board, indent=1))
    if not board["entries"]:
        # What decides a leaderboard row, for each submission, to tell why none is there.
        for sid in ids.values():
            row = call("GET", f"{base}/api/v1/submissions/{sid}", token)
            print(sid, {k: row.get(k) for k in (
                "status", "mode", "gpu", "problem_version", "score", "flags"
            )})  # fmt: skip
        print("problem:", call("GET", f"{base}/api/v1/problems/vectoradd"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
