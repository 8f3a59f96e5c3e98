"""Whether the harness can read a sandboxed runner's output where the runner left it, in its
own device memory, instead of the runner copying it into a result slot inside the timed span
(docs/security.md, "What is left to trust"): the runner exports a tensor of its own with
CUDA's legacy IPC (cuIpcGetMemHandle) and the harness opens it (cuIpcOpenMemHandle), across
the sandbox's namespaces.

    python -m bench.output_transport_probe          # on a GPU host, bubblewrap at $KJ_BWRAP

Prints one JSON line: whether the handle was made, opened, and read back right, and how long
opening it took."""

from __future__ import annotations

import ctypes
import json
import time

import torch

from grader.report import PhaseClock
from grader.session import RunnerSession
from grader.staging import Layout

# The submission: fills a tensor of its own with a pattern, exports the allocation that holds
# it, and returns the handle, the tensor's offset in it and its size as bytes.
EXPORTER = r"""
import ctypes
import torch

_driver = ctypes.CDLL("libcuda.so.1")
_keep = []


def custom_kernel(data):
    (probe,) = data
    pattern = torch.arange(1 << 20, dtype=torch.int32, device="cuda") * 7 + 3
    _keep.append(pattern)
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    status = _driver.cuMemGetAddressRange_v2(
        ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(pattern.data_ptr())
    )
    handle = (ctypes.c_byte * 64)()
    status = status or _driver.cuIpcGetMemHandle(handle, base)
    offset = pattern.data_ptr() - base.value
    torch.cuda.synchronize()
    head = bytes(handle) + offset.to_bytes(8, "little") + int(status).to_bytes(8, "little")
    return torch.tensor(list(head), dtype=torch.uint8, device="cuda")
"""


def main() -> None:
    driver = ctypes.CDLL("libcuda.so.1")
    torch.cuda.init()
    result: dict[str, object] = {"what": "output transport probe", "legacy_ipc": None}
    session = RunnerSession("cuda")
    try:
        session.load({}, EXPORTER, deadline=time.monotonic() + 120, clock=PhaseClock({}))
        data = (torch.zeros(1, dtype=torch.uint8, device="cuda"),)
        layout = Layout.of(data, torch.zeros(80, dtype=torch.uint8, device="cuda"))
        slab_id, sets = session.stage("case", layout, 1)
        sets.write(0, data, set())
        torch.cuda.synchronize()
        reply = session.request({"op": "run", "slab": slab_id, "set": 0}).reply
        head = bytes(sets.output(0, reply.get("output")).cpu().tolist())
        handle, offset = head[:64], int.from_bytes(head[64:72], "little")
        made = int.from_bytes(head[72:80], "little")
        result["runner_status"] = made
        pointer = ctypes.c_uint64()
        started = time.perf_counter()
        status = driver.cuIpcOpenMemHandle_v2(
            ctypes.byref(pointer), (ctypes.c_byte * 64).from_buffer_copy(handle), 1
        )
        result["open_s"] = time.perf_counter() - started
        result["open_status"] = status
        if status == 0:
            read = torch.empty(1 << 20, dtype=torch.int32, device="cuda")
            copied = driver.cuMemcpy(
                ctypes.c_uint64(read.data_ptr()),
                ctypes.c_uint64(pointer.value + offset),
                ctypes.c_size_t(read.numel() * 4),
            )
            torch.cuda.synchronize()
            expected = torch.arange(1 << 20, dtype=torch.int32, device="cuda") * 7 + 3
            result["copy_status"] = copied
            result["legacy_ipc"] = bool(copied == 0 and torch.equal(read, expected))
            driver.cuIpcCloseMemHandle(pointer)
    finally:
        session.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
