"""An organizer's problem through the service, as a user would do it: `kerneljudge serve`
with its local worker, the archive uploaded over REST, its validation on the worker, then
submissions over HTTP and the leaderboard.

    python bench/upload_demo.py ARCHIVE pass:SOLUTION.py fail:SOLUTION.py ...

Each solution is submitted in test mode; those expected to pass also in leaderboard mode.
Prints the validation report, every verdict and the leaderboard; exits 1 when a verdict
differs from the one expected. Works on the CPU and on a GPU host (`bench/README.md`)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.service_demo import serving

REPO = Path(__file__).resolve().parent.parent
TERMINAL = {"passed", "failed", "error", "timeout", "rejected"}


def add_user(env: dict[str, str], name: str, admin: bool) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "server.cli", "user", "add", name, *(["--admin"] if admin else [])],
        env=env, cwd=REPO, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip().splitlines()[-1]


def wait_until(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = check()
        if seen is not None:
            return seen
        time.sleep(1)
    raise TimeoutError(f"{what} did not finish in {timeout_s:.0f} s")


def main() -> int:
    archive, wanted = Path(sys.argv[1]), [arg.split(":", 1) for arg in sys.argv[2:]]
    data_dir = Path(tempfile.mkdtemp(prefix="kj-upload-demo-"))
    env = {**os.environ, "KJ_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    organizer, competitor = add_user(env, "olga", True), add_user(env, "pete", False)
    admin = {"Authorization": f"Bearer {organizer}"}
    user = {"Authorization": f"Bearer {competitor}"}
    with serving(env, data_dir / "serve.log") as base:
        return run(httpx.Client(base_url=base, timeout=60), archive, wanted, admin, user)


def run(
    http: httpx.Client,
    archive: Path,
    wanted: list[list[str]],
    admin: dict[str, str],
    user: dict[str, str],
) -> int:
    """Upload, wait for the validation, submit each solution, read the leaderboard."""
    created = http.post(
        "/api/v1/problems", files={"archive": (archive.name, archive.read_bytes())},
        headers=admin,
    ).json()  # fmt: skip
    name = created["name"]
    print(f"POST /api/v1/problems {archive.name} -> {name} version {created['version']}, "
          f"{created['status']} on {created['gpu_types']}")  # fmt: skip
    started = time.monotonic()
    url = f"/api/v1/problems/{name}/validation"
    validation = wait_until(
        lambda: _unless_validating(http.get(url, headers=admin).json()), 1800, "validation"
    )
    print(f"validation: {validation['status']} after {time.monotonic() - started:.0f} s")
    for device in validation["devices"]:
        print(f"  {device['gpu']}: {device['status']} (worker {device['worker']})")
        for check in (device.get("report") or {}).get("checks", []):
            message = " ".join((check.get("message") or "").split())[:160]
            print(f"    {check['name']}: {check['status']} ({check['outcome']}, "
                  f"{check.get('wall_s', 0):.1f} s) {message}")  # fmt: skip
    differ = 0
    for expected, path in wanted:
        code = Path(path).read_text()
        modes = ["test", "leaderboard"] if expected == "pass" else ["test"]
        for mode in modes:
            sent = http.post(
                "/api/v1/submissions", json={"problem": name, "code": code, "mode": mode},
                headers=user,
            )  # fmt: skip
            if sent.status_code != 202:
                print(f"{path} {mode}: HTTP {sent.status_code} {sent.text[:200]}")
                differ += 1
                continue
            sid, started = sent.json()["id"], time.monotonic()
            report = wait_until(
                lambda sid=sid: _unless_pending(
                    http.get(f"/api/v1/submissions/{sid}", headers=user).json()
                ),
                1800,
                f"submission {sid}",
            )
            ok = (report["status"] == "passed") == (expected == "pass")
            differ += not ok
            score = f"{report['score'] * 1e6:.2f} µs" if report["score"] else "-"
            verdict = "as expected" if ok else "NOT as expected"
            print(f"{Path(path).name} {mode}: {report['status']} ({verdict}), "
                  f"score {score}, {time.monotonic() - started:.0f} s: "
                  f"{' '.join(report['message'].split())[:200]}")  # fmt: skip
    board = http.get(f"/api/v1/leaderboards/{name}").json()
    print("leaderboard:", [(e["rank"], e["user"], e["score"]) for e in board["entries"]])
    return 1 if differ or validation["status"] != "live" else 0


def _unless_validating(seen: dict[str, Any]) -> dict[str, Any] | None:
    return None if seen["status"] == "validating" else seen


def _unless_pending(seen: dict[str, Any]) -> dict[str, Any] | None:
    return seen if seen["status"] in TERMINAL else None


if __name__ == "__main__":
    sys.exit(main())
