"""The API finds this host's device with a process that imports torch (seconds): many first
requests at once must wait for one probe, not start one each."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Any

import pytest

from server import devices


def test_concurrent_first_callers_share_one_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[float] = []

    def probe(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        started.append(time.monotonic())
        time.sleep(0.2)
        return subprocess.CompletedProcess(args, 0, stdout="cuda h200\n", stderr="")

    monkeypatch.setattr(devices, "_found", None)
    monkeypatch.setattr(devices.subprocess, "run", probe)
    found: list[tuple[str, str]] = []
    callers = [
        threading.Thread(target=lambda: found.append(devices.local_device())) for _ in range(16)
    ]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(5)
    assert len(started) == 1
    assert found == [("cuda", "h200")] * 16
