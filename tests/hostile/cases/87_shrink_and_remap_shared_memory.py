# threat: 24, 28, 18
# expect: passed
# defence: a host slab is a memfd sealed against shrinking and growing
"""Goes after the shared memory it was handed: every file descriptor it holds is shrunk to
nothing (which would make the harness's mapping fault on its next read) and grown (to make
the harness map more); any success is printed as an escape. Then it computes honestly."""

import os

import torch


def _attack():
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        for size in (0, 1 << 40):
            try:
                before = os.fstat(fd).st_size
                os.ftruncate(fd, size)
                if os.fstat(fd).st_size != before:
                    print("KJ-ESCAPE resized fd", fd, "from", before, "to", size, flush=True)
            except OSError:
                pass


def custom_kernel(data):
    _attack()
    A, B, out = data
    return torch.add(A, B, out=out)
