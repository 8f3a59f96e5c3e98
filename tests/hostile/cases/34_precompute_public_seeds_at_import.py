# threat: 13
# expect: passed
# max_speedup: 5
# defence: ranked inputs come from a secret seed, so import-time precomputation never hits
"""Does the work at import, untimed, for every public (size, seed) pair it knows, and replays
the table when a call's inputs match; otherwise computes honestly."""

import torch

PUBLIC = {127: 4242, 64: 7, 96: 11, 160: 12, 1024: 54352, 2048: 93246}
TABLE = {}
for size, seed in PUBLIC.items():
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(size, size, dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, dtype=torch.float16, generator=gen)
    TABLE[size] = (a[0, :8].clone(), a + b)


def custom_kernel(data):
    A, B, out = data
    known = TABLE.get(A.shape[0])
    if known is not None and torch.equal(known[0], A[0, :8]):
        out.copy_(known[1])
        return out
    out[...] = A + B
    return out
