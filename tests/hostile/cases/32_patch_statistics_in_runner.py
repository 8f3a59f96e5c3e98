# threat: 12
# expect: passed
# max_speedup: 7
# defence: the runner's figure ranks no lower than the harness's clock over fresh batches allows
"""Patches statistics and math in its own process so medians and means come out tiny."""

import base64

_stats = __import__(base64.b64decode("c3RhdGlzdGljcw==").decode())
_math = __import__(base64.b64decode("bWF0aA==").decode())
for _name in ("median", "fmean", "mean"):
    setattr(_stats, _name, lambda values, *args, **kwargs: 1e-12)
setattr(_math, "e" + "xp", lambda x: 1e-12)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
