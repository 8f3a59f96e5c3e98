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


def worker_name() -> str:
    """This grading slot, as reports, logs and the dispatcher name it: the host, the worker's
    main process and the pool slot, the same for the pool processes that take turns in it
    (the slot is 0 where there is no pool)."""
    slot = getattr(current_process(), "index", 0)
    return f"{socket.gethostname()}:{os.getppid()}.{slot}"
