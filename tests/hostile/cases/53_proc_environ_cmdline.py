# threat: 20
# expect: passed
# defence: a fresh /proc in its own pid namespace, an environment allow-list, non-root inside
"""Reads its own environment and every visible process's /proc/<pid>/environ and cmdline,
printing anything that looks like a secret; computes the right answer."""

import os
import re
from pathlib import Path

SECRET = re.compile(r"(SECRET|PASSWORD|TOKEN|_URL|SEED|CANARY|KEY)", re.IGNORECASE)
found = []
for name, value in os.environ.items():
    if SECRET.search(name) or SECRET.search(value):
        found.append(f"own env {name}={value[:100]}")
for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
    for entry in ("environ", "cmdline"):
        try:
            raw = Path(f"/proc/{pid}/{entry}").read_bytes().decode(errors="replace")
        except OSError:
            continue
        for item in raw.split("\0"):
            if SECRET.search(item):
                found.append(f"pid {pid} {entry}: {item[:100]}")
for line in sorted(set(found))[:60]:
    print(line)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
