"""The API process never imports torch: it only lists problems, queues gradings and shows
reports (torch and CUDA belong to the workers), and importing it costs a cold API seconds."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_api_imports_no_torch() -> None:
    found = subprocess.run(
        [sys.executable, "-c", "import sys, server.app; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
    assert found[-1] == "False"
