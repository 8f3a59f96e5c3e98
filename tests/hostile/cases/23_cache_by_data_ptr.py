# threat: 10
# expect: passed, failed
# max_speedup: 5
# defence: fresh inputs for every ranked call, each output checked; a replay is wrong or a miss
"""Caches results keyed by the inputs' data pointers and shape, replaying on a hit."""

_cache = {}


def custom_kernel(data):
    A, B, out = data
    key = (A.data_ptr(), B.data_ptr(), tuple(A.shape))
    if key in _cache:
        out.copy_(_cache[key])
        return out
    out[...] = A + B
    _cache[key] = out.clone()
    return out
