# threat: 13, 11, 37
# problem: matmul
# expect: passed, rejected, failed
# max_speedup: 7
# defence: own-clock batches copy their sets in inside the timed span: early work is timed
"""Keeps the input views it is handed (they live in the slab the harness writes each set
into) and runs a thread that watches them: when new inputs land, it computes the product at
once, outside any timed call, and the timed call hands back what the thread made. The product
is the honest solution's bf16 matmul, so any speed-up over it would be work hidden from the
clock."""

import threading
import time

_watched = {}
_ready = {}
_lock = threading.Lock()


def _fingerprint(A, B):
    return (float(A[0, :8].float().sum()), float(B[:8, 0].float().sum()))


def _watch():
    while True:
        with _lock:
            items = list(_watched.items())
        for key, (A, B) in items:
            mark = _fingerprint(A, B)
            if _ready.get(key, (None,))[0] != mark:
                _ready[key] = (mark, A @ B)
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
