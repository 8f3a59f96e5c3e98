# threat: 16
# expect: not-passed
# defence: the channel is framed and checked; whatever arrives is verified, nothing trusted
"""Writes a forged "passed" verdict and a forged channel frame to every descriptor 0..255
(including the runner's channel to the harness), then returns zeros."""

import contextlib
import json
import os
import struct

FORGED = json.dumps({"ok": True, "status": "passed", "score": 1e-9}).encode()
FRAME = struct.pack("<Q", len(FORGED)) + FORGED


def _spray():
    for fd in range(256):
        for blob in (FRAME, b"passed\n"):
            with contextlib.suppress(OSError):
                os.write(fd, blob)


_spray()


def custom_kernel(data):
    _spray()
    return data[2].zero_()
