"""Starting the real ``kerneljudge`` processes for end-to-end tests and talking to them
over HTTP, as a user with curl would."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from rig.cluster import free_port

REPO_ROOT = Path(__file__).resolve().parents[1]
TERMINAL = {"passed", "failed", "error", "timeout", "rejected"}


def kerneljudge(*args: str) -> list[str]:
    return [sys.executable, "-m", "server.cli", *args]


def service_env(data_dir: Path, **settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KJ_")}
    env["KJ_DATA_DIR"] = str(data_dir)
    env["KJ_GPU_TYPES"] = "cpu"
    env["PYTHONUNBUFFERED"] = "1"
    env.update({f"KJ_{key.upper()}": value for key, value in settings.items()})
    return env


def add_user(env: dict[str, str], name: str, *, admin: bool = False, author: bool = False) -> str:
    args = ["user", "add", name] + (["--admin"] if admin else []) + (["--author"] if author else [])
    done = subprocess.run(
        kerneljudge(*args), env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


@contextmanager
def running(
    argv: list[str], env: dict[str, str], log: Path, cwd: Path = REPO_ROOT
) -> Iterator[subprocess.Popen[bytes]]:
    """A process in its own session, ended with its whole group afterwards."""
    with log.open("ab") as out:
        process = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        stop_group(process, signal.SIGTERM)


def stop_group(process: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(process.pid, sig)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    # The group's other processes (serve's workers) have a few seconds more; none outlives
    # the test that started it.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def wait_for_api(
    base: str, process: subprocess.Popen[bytes], log: Path, startup_s: float = 90.0
) -> None:
    """Until `serve` at `base` answers /healthz with 200; fails at once if it exits."""
    deadline = time.monotonic() + startup_s
    while True:
        assert process.poll() is None, f"serve exited:\n{log.read_text()[-5000:]}"
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return
        assert time.monotonic() < deadline, f"serve did not answer:\n{log.read_text()[-5000:]}"
        time.sleep(0.3)


@contextmanager
def serve_process(
    env: dict[str, str],
    log: Path,
    *args: str,
    command: list[str] | None = None,
    cwd: Path = REPO_ROOT,
    port: int | None = None,
    startup_s: float = 90.0,
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`kerneljudge serve [args]` (`command`, by default the checkout's) once it answers,
    stopped with its process group afterwards; yields the process and its URL."""
    port = port or free_port()
    argv = [*(command or kerneljudge()), "serve", "--port", str(port), *args]
    with running(argv, env, log, cwd) as process:
        base = f"http://127.0.0.1:{port}"
        wait_for_api(base, process, log, startup_s)
        yield process, base


@contextmanager
def serving(
    env: dict[str, str],
    log: Path,
    command: list[str] | None = None,
    cwd: Path = REPO_ROOT,
    startup_s: float = 90.0,
) -> Iterator[str]:
    """`kerneljudge serve` answering; yields its URL."""
    with serve_process(env, log, command=command, cwd=cwd, startup_s=startup_s) as (_, base):
        yield base


def submit(base: str, token: str, problem: str, code: str, mode: str) -> int:
    response = httpx.post(
        f"{base}/api/v1/submissions",
        json={"problem": problem, "code": code, "mode": mode},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    return int(response.json()["id"])


def wait_for(
    base: str, token: str, submission_id: int, statuses: set[str], timeout_s: float, log: Path
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        seen = httpx.get(
            f"{base}/api/v1/submissions/{submission_id}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        ).json()
        if seen["status"] in statuses:
            return seen
        time.sleep(0.5)
    raise AssertionError(
        f"submission {submission_id} stayed {seen.get('status')}; log:\n{log.read_text()[-5000:]}"
    )
