# threat: 24
# expect: error
# defence: a memory cgroup (8 GiB by default) kills the runner; the worker lives on
"""Allocates and touches 12 GiB of host memory (more than the grading limit, less than the test
machine's RAM), then computes the right answer."""

import torch

chunks = []
for _ in range(48):
    try:
        chunks.append(torch.ones(256 << 20, dtype=torch.uint8))
    except RuntimeError as exc:
        print("allocation refused:", exc)
        break
print("held", len(chunks) * 256, "MiB")
chunks.clear()


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
