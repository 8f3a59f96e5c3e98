# threat: 13, 11, 37
# device: cuda
# problem: matmul
# expect: passed, rejected, failed
# max_speedup: 3.5
# defence: own-clock batches copy their sets in inside the timed span: early work is timed
"""On a GPU: keeps the input views it is handed (device memory the harness writes each set
into) and runs a thread that computes the product on a stream of its own as soon as new
inputs land, outside any timed call; the timed call hands back what the thread made."""

import threading
import time

import torch

_watched = {}
_ready = {}
_lock = threading.Lock()


def _fingerprint(A, B):
    return (float(A[0, :8].float().sum()), float(B[:8, 0].float().sum()))


def _watch():
    stream = torch.cuda.Stream()
    while True:
        with _lock:
            items = list(_watched.items())
        for key, (A, B) in items:
            with torch.cuda.stream(stream):
                mark = _fingerprint(A, B)
                if _ready.get(key, (None,))[0] != mark:
                    product = A @ B
                    stream.synchronize()
                    _ready[key] = (mark, product)
        time.sleep(0.0001)


threading.Thread(target=_watch, daemon=True).start()


def custom_kernel(data):
    A, B = data
    key = (A.data_ptr(), B.data_ptr())
    with _lock:
        _watched[key] = (A, B)
    held = _ready.get(key)
    if held is not None and held[0] == _fingerprint(A, B):
        return held[1]
    return A @ B
