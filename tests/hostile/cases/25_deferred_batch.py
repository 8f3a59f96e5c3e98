# threat: 10, 11, 32
# expect: failed
# defence: each ranked call's output is checked when that call returns, not later
"""Batch-and-skip: each call only queues its inputs and answers for the previous call, so a
timed call does a fraction of the work while the batch is paid for elsewhere."""

_queue = []


def custom_kernel(data):
    A, B, out = data
    if not _queue:
        out[...] = A + B
        _queue.append(data)
        return out
    previous = _queue.pop()
    pA, pB, pout = previous
    pout[...] = pA + pB
    _queue.append(data)
    return out
