"""This host's device, found in a short-lived process so that a server or worker process
never initialises CUDA itself (a worker forks its grading processes after this)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

from kerneljudge import python_env

PROBE = "from grader.device import detect_device; d = detect_device(); print(d.kind, d.device_type)"


_found: tuple[str, str] | None = None
# One probe at a time: the callers that come while it runs wait for its answer instead of
# each starting a process that imports torch (sixteen at once held a 2-core API for tens of
# seconds).
_probing = threading.Lock()


def local_device() -> tuple[str, str]:
    """(device kind, device type), e.g. ("cuda", "h200") or ("cpu", "cpu"), probed once."""
    global _found
    with _probing:
        if _found is None:
            output = subprocess.run(
                [sys.executable, "-c", PROBE],
                env=python_env(),
                capture_output=True,
                text=True,
                check=True,
                timeout=120,
            ).stdout.split()
            _found = (output[-2], output[-1])
        return _found


def calibrate_local_device() -> dict[str, Any]:
    """This host's device and its measured peaks (copy bandwidth, matrix rate): a few
    seconds on a GPU. {"device": {kind, device_type, name}, "peaks": {...}}"""
    output = subprocess.run(
        [sys.executable, "-m", "grader.calibrate"],
        env=python_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    return dict(json.loads(output.strip().splitlines()[-1]))
