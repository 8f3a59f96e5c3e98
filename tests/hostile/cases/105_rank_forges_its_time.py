# threat: 12, 35
# problem: allreduce
# expect: passed
# max_speedup: 3
# timeout_s: 90
# defence: the harness's clock around each rank's request ranks; its own time is only shown
"""Every rank slows its process's clocks a thousandfold (time.perf_counter and its _ns
twin), so every duration its runner measures, and reports as its own time, comes out tiny;
computes the right answer."""

import time

import torch.distributed as dist

_real, _real_ns = time.perf_counter, time.perf_counter_ns
time.perf_counter = lambda: _real() / 1000
time.perf_counter_ns = lambda: _real_ns() // 1000


def custom_kernel(data):
    out = data.clone()
    dist.all_reduce(out)
    return out
