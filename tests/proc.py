"""The machine's processes as /proc lists them, for tests that check what is left running."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Process:
    pid: int
    state: str  # "Z" for a zombie waiting for its reaper
    parent: int
    group: int
    cmdline: str  # its arguments joined by spaces


def processes() -> Iterator[Process]:
    """Every process listed now; one that ends while it is being read is passed over."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_text().replace("\0", " ").strip()
            yield Process(int(entry.name), fields[0], int(fields[1]), int(fields[2]), cmdline)
        except (OSError, IndexError, ValueError):
            continue
