"""GPU hygiene: a worker sees a GPU that a previous grading left dirty (read through a
stand-in nvidia-smi on PATH, printing what the real one prints for these queries)."""

from __future__ import annotations

import os
import stat
import sys
import types
from pathlib import Path

import pytest

from grader.hygiene import GpuState, gpu_state, wait_until_clean


def _fake_smi(folder: Path, memory_mib: list[int], pids: list[int]) -> None:
    script = folder / "nvidia-smi"
    apps = "\\n".join(f"{pid}, 1024" for pid in pids)
    memory = "\\n".join(str(m) for m in memory_mib)
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {folder}/calls\n'
        'for arg in "$@"; do\n'
        '  case "$arg" in\n'
        f'    --query-gpu=memory.used) printf "{memory}\\n" ;;\n'
        f'    --query-compute-apps=*) printf "{apps}" ;;\n'
        "  esac\n"
        "done\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def smi_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def test_a_clean_gpu_passes(smi_dir: Path) -> None:
    _fake_smi(smi_dir, [600], [])
    assert gpu_state() == GpuState(memory_used_mib=(600,), compute_pids=(), process_memory_mib={})
    assert wait_until_clean((500,), settle_s=0) == ""


def test_a_process_left_on_the_gpu_is_named(smi_dir: Path) -> None:
    _fake_smi(smi_dir, [600], [4242])
    assert "compute processes still on the GPU (pids 4242)" in wait_until_clean((500,), settle_s=0)


def test_the_workers_own_processes_and_their_memory_are_counted_out(smi_dir: Path) -> None:
    """The harness and the runner waiting for the next grading hold CUDA contexts: they are
    the worker's own, and so is their memory; a third process is a leftover."""
    _fake_smi(smi_dir, [2600], [4242, 4343])
    assert wait_until_clean((500,), own=frozenset({4242, 4343}), settle_s=0) == ""
    problem = wait_until_clean((500,), own=frozenset({4242}), settle_s=0)
    assert "pids 4343" in problem and "GPU 0 holds 2600 MiB (1024 MiB of them" in problem


def test_memory_not_given_back_is_reported(smi_dir: Path) -> None:
    _fake_smi(smi_dir, [500, 40_000], [])
    problem = wait_until_clean((500, 500), settle_s=0)
    assert (
        problem
        == "GPU 1 holds 40000 MiB (0 MiB of them the worker's own), against 500 MiB at start"
    )


def test_without_nvidia_smi_there_is_nothing_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpu_state() is None and wait_until_clean((500,), settle_s=0) == ""


def test_only_this_workers_gpus_are_asked_about(
    smi_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nvidia-smi lists every GPU of the host; another worker's grading is not a leftover."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    _fake_smi(smi_dir, [500], [])
    assert wait_until_clean((500,), settle_s=0) == ""
    calls = (smi_dir / "calls").read_text().splitlines()
    assert calls and all(call.startswith("--id=3 ") for call in calls)


def test_nvml_is_read_where_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """With pynvml importable the state comes from NVML (no nvidia-smi process per check):
    the visible GPUs by index or UUID, their memory, their compute processes."""

    class App:
        def __init__(self, pid: int, used: int | None) -> None:
            self.pid, self.usedGpuMemory = pid, used

    class Memory:
        used = 3 << 30

    fake = types.ModuleType("pynvml")
    fake.NVMLError = RuntimeError  # type: ignore[attr-defined]
    fake.nvmlInit = lambda: None  # type: ignore[attr-defined]
    fake.nvmlDeviceGetCount = lambda: 2  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByIndex = lambda i: f"gpu{i}"  # type: ignore[attr-defined]
    fake.nvmlDeviceGetHandleByUUID = lambda u: f"uuid:{u}"  # type: ignore[attr-defined]
    fake.nvmlDeviceGetMemoryInfo = lambda h: Memory()  # type: ignore[attr-defined]
    fake.nvmlDeviceGetComputeRunningProcesses = (  # type: ignore[attr-defined]
        lambda h: [App(4242, 1 << 30), App(4343, None)] if h == "gpu1" else []
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert gpu_state() == GpuState(
        memory_used_mib=(3072,), compute_pids=(4242, 4343), process_memory_mib={4242: 1024}
    )
    assert "pids 4343" in wait_until_clean((2048,), own=frozenset({4242}), settle_s=0)
