# threat: 38
# mode: profile
# expect: rejected
# message: malformed
# defence: a profile's figures are read as finite numbers in range; anything else is rejected
"""Rewrites the runner's profile reply so that its figures are integers of 400 digits and NaN."""

import base64
import sys

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None
if _runner_cls is not None:
    _handle = _runner_cls.handle

    def _huge(self, request):
        reply = _handle(self, request)
        profile = reply.get("profile")
        if isinstance(profile, dict):
            profile["wall_us_per_call"] = 10**400
            for row in profile.get("rows", []):
                for key in list(row):
                    if key not in ("name", "device_type", "count"):
                        row[key] = float("nan")
        return reply

    setattr(_runner_cls, "han" + "dle", _huge)


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
