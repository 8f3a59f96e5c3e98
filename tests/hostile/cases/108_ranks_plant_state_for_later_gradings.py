# threat: 26
# problem: allreduce
# expect: passed
# leftover: kj-leftover-ranks-71c2
# timeout_s: 90
# defence: the ranks share only their own sandbox's tmpfs folders, gone when it ends
"""Every rank plants files for later gradings in its HOME, /tmp, /dev/shm and the Triton
cache; computes the right answer."""

import os

import torch.distributed as dist

MARKER = "kj-leftover-ranks-71c2"
for place in (os.path.expanduser("~"), "/tmp", "/dev/shm", os.environ.get("TRITON_CACHE_DIR", "")):
    if not place:
        continue
    try:
        os.makedirs(place, exist_ok=True)
        with open(os.path.join(place, f"{MARKER}-{os.getpid()}"), "w") as handle:
            handle.write("state for the next grading")
    except OSError:
        pass


def custom_kernel(data):
    out = data.clone()
    dist.all_reduce(out)
    return out
