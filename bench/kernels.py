"""The kernels the H200 validation times: each entry builds its inputs and returns the call
to time. Shared by `validate_timing.py` (our protocol) and its Nsight Compute pass."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
Call = Callable[[], Any]


def _solution(problem: str, name: str) -> Callable[[Any], Any]:
    """custom_kernel from problems/<problem>/solutions/<name>.py, imported with the
    problem's own task.py and utils.py on the path."""
    folder = REPO / "problems" / problem
    for path in (str(folder), str(folder.parent)):
        if path not in sys.path:
            sys.path.insert(0, path)
    spec = importlib.util.spec_from_file_location(
        f"kj_{problem}_{name}", folder / "solutions" / f"{name}.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.custom_kernel  # type: ignore[no-any-return]


def _fp16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda", dtype=torch.float16)


def elementwise_copy() -> tuple[Call, float, float]:
    """1 GiB float32 in, 1 GiB out: a copy done by an elementwise kernel (a plain copy_ is a
    memcpy, which Nsight Compute does not list as a kernel)."""
    src = torch.randn(1 << 28, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    return (lambda: torch.neg(src, out=dst)), 2.0 * src.numel() * 4, 0.0


def gemm(n: int) -> Callable[[], tuple[Call, float, float]]:
    def build() -> tuple[Call, float, float]:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        return (lambda: torch.mm(a, b)), 3.0 * n * n * 2, 2.0 * n**3

    return build


def vectoradd(solution: str, size: int) -> Callable[[], tuple[Call, float, float]]:
    def build() -> tuple[Call, float, float]:
        kernel = _solution("vectoradd", solution)
        data = (
            _fp16(size, size),
            _fp16(size, size),
            torch.empty(size, size, device="cuda", dtype=torch.float16),
        )
        return (lambda: kernel(data)), 3.0 * size * size * 2, float(size * size)

    return build


# name -> builder returning (call, bytes moved, flops)
KERNELS: dict[str, Callable[[], tuple[Call, float, float]]] = {
    "copy_1GiB_elementwise": elementwise_copy,
    "gemm_bf16_8192_torch": gemm(8192),
    "gemm_bf16_4096_torch": gemm(4096),
    "vectoradd_8192_triton": vectoradd("triton", 8192),
    "vectoradd_8192_load_inline": vectoradd("cuda_inline", 8192),
    "vectoradd_4096_torch": vectoradd("pytorch", 4096),
    "vectoradd_2048_torch_10us": vectoradd("pytorch", 2048),
    "vectoradd_2048_triton_10us": vectoradd("triton", 2048),
}
