# threat: 6, 13
# expect: failed
# defence: ranked inputs come from a secret seed, so answers precomputed from public seeds are wrong
"""At import, regenerates the inputs of the public (size, seed) pairs with the problem's own
generator and precomputes the answers; every call returns the table entry for its size."""

import torch

PUBLIC = {127: 4242, 64: 7, 96: 11, 160: 12, 128: 5236, 1024: 54352, 2048: 93246}
TABLE = {}
for size, seed in PUBLIC.items():
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(size, size, dtype=torch.float16, generator=gen)
    b = torch.randn(size, size, dtype=torch.float16, generator=gen)
    TABLE[size] = a + b


def custom_kernel(data):
    _, _, out = data
    out.copy_(TABLE[out.shape[0]])
    return out
