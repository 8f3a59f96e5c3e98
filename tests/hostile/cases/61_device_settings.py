# threat: 22
# expect: passed
# defence: a read-only root, a private /dev without extra nodes, no capabilities, non-root inside
"""Writes device and kernel settings (CPU frequency governor, perf paranoia, the GPU's tools
and capability nodes), each with the value it already holds, and prints which writes took;
computes the right answer."""

import glob
import os
from pathlib import Path

WRITABLE = [
    "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
    "/proc/sys/kernel/perf_event_paranoid",
    "/sys/bus/pci/rescan",
    "/dev/kmsg",
]
for path in WRITABLE + glob.glob("/dev/nvidia-uvm-tools") + glob.glob("/dev/nvidia-caps/*"):
    try:
        current = Path(path).read_bytes() if path.startswith(("/sys", "/proc")) else b""
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        print(f"{path}: {exc.strerror}")
        continue
    try:
        if current:
            os.write(fd, current)
        print(f"KJ-ESCAPE wrote {path}")
    except OSError as exc:
        print(f"{path}: opened, write refused: {exc.strerror}")
    finally:
        os.close(fd)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
