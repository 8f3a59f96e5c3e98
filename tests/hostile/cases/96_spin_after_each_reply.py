# threat: 36
# problem: matmul
# expect: passed
# max_speedup: 1.5
# defence: the harness's clock is wall time; no CPU-time counter the submission can delay decides
"""Spins a thread for a few milliseconds after each reply, so that the sandbox's CPU-time
counter, charged only at scheduler ticks, has not yet counted a batch's work when the harness
reads it (a grader taking the smaller of wall and CPU time then sees a batch cost nothing)."""

import base64
import sys
import threading
import time

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_runner_cls = getattr(_main, "Run" + "ner", None) if _main is not None else None


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


if _runner_cls is not None:
    _handle = _runner_cls.handle

    def _then_spin(self, request):
        reply = _handle(self, request)
        threading.Thread(target=_spin, args=(0.004,), daemon=True).start()
        return reply

    setattr(_runner_cls, "han" + "dle", _then_spin)


def custom_kernel(data):
    a, b = data
    return a @ b
