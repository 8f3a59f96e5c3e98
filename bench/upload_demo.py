"""An organizer's problem through the service, as a user would do it: `kerneljudge serve`
with its local worker, the archive uploaded over REST, its validation on the worker, then
submissions over HTTP and the leaderboard.

    python -m bench.upload_demo ARCHIVE [expect:invalid] [pass:SOLUTION.py] [fail:SOLUTION.py]
        [ARCHIVE ...]

Archives are uploaded in turn to the same service: one of the same problem with changed
files is its next version, one with changed example solutions only is validated again. Each
is expected to go live after validation, or with `expect:invalid` to be refused by it. The
solutions after an archive are submitted to its problem in test mode; those expected to
pass also in leaderboard mode. Prints each validation report, every verdict and the
leaderboard; exits 1 when an outcome differs from the one expected. Works on the CPU and on
a GPU host (`bench/README.md`)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.service_demo import TERMINAL, add_user, serving


def wait_until(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        seen = check()
        if seen is not None:
            return seen
        time.sleep(1)
    raise TimeoutError(f"{what} did not finish in {timeout_s:.0f} s")


ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz")


def plan(args: list[str]) -> list[tuple[Path, bool, list[list[str]]]]:
    """(archive, expected live, [[expected verdict, solution], ...]) per upload, in order."""
    uploads: list[tuple[Path, bool, list[list[str]]]] = []
    for arg in args:
        if arg.endswith(ARCHIVE_SUFFIXES):
            uploads.append((Path(arg), True, []))
        elif not uploads:
            raise SystemExit(f"{arg}: name an archive first")
        elif arg == "expect:invalid":
            uploads[-1] = (uploads[-1][0], False, uploads[-1][2])
        elif arg.startswith(("pass:", "fail:")):
            uploads[-1][2].append(arg.split(":", 1))
        else:
            raise SystemExit(f"{arg}: expected an archive, expect:invalid, pass:FILE or fail:FILE")
    return uploads


def main() -> int:
    uploads = plan(sys.argv[1:])
    data_dir = Path(tempfile.mkdtemp(prefix="kj-upload-demo-"))
    env = {**os.environ, "KJ_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    organizer, competitor = add_user(env, "olga", True), add_user(env, "pete", False)
    admin = {"Authorization": f"Bearer {organizer}"}
    user = {"Authorization": f"Bearer {competitor}"}
    with serving(env, data_dir / "serve.log") as base:
        http = httpx.Client(base_url=base, timeout=60)
        differ = 0
        for archive, live, wanted in uploads:
            differ += run(http, archive, live, wanted, admin, user)
        return 1 if differ else 0


def run(
    http: httpx.Client,
    archive: Path,
    live: bool,
    wanted: list[list[str]],
    admin: dict[str, str],
    user: dict[str, str],
) -> int:
    """Upload, wait for the validation, submit each solution, read the leaderboard; returns
    how many outcomes differ from those expected."""
    created = http.post(
        "/api/v1/problems", files={"archive": (archive.name, archive.read_bytes())},
        headers=admin,
    ).json()  # fmt: skip
    name = created["name"]
    print(f"\nPOST /api/v1/problems {archive.name} -> {name} version {created['version']}, "
          f"{created['status']} on {created['gpu_types']}")  # fmt: skip
    started = time.monotonic()
    url = f"/api/v1/problems/{name}/validation"
    validation = wait_until(
        lambda: _unless_validating(http.get(url, headers=admin).json()), 1800, "validation"
    )
    differ = (validation["status"] == "live") != live
    print(f"validation: {validation['status']} after {time.monotonic() - started:.0f} s "
          f"({'as expected' if not differ else 'NOT as expected'})")  # fmt: skip
    for device in validation["devices"]:
        print(f"  {device['gpu']}: {device['status']} (worker {device['worker']})")
        for check in (device.get("report") or {}).get("checks", []):
            message = " ".join((check.get("message") or "").split())[:160]
            print(f"    {check['name']}: {check['status']} ({check['outcome']}, "
                  f"{check.get('wall_s', 0):.1f} s) {message}")  # fmt: skip
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
    if wanted:
        board = http.get(f"/api/v1/leaderboards/{name}", headers=admin).json()
        print(f"leaderboard ({board['gpu']}, from version {board['from_version']}):",
              [(e["rank"], e["user"], e["score"], e["problem_version"])
               for e in board["entries"]])  # fmt: skip
    return differ


def _unless_validating(seen: dict[str, Any]) -> dict[str, Any] | None:
    return None if seen["status"] == "validating" else seen


def _unless_pending(seen: dict[str, Any]) -> dict[str, Any] | None:
    return seen if seen["status"] in TERMINAL else None


if __name__ == "__main__":
    sys.exit(main())
