"""Problems written for CUDA on a CPU worker: GPU MODE's references create their inputs with
`device="cuda"` and `torch.Generator(device="cuda")`. In the trusted harness of a CPU
worker those name the CPU instead, so such a problem grades unchanged (its inputs are then
drawn by the CPU's generator: the same seed gives other numbers than on a GPU)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import torch
from torch.overrides import TorchFunctionMode


def _is_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":", 1)[0] == "cuda"


def _mapped(value: Any) -> Any:
    return torch.device("cpu") if _is_cuda(value) else value


class _CudaAsCpu(TorchFunctionMode):
    """Every `device=` a torch function is given, and the target of `Tensor.to` and
    `Tensor.cuda`, that names CUDA names the CPU."""

    def __torch_function__(
        self,
        func: Callable[..., Any],
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _mapped(kwargs["device"])
        if func is torch.Tensor.cuda:
            return args[0]
        if func is torch.Tensor.to:
            args = tuple(_mapped(arg) for arg in args)
        return func(*args, **kwargs)


@contextmanager
def cuda_as_cpu() -> Iterator[None]:
    """For the harness process of a CPU worker only: it changes `torch.Generator` and
    `torch.cuda.synchronize` for the whole process while it lasts."""
    generator, synchronize = torch.Generator, torch.cuda.synchronize

    class CpuGenerator(generator):  # type: ignore[misc,valid-type]
        """A subclass, not a function: torch's own modules use torch.Generator in types."""

        def __new__(cls, device: Any = "cpu") -> Any:
            return generator.__new__(cls, device=_mapped(device))  # type: ignore[call-arg]

        def __init__(self, device: Any = "cpu") -> None:
            pass

    def no_device_to_wait_for(device: Any = None) -> None:
        return None

    torch.Generator = CpuGenerator  # type: ignore[misc]
    torch.cuda.synchronize = no_device_to_wait_for
    try:
        with _CudaAsCpu():
            yield
    finally:
        torch.Generator = generator  # type: ignore[misc]
        torch.cuda.synchronize = synchronize


def harness_device_map(kind: str) -> AbstractContextManager[None]:
    """What the trusted harness of a worker of this device kind runs the reference under:
    ``cuda_as_cpu`` on a CPU worker, nothing on a GPU one."""
    return cuda_as_cpu() if kind == "cpu" else nullcontext()
