# threat: 24, 27
# device: cuda
# expect: passed, error
# defence: the runner's process tree is killed; the worker checks GPU memory is back to baseline
"""Allocates GPU memory until it fails, keeps it, and answers correctly."""

import torch

held = []
while True:
    try:
        held.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    except RuntimeError:
        break
print("held", len(held), "GiB of GPU memory")


def custom_kernel(data):
    A, B, out = data
    return torch.add(A, B, out=out)
