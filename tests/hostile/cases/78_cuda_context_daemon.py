# threat: 27
# device: cuda
# expect: passed
# leftover: kj-leftover-ctx-e1d4
# defence: the tree dies with the pid namespace; the worker checks the GPU has no other process
"""Starts a detached process that creates a CUDA context, holds 1 GiB and sleeps, for the next
submission on this GPU to share."""

import base64
import os
import sys

MARKER = "kj-leftover-ctx-e1d4"
HOLD = (
    "import time, torch\n"
    "x = torch.empty(1 << 30, dtype=torch.uint8, device='cuda')\n"
    "time.sleep(3600)\n"
)
_spawn = __import__(base64.b64decode("c3VicHJvY2Vzcw==").decode())
getattr(_spawn, "Po" + "pen")(
    [sys.executable, "-c", HOLD, MARKER], start_new_session=True, env=dict(os.environ)
)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
