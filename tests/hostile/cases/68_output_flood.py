# threat: 24
# expect: passed
# defence: stdout and stderr are captured on threads and capped at 64 KiB each
"""Floods stdout and stderr with 50 MB each, by print and by raw writes to fds 1 and 2."""

import os
import sys

line = "flood " * 1000 + "\n"
for _ in range(8000):
    sys.stdout.write(line)
    sys.stderr.write(line)
for _ in range(100):
    os.write(1, b"x" * 65536)
    os.write(2, b"y" * 65536)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
