"""Whether a GPU is as clean as when its worker started: no compute process left on it and
its memory back to the baseline. A worker checks before every grading, from a process that
has not touched CUDA yet, and takes itself out of service rather than grade on a GPU that
a previous submission still holds. Read through `nvidia-smi`, so the check itself creates
no CUDA context."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass

# GPU memory the driver itself may hold differently from one moment to the next.
MARGIN_MIB = 256
SETTLE_S = 10.0


@dataclass(frozen=True)
class GpuState:
    memory_used_mib: tuple[int, ...]  # one per GPU this process can see
    compute_pids: tuple[int, ...]


def _visible_ids() -> list[str]:
    """This worker's GPUs as CUDA_VISIBLE_DEVICES names them (indices or UUIDs); nvidia-smi
    itself lists every GPU of the host, including other workers'. Give indices in PCI
    order (CUDA_DEVICE_ORDER=PCI_BUS_ID), or UUIDs, so both tools mean the same GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    return [part.strip() for part in visible.split(",") if part.strip()]


def _query(args: list[str]) -> list[str]:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        raise FileNotFoundError("nvidia-smi is not installed")
    ids = _visible_ids()
    selection = ["--id=" + ",".join(ids)] if ids else []
    output = subprocess.run(
        [smi, *selection, *args, "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    return [line.strip() for line in output.splitlines() if line.strip()]


def gpu_state() -> GpuState | None:
    """The GPUs' memory in use and their compute processes; None without nvidia-smi."""
    try:
        memory = tuple(int(float(v)) for v in _query(["--query-gpu=memory.used"]))
        pids = tuple(
            int(line.split(",")[0]) for line in _query(["--query-compute-apps=pid,used_memory"])
        )
    except (FileNotFoundError, subprocess.SubprocessError, ValueError):
        return None
    return GpuState(memory_used_mib=memory, compute_pids=pids)


def unclean(baseline: tuple[int, ...], state: GpuState) -> str:
    """'' if `state` is as clean as `baseline`, else what is left over."""
    problems = []
    if state.compute_pids:
        shown = ", ".join(str(p) for p in state.compute_pids[:5])
        problems.append(f"compute processes still on the GPU (pids {shown})")
    for index, (before, now) in enumerate(zip(baseline, state.memory_used_mib, strict=False)):
        if now > before + MARGIN_MIB:
            problems.append(f"GPU {index} holds {now} MiB, against {before} MiB at start")
    return "; ".join(problems)


def wait_until_clean(baseline: tuple[int, ...], settle_s: float = SETTLE_S) -> str:
    """Give a finished grading's memory a few seconds to be returned; '' once the GPU is
    clean, else the last description of what is left (also '' without nvidia-smi)."""
    deadline = time.monotonic() + settle_s
    while True:
        state = gpu_state()
        if state is None:
            return ""
        problem = unclean(baseline, state)
        if not problem or time.monotonic() > deadline:
            return problem
        time.sleep(0.5)
