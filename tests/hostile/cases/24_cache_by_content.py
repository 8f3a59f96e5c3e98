# threat: 10, 14
# expect: passed
# max_speedup: 5
# defence: every ranked call gets a fresh input set, so a content-keyed cache never hits
"""Caches results keyed by a fingerprint of the inputs' content and replays on a hit."""

_cache = {}


def custom_kernel(data):
    A, B, out = data
    key = (tuple(A.shape), A.view(-1)[:16].tolist().__repr__(), B.view(-1)[:16].tolist().__repr__())
    if key in _cache:
        out.copy_(_cache[key])
        return out
    out[...] = A + B
    _cache[key] = out.clone()
    return out
