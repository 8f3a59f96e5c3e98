"""Which device the grader runs on, and its name as a queue-friendly type ("h200", "cpu")."""

from __future__ import annotations

import functools
import platform
import re
from dataclasses import dataclass
from typing import Any

from grader.report import Fingerprint

_VENDOR_WORDS = {"nvidia", "geforce", "tesla", "quadro"}
_SERIES_WORDS = {"rtx", "gtx"}


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cpu" | "cuda"
    device_type: str  # "cpu" | "h200" | "h100" | "a100" | ...
    name: str

    def report_fields(self) -> dict[str, Any]:
        """The device as a grading's and a validation's report name it."""
        return {"device": self.kind, "device_type": self.device_type, "device_name": self.name}


def device_type_from_name(name: str) -> str:
    """'NVIDIA H200' -> 'h200', 'NVIDIA A100-SXM4-80GB' -> 'a100', 'NVIDIA GeForce RTX 4090'
    -> 'rtx4090'; anything else becomes a lowercase slug."""
    words = [w for w in re.split(r"[\s\-_/]+", name.lower()) if w and w not in _VENDOR_WORDS]
    if not words:
        return "unknown"
    first = words[0]
    if first in _SERIES_WORDS and len(words) > 1:
        first += words[1]
    return re.sub(r"[^a-z0-9]", "", first) or "unknown"


def detect_device(requested: str | None = None) -> DeviceInfo:
    """`requested` is None (CUDA if available, else CPU), "cpu" or "cuda"."""
    import torch  # here, not at import: the API names device types without torch

    if requested not in (None, "cpu", "cuda"):
        raise ValueError(f"unknown device {requested!r}: use 'cpu' or 'cuda'")
    if requested == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but CUDA is not available on this machine")
    if requested == "cpu" or (requested is None and not torch.cuda.is_available()):
        return DeviceInfo(kind="cpu", device_type="cpu", name=platform.processor() or "cpu")
    name = torch.cuda.get_device_name(torch.cuda.current_device())
    return DeviceInfo(kind="cuda", device_type=device_type_from_name(name), name=name)


@functools.cache
def fingerprint(info: DeviceInfo) -> Fingerprint:
    """This machine's fingerprint for reports graded on ``info`` (read once per process)."""
    import torch

    triton: str | None
    try:
        import triton as triton_module

        triton = str(triton_module.__version__)
    except ImportError:
        triton = None
    if info.kind != "cuda":
        return Fingerprint(device_name=cpu_model(), torch=str(torch.__version__), triton=triton)
    properties = torch.cuda.get_device_properties(torch.cuda.current_device())
    uuid = getattr(properties, "uuid", None)
    return Fingerprint(
        device_name=info.name,
        torch=str(torch.__version__),
        gpu_uuid=f"GPU-{uuid}" if uuid is not None else None,
        driver=driver_version(),
        cuda=torch.version.cuda,
        triton=triton,
    )


def cpu_model() -> str:
    """The CPU's model as Linux names it, else what the platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def driver_version() -> str | None:
    """The NVIDIA driver's version through NVML, where pynvml is installed (grader/hygiene.py
    reads the GPUs' state the same way); None elsewhere."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
    except pynvml.NVMLError:
        return None
    return version.decode() if isinstance(version, bytes) else str(version)
