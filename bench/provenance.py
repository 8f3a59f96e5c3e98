"""Where a benchmark's numbers came from: when, on what machine, at what commit; written
beside the numbers by `load.py` and `faults.py`."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def provenance(**measured: Any) -> dict[str, Any]:
    """The date, this machine's cores and memory, `measured` (what the script read of the
    machine itself), and the commit with whether the tree had changes."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.strip()

    meminfo = Path("/proc/meminfo").read_text().split()
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "memory_gib": round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1),
        **measured,
        "commit": git("rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain")),
    }
