"""Does a persisting-L2 window survive the grader's flush? (threat catalogue line 31)

Times an fp16 add (vectoradd's kernel) with the runner's own timer (grader.timing.Timer,
benchmark mode's protocol: the same inputs every call, an L2 flush before each) four ways:
honestly; with a persisting-L2 carve-out and an access-policy window over input A, set
through the driver as a submission could; over A and B; and over A and B with the carve-out
asked for again in every call (A+B*). Each with the grader's reset of the persisting lines
(and of the carve-out, when there is one) before every timed call turned off and on.

    python3 -m bench.l2_persisting [--sizes 2048,3072,4096] [--budget 2] [--repeats 3]

Prints a table; each median is the middle of `--repeats` timed cases, and the ratio is the
window's median over the honest one at the same setting.
A ratio well under 1 with the reset off and about 1 with it on says the window survives
the flush and the reset closes it."""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
from collections.abc import Callable

import torch

from grader import timing

CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06
CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1
CU_ACCESS_PROPERTY_STREAMING = 1
CU_ACCESS_PROPERTY_PERSISTING = 2
CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE = 108
CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38


class AccessPolicyWindow(ctypes.Structure):
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hitRatio", ctypes.c_float),
        ("hitProp", ctypes.c_int),
        ("missProp", ctypes.c_int),
    ]


class Driver:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")

    def check(self, result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what} failed with CUresult {result}")

    def attribute(self, which: int) -> int:
        value = ctypes.c_int()
        device = ctypes.c_int()
        self.check(self.lib.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
        self.check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), which, device), "attribute")
        return value.value

    def set_persisting_limit(self, nbytes: int) -> None:
        self.check(
            self.lib.cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(nbytes)),
            "cuCtxSetLimit",
        )

    def set_window(self, tensors: list[torch.Tensor], limit: int) -> None:
        """One window over the tensors' span (they are allocated one after another)."""
        start = min(t.data_ptr() for t in tensors)
        end = max(t.data_ptr() + t.numel() * t.element_size() for t in tensors)
        window = AccessPolicyWindow(
            start,
            end - start,
            min(1.0, limit / (end - start)),
            CU_ACCESS_PROPERTY_PERSISTING,
            CU_ACCESS_PROPERTY_STREAMING,
        )
        value = (ctypes.c_byte * 64)()
        ctypes.memmove(value, ctypes.byref(window), ctypes.sizeof(window))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.check(
            self.lib.cuStreamSetAttribute(
                stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(value)
            ),
            "cuStreamSetAttribute",
        )

    def clear_window(self) -> None:
        value = (ctypes.c_byte * 64)()
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.lib.cuStreamSetAttribute(
            stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, ctypes.byref(value)
        )
        self.lib.cuCtxResetPersistingL2Cache()


def median_us(
    data: tuple[torch.Tensor, ...],
    budget_s: float,
    repeats: int,
    before_each_call: Callable[[], None] | None = None,
) -> float:
    def add(d: tuple[torch.Tensor, ...]) -> torch.Tensor:
        if before_each_call is not None:
            before_each_call()
        a, b, out = d
        return torch.add(a, b, out=out)

    medians = []
    for _ in range(repeats):
        samples, _ = timing.Timer("cuda").time_case(add, data, budget_s=budget_s)
        medians.append(statistics.median(samples.seconds) * 1e6)
    return statistics.median(medians)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2048,3072,4096")
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.cuda.init()
    torch.empty(1, device="cuda")
    driver = Driver()
    max_persisting = driver.attribute(CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)
    l2 = driver.attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
    print(
        f"{torch.cuda.get_device_name()}: L2 {l2 / 2**20:.1f} MiB, largest persisting "
        f"carve-out {max_persisting / 2**20:.1f} MiB"
    )
    rows = []
    print(f"{'size':>6} {'window':>8} {'reset':>6} {'median µs':>10} {'ratio':>6}")
    for size in (int(s) for s in args.sizes.split(",")):
        gen = torch.Generator(device="cuda").manual_seed(size)
        a = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
        out = torch.empty_like(a)
        for reset in (False, True):
            timing.RESET_PERSISTING_L2 = reset
            driver.clear_window()
            driver.set_persisting_limit(0)
            honest = median_us((a, b, out), args.budget, args.repeats)
            rows.append({"size": size, "window": "none", "reset": reset, "median_us": honest})
            print(f"{size:>6} {'none':>8} {reset!s:>6} {honest:>10.2f} {1.0:>6.3f}")
            # "every call": the carve-out asked for again inside each call, as a submission
            # would once the grader takes it away before each timed call.
            variants = (("A", [a], False), ("A+B", [a, b], False), ("A+B*", [a, b], True))
            for name, covered, every_call in variants:
                try:
                    driver.set_persisting_limit(max_persisting)
                    driver.set_window(covered, max_persisting)
                except RuntimeError as exc:
                    print(f"{size:>6} {name:>8} {reset!s:>6} not set: {exc}")
                    driver.clear_window()
                    continue
                again = (
                    (lambda: driver.set_persisting_limit(max_persisting)) if every_call else None
                )
                median = median_us((a, b, out), args.budget, args.repeats, again)
                driver.clear_window()
                driver.set_persisting_limit(0)
                ratio = median / honest
                rows.append({"size": size, "window": name, "reset": reset, "median_us": median})
                print(f"{size:>6} {name:>8} {reset!s:>6} {median:>10.2f} {ratio:>6.3f}")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"device": torch.cuda.get_device_name(), "rows": rows}, handle, indent=1)


if __name__ == "__main__":
    main()
