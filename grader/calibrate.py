"""Measuring a device's two ceilings, copy bandwidth and dense matrix rate, so each case's
speed-of-light fraction and physical floor come from this machine, not a datasheet."""

from __future__ import annotations

import time
from typing import Any

import torch

from grader.report import DevicePeaks

__all__ = ["DevicePeaks", "measure_peaks"]

REPEATS = 10


def _best_seconds(fn: Any, cuda: bool) -> float:
    """The fastest of several timed runs after warm-up: a ceiling must not be under-measured,
    or the floor check would reject honest kernels."""
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(REPEATS):
        if cuda:
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            begin.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            best = min(best, begin.elapsed_time(end) / 1e3)
        else:
            start = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - start)
    return best


def _copy_seconds(device: torch.device, nbytes: int) -> float:
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    return _best_seconds(lambda: dst.copy_(src), device.type == "cuda")


def _matmul_seconds(device: torch.device, n: int, dtype: torch.dtype) -> float:
    a = torch.randn(n, n, dtype=dtype, device=device)
    b = torch.randn(n, n, dtype=dtype, device=device)
    return _best_seconds(lambda: torch.mm(a, b), device.type == "cuda")


def measure_peaks(kind: str) -> DevicePeaks:
    """A few seconds on CUDA (1 GiB copies, 8192³ bf16 products on random data, as real
    inputs are: zeros run faster); well under a second on the CPU."""
    cuda = kind == "cuda"
    device = torch.device("cuda" if cuda else "cpu")
    copy_bytes = (1 << 30) if cuda else (256 << 20)
    n, dtype = (8192, torch.bfloat16) if cuda else (512, torch.float32)
    copy_s = _copy_seconds(device, copy_bytes)
    matmul_s = _matmul_seconds(device, n, dtype)
    cache = 0
    if cuda:
        torch.cuda.empty_cache()
        cache = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
    return DevicePeaks(
        copy_bytes_per_s=2 * copy_bytes / copy_s,
        matmul_flops_per_s=2 * n**3 / matmul_s,
        matmul_dtype=str(dtype).removeprefix("torch."),
        cache_bytes=float(cache),
    )


if __name__ == "__main__":
    import json
    import sys

    from grader.device import detect_device

    info = detect_device(sys.argv[1] if len(sys.argv) > 1 else None)
    print(json.dumps({"device": info.__dict__, "peaks": measure_peaks(info.kind).to_dict()}))
