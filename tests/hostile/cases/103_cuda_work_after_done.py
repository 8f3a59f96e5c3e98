# threat: 39, 11
# device: cuda
# problem: matmul
# expect: passed, failed
# max_speedup: 1.25
# defence: a window's end is recorded on the harness's stream, run when the runner's context yields
"""Where the harness times each call in a window of its own (a GPU with KJ_GPU_CLOCK=windows):
patches the runner's window loop (found through sys.modules) so that each call's `done` flag
is raised before the call is queued, hoping the window ends before the work starts and the
work runs between windows, while the harness lands the next inputs."""

import base64
import sys

import torch

_main = sys.modules.get(base64.b64decode("X19tYWluX18=").decode())
_windows_cls = getattr(_main, "Win" + "dows", None) if _main is not None else None
_gate = sys.modules.get("grader." + "gate")
if _windows_cls is not None and _gate is not None:
    _inner = _windows_cls.run

    def _early_done(self, request, call, *rest):
        if call is None or self.ops is None:
            return _inner(self, request, call, *rest)
        seq, count = request["seq"], request["count"]
        self.held.clear()
        stream = torch.cuda.current_stream().cuda_stream
        outputs = []
        with self._allocating():
            for i in range(count):
                self.ops.wait(stream, self.flags + _gate.GO, seq + i)
                self.ops.write(stream, self.flags + _gate.DONE, seq + i)
                outputs.append(call(i))
        for said in rest[:1]:
            said()  # "queued", as the runner says once its calls are
        return outputs

    setattr(_windows_cls, "r" + "un", _early_done)


def custom_kernel(data):
    a, b = data
    return a @ b
