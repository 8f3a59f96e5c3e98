"""The GPU lease of a worker that owns several: concurrent gradings, each a process of its own
as pool processes are, get disjoint GPUs, their own among them; GPUs come back when a grading
ends or its process dies; a grading of several GPUs waiting is not overtaken. Fake GPU names
stand for a host's indices: the lease never touches a device."""

from __future__ import annotations

import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.worker.lease import GpuLease, owned_gpus

ROOT = Path(__file__).resolve().parents[3]
GPUS = ("0", "1", "2", "3")
# A grading in a process of its own: it waits for its GPUs, says which it holds, and on a
# line "end" gives them back.
GRADING = """
import sys
from pathlib import Path
from server.worker.lease import GpuLease
lease = GpuLease(Path(sys.argv[1]), tuple(sys.argv[2].split(",")))
held = lease.acquire(int(sys.argv[3]), sys.argv[4] or None)
print(",".join(held), flush=True)
sys.stdin.readline()
lease.release()
print("ended", flush=True)
"""


class Grading:
    def __init__(self, folder: Path, count: int, own: str | None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", GRADING, str(folder), ",".join(GPUS), str(count), own or ""],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def held(self, wait_s: float = 10.0) -> tuple[str, ...] | None:
        """The GPUs it holds, once it says so within `wait_s`; None while it still waits."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], wait_s)
        if not ready:
            return None
        return tuple(self.process.stdout.readline().strip().split(","))

    def end(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("end\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline().strip() == "ended"
        self.process.wait(10)
        self.close()

    def die(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self.close()

    def close(self) -> None:
        for pipe in (self.process.stdin, self.process.stdout):
            if pipe is not None:
                pipe.close()


@pytest.fixture
def gradings(tmp_path: Path) -> Iterator[list[Grading]]:
    """Start gradings with `started.append(Grading(...))`; those left are killed after."""
    started: list[Grading] = []
    yield started
    for grading in started:
        grading.die()


def start(gradings: list[Grading], folder: Path, count: int, own: str | None) -> Grading:
    grading = Grading(folder, count, own)
    gradings.append(grading)
    return grading


def test_concurrent_gradings_hold_disjoint_gpus_their_own_among_them(
    tmp_path: Path, gradings: list[Grading]
) -> None:
    pair = start(gradings, tmp_path, 2, "0")
    assert pair.held() == ("0", "1")
    other = start(gradings, tmp_path, 2, "2")
    assert other.held() == ("2", "3")
    # A grading of one GPU whose own GPU another grading holds waits for it.
    single = start(gradings, tmp_path, 1, "1")
    assert single.held(wait_s=1.0) is None
    pair.end()
    assert single.held() == ("1",)
    assert set(GpuLease(tmp_path, GPUS).holders().values()) == {("2", "3"), ("1",)}


def test_a_dead_gradings_gpus_come_back(tmp_path: Path, gradings: list[Grading]) -> None:
    everything = start(gradings, tmp_path, 4, "0")
    assert everything.held() == GPUS
    waiting = start(gradings, tmp_path, 1, "3")
    assert waiting.held(wait_s=1.0) is None
    everything.die()  # a pool process killed mid-grading never gives them back itself
    assert waiting.held() == ("3",)
    assert list(GpuLease(tmp_path, GPUS).holders().values()) == [("3",)]


def test_a_grading_of_several_gpus_waiting_is_not_overtaken(
    tmp_path: Path, gradings: list[Grading]
) -> None:
    running = start(gradings, tmp_path, 1, "0")
    assert running.held() == ("0",)
    big = start(gradings, tmp_path, 4, "1")
    assert big.held(wait_s=1.0) is None  # GPU 0 is busy
    # GPU 2 is free, but the grading of four waits for it: a later one does not take it.
    later = start(gradings, tmp_path, 1, "2")
    assert later.held(wait_s=1.0) is None
    running.end()
    assert big.held() == GPUS
    assert later.held(wait_s=0.5) is None
    big.end()
    assert later.held() == ("2",)


def test_gradings_of_one_gpu_wait_only_for_their_own(
    tmp_path: Path, gradings: list[Grading]
) -> None:
    pair = start(gradings, tmp_path, 2, "0")
    assert pair.held() == ("0", "1")
    blocked = start(gradings, tmp_path, 1, "1")
    assert blocked.held(wait_s=1.0) is None
    free = start(gradings, tmp_path, 1, "3")
    assert free.held() == ("3",)
    second_pair = start(gradings, tmp_path, 2, "2")
    assert second_pair.held(wait_s=1.0) is None  # only its own GPU is free
    pair.end()
    assert blocked.held() == ("1",)
    # Of the two GPUs freed, never the one an earlier grading waits for.
    assert second_pair.held() == ("0", "2")


def test_a_lease_refuses_what_the_worker_cannot_hold(tmp_path: Path) -> None:
    lease = GpuLease(tmp_path, ("0", "1"))
    with pytest.raises(ValueError, match="cannot be held by a worker of 2"):
        lease.acquire(4, "0")
    with pytest.raises(ValueError, match="not one of this worker's"):
        lease.acquire(1, "7")
    with lease.hold(2, "1") as held:
        assert held == ("0", "1")
        assert lease.holders() != {}
    assert lease.holders() == {}


def test_a_worker_owns_the_gpus_it_is_given() -> None:
    assert owned_gpus(4, None) == GPUS
    assert owned_gpus(2, "GPU-aa, GPU-bb") == ("GPU-aa", "GPU-bb")
    with pytest.raises(ValueError, match="names 1 distinct GPUs"):
        owned_gpus(2, "3")
    with pytest.raises(ValueError, match="names 1 distinct GPUs"):
        owned_gpus(2, "3,3")


def test_a_job_of_a_worker_of_several_gpus_holds_them_for_its_work(tmp_path: Path) -> None:
    """The job skeleton leases the grading's GPUs, its pool process's own first, hands them
    to the work and gives them back after; a worker of one GPU leases nothing, as before."""
    from server.worker import context, gpu

    lease = GpuLease(tmp_path, GPUS)
    seen: list[tuple[tuple[str, ...] | None, dict[str, tuple[str, ...]]]] = []

    def work(worker: context.GpuWorker, held: tuple[str, ...] | None) -> dict[str, object]:
        seen.append((held, lease.holders() if worker.gpus else {}))
        return {"status": "passed"}

    def failed(exc: Exception) -> dict[str, object]:
        raise AssertionError(exc)

    try:
        context.start(context.GpuWorker(gpus=GPUS, lease_folder=str(tmp_path)))
        assert gpu.gpu_job("submission 1", work, failed, gpus=3) == {"status": "passed"}
        context.start(context.GpuWorker())
        assert gpu.gpu_job("submission 2", work, failed) == {"status": "passed"}
    finally:
        context._current = None
    [(held, holders), (alone, _)] = seen
    assert held == ("0", "1", "2") and list(holders.values()) == [held]
    assert alone is None
    assert lease.holders() == {}
