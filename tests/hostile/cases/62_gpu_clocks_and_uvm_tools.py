# threat: 22
# device: cuda
# expect: passed
# defence: only nvidia0, nvidiactl and nvidia-uvm are mounted; NVML setters need root outside
"""Tries to lock the GPU's clocks, change its compute mode and open nvidia-uvm-tools."""

import ctypes
import os

try:
    _nvml = ctypes.CDLL("libnvidia-ml.so.1")
    _nvml.nvmlInit_v2()
    device = ctypes.c_void_p()
    _nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(device))
    if getattr(_nvml, "nvmlDeviceSet" + "GpuLockedClocks")(device, 1980, 1980) == 0:
        print("KJ-ESCAPE locked the GPU clocks")
        _nvml.nvmlDeviceResetGpuLockedClocks(device)
    if getattr(_nvml, "nvmlDeviceSet" + "ComputeMode")(device, 0) == 0:
        print("KJ-ESCAPE set the compute mode")
except OSError as exc:
    print("no NVML:", exc)
for path in ("/dev/nvidia-uvm-tools", "/dev/nvidia-caps/nvidia-cap1"):
    try:
        os.close(os.open(path, os.O_RDWR))
        print(f"KJ-ESCAPE opened {path}")
    except OSError as exc:
        print(f"{path}: {exc.strerror}")


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
