# threat: 25
# problem: allreduce
# expect: timeout
# message: rank 1 did not finish
# timeout_s: 45
# defence: each rank's answer is awaited on the harness's clock; the silent ones are named
"""Rank 1 takes part in the all-reduce (so rank 0 answers) and then never returns."""

import time

import torch.distributed as dist


def custom_kernel(data):
    out = data.clone()
    dist.all_reduce(out)
    if dist.get_rank() == 1:
        while True:
            time.sleep(1)
    return out
