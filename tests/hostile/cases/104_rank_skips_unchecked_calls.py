# threat: 7, 30
# problem: allreduce
# expect: failed
# message: rank 1:
# timeout_s: 90
# defence: fresh inputs for every call, and every rank's output checked by the trusted ranks
"""Rank 1 does its share of the all-reduce on every call (so its peer is right and never
waits), but after the first two calls, the ones a grader might check, hands back the output
it kept from the first instead of its own."""

import torch.distributed as dist

_calls = 0
_kept = None


def custom_kernel(data):
    global _calls, _kept
    _calls += 1
    out = data.clone()
    dist.all_reduce(out)
    if dist.get_rank() != 1:
        return out
    if _kept is None:
        _kept = out
    return out if _calls <= 2 else _kept.clone()
