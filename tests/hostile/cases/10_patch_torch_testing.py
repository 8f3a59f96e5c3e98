# threat: 4
# expect: failed
# defence: checks are the harness's; the problem's utils imported in the runner are not used
"""Neuters torch.testing and the problem's own comparison helpers as imported in this process,
reached through sys.modules by computed names."""

import base64
import sys

import torch

_testing = getattr(torch, "test" + "ing")
setattr(_testing, "assert_" + "close", lambda *args, **kwargs: None)
setattr(_testing, "assert_" + "allclose", lambda *args, **kwargs: None)
_utils = sys.modules.get(base64.b64decode("dXRpbHM=").decode())  # the problem's utils
if _utils is None:
    _utils = __import__(base64.b64decode("dXRpbHM=").decode())
setattr(_utils, "count_mis" + "matches", lambda *args, **kwargs: "")


def custom_kernel(data):
    return data[2].zero_()
