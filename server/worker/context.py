"""A grading worker's context: its device, the device's measured peaks and the GPU memory in
use before any grading. Made once when `kerneljudge worker` starts, before its pool forks
its grading processes, so each finds it already in place."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from billiard.process import current_process

from grader.calibrate import DevicePeaks
from server.settings import get_settings


@dataclass(frozen=True)
class GpuWorker:
    device: str = "cpu"  # "cpu" or "cuda"
    # Measured when the worker started; None: the harness measures them when it times.
    peaks: DevicePeaks | None = None
    # GPU memory in use per visible GPU at start; None where nvidia-smi is missing (no
    # hygiene check) or on the CPU.
    gpu_baseline: tuple[int, ...] | None = None
    memory_bytes: int = field(
        default_factory=lambda: int(get_settings().sandbox_memory_gib * (1 << 30))
    )
    # The device queues it takes jobs from, as its slots tell the dispatcher.
    queues: tuple[str, ...] = ()
    # The GPUs it owns where it owns several (`kerneljudge worker --gpus N`), as
    # CUDA_VISIBLE_DEVICES names them: one pool process per GPU, each grading on its own
    # one, and a grading of several GPUs holding its own and others leased from the rest
    # (server/worker/lease.py, kept in `lease_folder`). Empty for a worker of one GPU or of
    # the CPU, which grades on what CUDA_VISIBLE_DEVICES names, as it always has.
    gpus: tuple[str, ...] = ()
    lease_folder: str | None = None

    @property
    def gpu_count(self) -> int:
        """The GPUs it owns: the largest grading it takes."""
        return max(1, len(self.gpus))


_current: GpuWorker | None = None


def start(worker: GpuWorker) -> None:
    global _current
    _current = worker


def is_grading() -> bool:
    """Whether this process belongs to a grading worker (the results step's does not)."""
    return _current is not None


def current() -> GpuWorker:
    """This process's worker context; a CPU worker without peaks where none was started (a
    task function called directly)."""
    return _current or GpuWorker()


def slot_index() -> int:
    """This pool process's slot in its worker's pool (0 where there is no pool): the same for
    the pool processes that take turns in it."""
    return int(getattr(current_process(), "index", 0) or 0)


def worker_name() -> str:
    """This grading slot, as reports, logs and the dispatcher name it: the host, the worker's
    main process and the pool slot (`slot_index`)."""
    return f"{socket.gethostname()}:{os.getppid()}.{slot_index()}"


def own_gpu(worker: GpuWorker) -> str | None:
    """The GPU of this pool process in a worker of several (its slot's, in the worker's
    order); None in a worker of one GPU or of the CPU."""
    return worker.gpus[slot_index() % len(worker.gpus)] if worker.gpus else None
