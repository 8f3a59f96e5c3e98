# threat: 17
# problem: allreduce
# expect: error
# message: rank 1 exited
# timeout_s: 90
# defence: one channel per rank: a closed one ends the grading naming that rank
"""Rank 1 exits with status 0 in its first call, leaving rank 0 in the all-reduce."""

import os

import torch.distributed as dist


def custom_kernel(data):
    if dist.get_rank() == 1:
        os._exit(0)
    out = data.clone()
    dist.all_reduce(out)
    return out
