"""A worker's waiting runners (grader/session.py's Standby): a timed grading on a GPU starts
its windows only once every waiting runner has started (`settle`), since a runner starting
beside them made honest kernels look faster than the device allows. The mechanism is the
same on the CPU, where these tests run it: settle waits for each runner's start and closes
one that died."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from grader.session import RunnerSession, Standby


def test_a_runner_is_ready_once_started_and_never_once_dead() -> None:
    started, dead = RunnerSession("cpu"), RunnerSession("cpu")
    try:
        for pid in dead.pids():
            os.kill(pid, signal.SIGKILL)
        wait_until_dead(dead.pids())
        assert started.wait_ready(time.monotonic() + 120)
        assert started.alive()
        assert not dead.wait_ready(time.monotonic() + 30)
    finally:
        started.close()
        dead.close()


def test_settle_keeps_the_runners_that_started_and_closes_those_that_died() -> None:
    standby = Standby()
    try:
        standby.refill("cpu", isolate=True, memory_bytes=None)
        standby.settle()
        waiting = standby.pids()
        assert waiting, "the runner that started is kept"
        for pid in waiting:
            os.kill(pid, signal.SIGKILL)
        wait_until_dead(waiting)
        standby.settle(within_s=30)
        assert standby.pids() == set(), "a dead runner is not handed to a grading"
    finally:
        standby.close()


def wait_until_dead(pids: set[int], within_s: float = 30) -> None:
    """Until each process has exited (gone, or a zombie its parent has not reaped)."""
    deadline = time.monotonic() + within_s
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        while stat.exists() and time.monotonic() < deadline:
            try:
                if stat.read_text().rpartition(")")[2].split()[0] == "Z":
                    break
            except OSError:
                break
            time.sleep(0.05)
