"""A sandbox gets only its worker's GPUs' device nodes: CUDA_VISIBLE_DEVICES (indices in
PCI order, or UUIDs) mapped to /dev/nvidiaN through nvidia-smi and the driver's /proc
(both stood in for here, printing what the real ones print)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from sandbox import SandboxUnavailable, bwrap

# index, uuid, PCI address (nvidia-smi's 8-digit domain) and the device minor the driver
# gave it: minors need not follow the index order.
GPUS = [
    ("0", "GPU-aaaa1111-0000-0000-0000-000000000000", "00000000:18:00.0", 2),
    ("1", "GPU-bbbb2222-0000-0000-0000-000000000000", "00000000:2A:00.0", 0),
    ("2", "GPU-cccc3333-0000-0000-0000-000000000000", "00000000:3B:00.0", 1),
]


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    rows = "\n".join(f"{index}, {uuid}, {bus}" for index, uuid, bus, _ in GPUS)
    smi.write_text(f"#!/bin/sh\ncat <<'END'\n{rows}\nEND\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{smi.parent}:/usr/bin:/bin")
    for _, _, bus, minor in GPUS:
        folder = tmp_path / "proc" / bus[4:].lower()
        folder.mkdir(parents=True)
        (folder / "information").write_text(
            f"Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\nDevice Minor: \t {minor}\n"
        )
    monkeypatch.setattr(bwrap, "NVIDIA_PROC", tmp_path / "proc")


def test_indices_map_to_the_drivers_device_numbers(host: None) -> None:
    assert bwrap.visible_gpu_minors("1") == [0]
    assert bwrap.visible_gpu_minors("0,2") == [2, 1]


def test_uuids_and_their_prefixes_name_gpus_too(host: None) -> None:
    assert bwrap.visible_gpu_minors("GPU-cccc3333-0000-0000-0000-000000000000") == [1]
    assert bwrap.visible_gpu_minors("GPU-aaaa1111") == [2]


def test_a_gpu_the_host_does_not_have_is_refused(host: None) -> None:
    with pytest.raises(SandboxUnavailable, match="not one GPU of this host"):
        bwrap.visible_gpu_minors("7")


def test_without_nvidia_smi_nothing_is_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match="nvidia-smi"):
        bwrap.visible_gpu_minors("0")


def test_a_delegated_cgroup_may_be_named_with_or_without_its_mount() -> None:
    from sandbox.cgroup import _under_mount

    mount = Path("/sys/fs/cgroup")
    assert _under_mount("/kj", mount) == "kj"
    assert _under_mount("/sys/fs/cgroup/kj/workers", mount) == "kj/workers"


def test_a_gradings_leased_gpus_are_the_nodes_its_sandbox_holds(
    host: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker of several GPUs hands a grading the GPUs it leased (server/worker/lease.py):
    its sandbox, a runner's or the ranks', holds those GPUs' nodes and no other of the
    worker's; without a lease, what CUDA_VISIBLE_DEVICES names, as ever."""
    from grader import ranksession
    from grader.confine import runner_isolation

    monkeypatch.setattr(bwrap.glob, "glob", lambda _: [f"/dev/nvidia{m}" for m in (0, 1, 2)])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")

    def numbered(devices: Sequence[str]) -> list[str]:
        return [d for d in devices if d[len("/dev/nvidia") :].isdigit()]

    assert numbered(runner_isolation(tmp_path, "cuda", gpus=("0", "2")).devices) == [
        "/dev/nvidia2",
        "/dev/nvidia1",
    ]
    assert numbered(runner_isolation(tmp_path, "cuda").devices) == [
        "/dev/nvidia2",
        "/dev/nvidia0",
        "/dev/nvidia1",
    ]
    assert runner_isolation(tmp_path, "cpu", gpus=("0",)).devices == ()

    asked: list[object] = []

    class Stop(Exception):
        pass

    def isolation(*args: object, **kwargs: object) -> None:
        asked.append(kwargs.get("gpus"))
        raise Stop

    monkeypatch.setattr(ranksession, "runner_isolation", isolation)
    with pytest.raises(Stop):
        ranksession.RankSession(2, "cuda", isolate=True, memory_bytes=None, gpus=("1", "2"))
    assert asked == [("1", "2")]
