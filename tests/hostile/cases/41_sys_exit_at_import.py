# threat: 17
# expect: error
# defence: the runner must answer on its channel; an exit with status 0 is an error, not a pass
"""Exits with status 0 at import, by a computed name."""

import base64

getattr(__import__(base64.b64decode("c3lz").decode()), "ex" + "it")(0)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
