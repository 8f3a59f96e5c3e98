"""Whether a GPU is as clean as when its worker started: no compute process on it but the
worker's own (its harness and the runner it keeps waiting for the next grading), and its
memory back to the baseline once theirs is counted out. A worker checks before every
grading and takes itself out of service rather than grade on a GPU that a previous
submission still holds. Read through NVML (`pynvml`, a few milliseconds) where it is
installed, else `nvidia-smi` (a tenth of a second or more a call); neither makes a CUDA
context."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field

# GPU memory the driver itself may hold differently from one moment to the next.
MARGIN_MIB = 256
SETTLE_S = 10.0


@dataclass(frozen=True)
class GpuState:
    memory_used_mib: tuple[int, ...]  # one per GPU this process can see
    compute_pids: tuple[int, ...]
    # GPU memory each compute process holds, where nvidia-smi says.
    process_memory_mib: dict[int, int] = field(default_factory=dict)


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


def _nvml_state() -> GpuState | None:
    """The same through NVML; None where pynvml or the driver's library is missing."""
    try:
        import pynvml  # nvidia-ml-py: optional, present where torch reads clocks through it
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        ids = _visible_ids() or [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
        handles = [
            pynvml.nvmlDeviceGetHandleByIndex(int(ident))
            if ident.isdigit()
            else pynvml.nvmlDeviceGetHandleByUUID(ident)
            for ident in ids
        ]
        memory = tuple(int(pynvml.nvmlDeviceGetMemoryInfo(handle).used) >> 20 for handle in handles)
        pids: list[int] = []
        held: dict[int, int] = {}
        for handle in handles:
            for app in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                pids.append(int(app.pid))
                if isinstance(app.usedGpuMemory, int):
                    held[int(app.pid)] = app.usedGpuMemory >> 20
    except pynvml.NVMLError:
        return None
    return GpuState(memory_used_mib=memory, compute_pids=tuple(pids), process_memory_mib=held)


def gpu_state() -> GpuState | None:
    """The GPUs' memory in use and their compute processes; None without NVML or
    nvidia-smi."""
    found = _nvml_state()
    if found is not None:
        return found
    try:
        memory = tuple(int(float(v)) for v in _query(["--query-gpu=memory.used"]))
        apps = [line.split(",") for line in _query(["--query-compute-apps=pid,used_memory"])]
    except (FileNotFoundError, subprocess.SubprocessError, ValueError):
        return None
    pids, held = [], {}
    for fields in apps:
        try:
            pid = int(fields[0])
        except ValueError:
            continue
        pids.append(pid)
        with contextlib.suppress(IndexError, ValueError):  # "[N/A]" where the driver does not say
            held[pid] = int(float(fields[1]))
    return GpuState(memory_used_mib=memory, compute_pids=tuple(pids), process_memory_mib=held)


def unclean(baseline: tuple[int, ...], state: GpuState, own: frozenset[int] = frozenset()) -> str:
    """'' if `state` is as clean as `baseline` once the processes in `own` (the worker's) are
    counted out, else what is left over."""
    problems = []
    foreign = [pid for pid in state.compute_pids if pid not in own]
    if foreign:
        shown = ", ".join(str(p) for p in foreign[:5])
        problems.append(f"compute processes still on the GPU (pids {shown})")
    # With one GPU per worker, the worker's own processes hold memory on that GPU alone.
    ours = sum(state.process_memory_mib.get(pid, 0) for pid in state.compute_pids if pid in own)
    for index, (before, now) in enumerate(zip(baseline, state.memory_used_mib, strict=False)):
        if now - (ours if index == 0 else 0) > before + MARGIN_MIB:
            problems.append(
                f"GPU {index} holds {now} MiB ({ours} MiB of them the worker's own), "
                f"against {before} MiB at start"
            )
    return "; ".join(problems)


def wait_until_clean(
    baseline: tuple[int, ...],
    own: frozenset[int] | None = None,
    settle_s: float = SETTLE_S,
) -> str:
    """Give a finished grading's memory a few seconds to be returned; '' once the GPU is
    clean, else the last description of what is left (also '' without nvidia-smi). `own`:
    the worker's own processes."""
    deadline = time.monotonic() + settle_s
    while True:
        state = gpu_state()
        if state is None:
            return ""
        problem = unclean(baseline, state, own or frozenset())
        if not problem or time.monotonic() > deadline:
            return problem
        time.sleep(0.5)
