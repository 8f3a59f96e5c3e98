"""Measuring a device's two ceilings, copy bandwidth and dense matrix rate, so each case's
speed-of-light fraction and physical floor come from this machine, not a datasheet."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import torch

REPEATS = 10


@dataclass(frozen=True)
class DevicePeaks:
    copy_bytes_per_s: float  # bytes read plus bytes written per second, device to device
    matmul_flops_per_s: float  # dense matrix product: bf16 on CUDA, float32 on the CPU
    matmul_dtype: str
    # The last-level cache (L2 on a GPU): what a kernel writes can still sit there when it
    # ends, so that much of a case's bytes need not have reached memory.
    cache_bytes: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> DevicePeaks:
        return cls(
            copy_bytes_per_s=float(raw["copy_bytes_per_s"]),
            matmul_flops_per_s=float(raw["matmul_flops_per_s"]),
            matmul_dtype=str(raw.get("matmul_dtype", "")),
            cache_bytes=float(raw.get("cache_bytes", 0.0)),
        )

    def floor_s(self, bytes_moved: float, flops: float) -> float:
        """The least time a case can take here: its bytes at full bandwidth or its flops at
        the full matrix rate, whichever is longer."""
        return max(bytes_moved / self.copy_bytes_per_s, flops / self.matmul_flops_per_s)

    def cached_floor_s(self, bytes_moved: float, flops: float) -> float:
        """The floor less what the cache can absorb: the bytes a kernel's writes may leave in
        the cache when it ends are not counted, up to the cache's size and half the bytes
        (a kernel still reads its inputs from memory after a flush)."""
        return self.floor_s(max(bytes_moved - self.cache_bytes, bytes_moved / 2), flops)


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
