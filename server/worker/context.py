"""A grading worker's context: its device, the device's measured peaks and the GPU memory in
use before any grading. Made once when `kerneljudge worker` starts, before its pool forks a
process per grading, so each grading finds it already in place."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

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


_current: GpuWorker | None = None


def start(worker: GpuWorker) -> None:
    global _current
    _current = worker


def current() -> GpuWorker:
    """This process's worker context; a CPU worker without peaks where none was started (a
    task function called directly)."""
    return _current or GpuWorker()


def worker_name() -> str:
    """This grading process, as reports and logs name it."""
    return f"{socket.gethostname()}:{os.getpid()}"
