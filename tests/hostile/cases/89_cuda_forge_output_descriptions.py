# threat: 16, 9
# device: cuda
# expect: error
# defence: the harness reads only slots and inputs it placed; naming others is an error
"""On a GPU, where inputs and outputs stay in device memory the harness shares: the runner is
patched (through sys.modules, by a decoded name) to describe every output as a result slot
past the last one, hoping the harness reads device memory beyond what it placed."""

import base64
import sys

_staging = sys.modules.get(base64.b64decode("Z3JhZGVyLnN0YWdpbmc=").decode())
if _staging is not None:
    _sets = getattr(_staging, "Se" + "ts")
    _deposit = _sets.deposit

    def _beyond(self, index, output):
        _deposit(self, index, output)
        return {"__kj_" + "slot__": 7}

    setattr(_sets, "dep" + "osit", _beyond)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
