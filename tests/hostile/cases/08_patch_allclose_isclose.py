# threat: 4
# expect: failed
# defence: the comparison runs in the harness process; patches in the runner change nothing there
"""Makes every comparison in its own process say "equal" (names built at run time, so a
static screen cannot see the patch), then does no work."""

import torch

_yes = "all" + "close"
_close = "is" + "close"
setattr(torch, _yes, lambda *args, **kwargs: True)
setattr(torch, _close, lambda a, b, *args, **kwargs: torch.ones(a.shape, dtype=torch.bool))
setattr(torch, "eq" + "ual", lambda *args, **kwargs: True)


def custom_kernel(data):
    return data[2].zero_()
