"""The single-machine install end to end: `kerneljudge serve` with SQLite and the embedded
broker grades through its own worker; a user works with HTTP alone."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from rig.processes import (
    REPO_ROOT,
    TERMINAL,
    add_user,
    serve_process,
    service_env,
    serving,
    submit,
    wait_for,
)
from tests.proc import processes

pytestmark = pytest.mark.integration

SOLUTIONS = REPO_ROOT / "problems" / "vectoradd" / "solutions"


def test_submit_grade_and_rank_on_one_machine(tmp_path: Path) -> None:
    env = service_env(tmp_path / "var")
    token = add_user(env, "ada")
    log = tmp_path / "serve.log"
    with serving(env, log) as base:
        honest = submit(
            base, token, "vectoradd", (SOLUTIONS / "pytorch.py").read_text(), "leaderboard"
        )
        zeros = submit(base, token, "vectoradd", (SOLUTIONS / "wrong_zeros.py").read_text(), "test")

        report = wait_for(base, token, honest, TERMINAL, 120, log)
        assert report["status"] == "passed", report["message"]
        assert report["score"] > 0
        assert report["cases"] and all(case["status"] == "passed" for case in report["cases"])
        assert report["started_at"] and report["finished_at"] and report["worker"]

        board = httpx.get(f"{base}/api/v1/leaderboards/vectoradd").json()
        assert board["entries"][0]["rank"] == 1
        assert board["entries"][0]["user"] == "ada"
        assert board["entries"][0]["submission_id"] == honest
        assert board["entries"][0]["score"] == report["score"]

        failed = wait_for(base, token, zeros, TERMINAL, 120, log)
        assert failed["status"] == "failed"
        assert failed["score"] is None
        assert "mismatch" in failed["message"].lower()

        # A profile tells its author what took the time, and ranks nobody.
        other = add_user(env, "bea")
        code = (SOLUTIONS / "pytorch.py").read_text()
        profiled = wait_for(
            base, other, submit(base, other, "vectoradd", code, "profile"), TERMINAL, 120, log
        )
        assert profiled["status"] == "passed", profiled["message"]
        assert profiled["score"] is None
        assert (
            "Nsight Compute profiles CUDA kernels only"
            in profiled["cases"][0]["profile"]["why_not_ncu"]
        )
        for case in profiled["cases"]:
            assert case["kind"] == "benchmark" and case["time"] is None
            assert "aten::add" in [row["name"] for row in case["profile"]["rows"]]
        board = httpx.get(f"{base}/api/v1/leaderboards/vectoradd").json()
        assert [entry["user"] for entry in board["entries"]] == ["ada"]


HUNG = """
import time

def custom_kernel(data):
    time.sleep(3600)
"""


def test_a_hung_kernel_delays_another_users_test_by_its_short_limit_at_most(
    tmp_path: Path,
) -> None:
    """Ada submits two test-mode kernels that never return, then Bob a correct one. Test
    mode's cases have a limit of seconds (20 s by default), and the queue takes users in
    turn: Bob's verdict comes after Ada's first hung kernel at most, before her second (the
    order is asserted, not a wall-clock bound, which would measure the machine's load)."""
    env = service_env(tmp_path / "var")
    ada, bob = add_user(env, "ada"), add_user(env, "bob")
    log = tmp_path / "serve.log"
    with serving(env, log) as base:
        hung = [submit(base, ada, "vectoradd", HUNG, "test") for _ in range(2)]
        wait_for(base, ada, hung[0], {"running"}, 60, log)
        quick = submit(base, bob, "vectoradd", (SOLUTIONS / "pytorch.py").read_text(), "test")
        queued = httpx.get(
            f"{base}/api/v1/submissions/{quick}", headers={"Authorization": f"Bearer {bob}"}
        ).json()
        assert queued["status"] == "queued" and queued["queue_position"] == 0
        report = wait_for(base, bob, quick, TERMINAL, 60, log)
        assert report["status"] == "passed", report["message"]
        first = wait_for(base, ada, hung[0], TERMINAL, 10, log)
        assert first["status"] == "timeout"
        assert "test cases exceeded their time limit of 20 s" in first["message"]
        second = httpx.get(
            f"{base}/api/v1/submissions/{hung[1]}", headers={"Authorization": f"Bearer {ada}"}
        ).json()
        assert second["status"] in ("queued", "running")  # Bob went before it


@contextlib.contextmanager
def serving_after_one_grading(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """`kerneljudge serve` once it has graded one submission, so that its worker has started
    a sandboxed runner; yields serve's pid (it leads its own process group) and its log."""
    env = service_env(tmp_path / "var")
    token = add_user(env, "stopper")
    log = tmp_path / "serve.log"
    with serve_process(env, log) as (serve, base):
        sid = submit(base, token, "vectoradd", (SOLUTIONS / "pytorch.py").read_text(), "test")
        wait_for(base, token, sid, TERMINAL, 120, log)
        yield serve.pid, log


def processes_in_group(group: int) -> list[str]:
    """The command lines of the processes still in process group `group`."""
    return [p.cmdline for p in processes() if p.group == group and p.state != "Z"]


def descendants(pid: int) -> dict[int, str]:
    """Every living process under `pid` (sandboxed runners in sessions of their own included),
    by pid, with its command line."""
    living = [p for p in processes() if p.state != "Z"]
    parents = {p.pid: p.parent for p in living}
    lines = {p.pid: p.cmdline for p in living}
    found: dict[int, str] = {}
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found[child] = lines[child]
                frontier.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_serve_exits_only_once_its_runners_are_gone(tmp_path: Path) -> None:
    """SIGTERM to serve alone (what `kill` sends, and what a script stopping it sends) ends it
    only after its workers and their waiting sandboxed runners have ended: once serve has
    exited, nothing it started holds the device."""
    with serving_after_one_grading(tmp_path) as (serve_pid, log):
        deadline = time.monotonic() + 30
        started = descendants(serve_pid)
        while not any("grader.runner" in line for line in started.values()):
            assert time.monotonic() < deadline, f"no waiting runner under serve: {started}"
            time.sleep(0.5)
            started = descendants(serve_pid)
        os.kill(serve_pid, signal.SIGTERM)
        deadline = time.monotonic() + 45
        while alive(serve_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(serve_pid), f"serve running 45 s after SIGTERM\n{log.read_text()[-3000:]}"
        left = {pid: line for pid, line in started.items() if alive(pid)}
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert left == {}, f"left running once serve had exited: {left}"


def test_stopping_serve_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGTERM to the whole install (what a service manager sends to its processes, the
    workers' own pool processes included) ends every one of them: a worker whose pool
    process died first used to hang in its shutdown for good."""
    with serving_after_one_grading(tmp_path) as (group, log):
        os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + 45
        while processes_in_group(group) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = processes_in_group(group)
        if left:
            os.killpg(group, signal.SIGKILL)
        assert left == [], f"still running 45 s after SIGTERM: {left}\n{log.read_text()[-3000:]}"
