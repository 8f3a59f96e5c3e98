# threat: 12
# expect: passed, rejected
# max_speedup: 7
# defence: the runner's figure ranks no lower than the harness's clock over fresh batches allows
"""Slows its process's clock (time.perf_counter_ns, reached by computed names) a thousandfold,
so every duration the runner measures comes out tiny; computes the right answer."""

import base64

_clock = __import__(base64.b64decode("dGltZQ==").decode())
_name = "perf_counter" + "_ns"
_real = getattr(_clock, _name)
setattr(_clock, _name, lambda: _real() // 1000)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
