"""Memory the harness shares with its runner: slabs the harness allocates and hands over as
file descriptors, so a case's inputs and the runner's outputs cross without being copied
through a pipe. On the CPU a slab is a sealed memfd that both processes map; on CUDA it is
physical device memory from the driver's virtual memory management (``cuMemCreate``),
exported as a POSIX file descriptor and mapped into each process's own address space.

The runner reaches exactly the slabs it is handed: each is an allocation of its own, never
a block of the harness's caching allocator that other tensors share, and the harness never
reads a slab at an offset the runner chose."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import mmap
import os
from dataclasses import dataclass
from typing import Any

import torch

ALIGN = 512  # bytes between the start of one tensor in a slab and the next

# The driver API's numbers (cuda.h).
_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102
_CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103


class SharedMemoryError(RuntimeError):
    """A slab could not be made, exported or mapped."""


class DeviceMemoryExhausted(SharedMemoryError):
    """The driver had no GPU memory left for a slab."""


# The driver's CUDA_ERROR_OUT_OF_MEMORY.
CUDA_ERROR_OUT_OF_MEMORY = 2


def aligned(nbytes: int, alignment: int = ALIGN) -> int:
    return -(-nbytes // alignment) * alignment


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [
        ("compressionType", ctypes.c_ubyte),
        ("gpuDirectRDMACapable", ctypes.c_ubyte),
        ("usage", ctypes.c_ushort),
        ("reserved", ctypes.c_ubyte * 4),
    ]


class _AllocationProp(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location", _Location),
        ("win32HandleMetaData", ctypes.c_void_p),
        ("allocFlags", _AllocFlags),
    ]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class _Driver:
    """The few driver calls a CUDA slab needs, through ctypes (torch does not expose them)."""

    def __init__(self) -> None:
        try:
            self._lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise SharedMemoryError(f"the CUDA driver library cannot be loaded: {exc}") from exc

    def __call__(self, name: str, *args: Any) -> None:
        result = getattr(self._lib, name)(*args)
        if result == CUDA_ERROR_OUT_OF_MEMORY:
            raise DeviceMemoryExhausted(f"{name} found the GPU's memory exhausted")
        if result != 0:
            raise SharedMemoryError(f"{name} failed with CUDA error {result}")

    def device(self) -> int:
        """The device of this thread's current context (torch's, once it has made one)."""
        torch.cuda.init()
        torch.cuda.current_blas_handle()  # makes the primary context current on this thread
        found = ctypes.c_int()
        self("cuCtxGetDevice", ctypes.byref(found))
        return found.value

    def attribute(self, attribute: int, device: int) -> int:
        value = ctypes.c_int()
        self("cuDeviceGetAttribute", ctypes.byref(value), attribute, device)
        return value.value

    def prop(self, device: int) -> _AllocationProp:
        prop = _AllocationProp()
        prop.type = _CU_MEM_ALLOCATION_TYPE_PINNED
        prop.requestedHandleTypes = _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
        prop.location.type = _CU_MEM_LOCATION_TYPE_DEVICE
        prop.location.id = device
        return prop

    def granularity(self, device: int) -> int:
        found = ctypes.c_size_t()
        prop = self.prop(device)
        self(
            "cuMemGetAllocationGranularity",
            ctypes.byref(found),
            ctypes.byref(prop),
            _CU_MEM_ALLOC_GRANULARITY_MINIMUM,
        )
        return int(found.value)


_driver: _Driver | None = None


def _cuda() -> _Driver:
    global _driver
    if _driver is None:
        _driver = _Driver()
    return _driver


def unsupported(device: str) -> str:
    """'' when slabs work on this device, else why not (the harness then says so)."""
    if device == "cpu":
        return "" if hasattr(os, "memfd_create") else "this system has no memfd_create"
    try:
        driver = _cuda()
        ordinal = driver.device()
        if not driver.attribute(_CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, ordinal):
            return "the GPU's driver has no virtual memory management"
        if not driver.attribute(
            _CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, ordinal
        ):
            return "the GPU's driver cannot export memory as a file descriptor"
    except SharedMemoryError as exc:
        return str(exc)
    return ""


class _CudaArray:
    """Device memory described for torch.as_tensor, which then wraps it without a copy."""

    def __init__(self, pointer: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (pointer, False),
            "version": 3,
            "strides": None,
            "stream": None,
        }


@dataclass
class Slab:
    """One shared allocation: `fd` hands it to the other process; `raw` is every byte of it
    as a uint8 tensor on `device`. Tensors are placed in it by offset (`view`)."""

    device: str
    nbytes: int
    fd: int
    raw: torch.Tensor
    _release: Any = None

    def view(
        self, offset: int, dtype: torch.dtype, shape: list[int] | tuple[int, ...]
    ) -> torch.Tensor:
        """The tensor of `dtype` and `shape` at byte `offset`; refuses one that does not fit."""
        count = 1
        for n in shape:
            count *= int(n)
        size = count * dtype.itemsize
        if offset < 0 or offset % ALIGN or offset + size > self.nbytes:
            raise SharedMemoryError(f"a tensor of {size} bytes at {offset} is outside the slab")
        return self.raw[offset : offset + size].view(dtype).view(tuple(int(n) for n in shape))

    def close(self) -> None:
        """Give the memory back (this process's part of it). No view may be used afterwards."""
        release, self._release = self._release, None
        self.raw = torch.empty(0, dtype=torch.uint8)
        if release is not None:
            release()
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def create(nbytes: int, device: str) -> Slab:
    """A new slab of at least `nbytes` for the harness, with a file descriptor to hand over."""
    if device == "cpu":
        return _create_host(nbytes)  # a new memfd reads as zeros
    slab = _map_device(nbytes, device, fd=None)
    # Device memory the driver hands out again may still hold what an earlier grading of this
    # process left there (another submission's inputs or outputs): cleared before any runner
    # maps it.
    slab.raw.zero_()
    torch.cuda.synchronize()
    return slab


def attach(fd: int, nbytes: int, device: str) -> Slab:
    """The runner's mapping of a slab the harness handed over as `fd` (this takes `fd`)."""
    if device == "cpu":
        return _map_host(fd, nbytes, sealed=True)
    return _map_device(nbytes, device, fd=fd)


def _create_host(nbytes: int) -> Slab:
    size = aligned(max(nbytes, 1), mmap.PAGESIZE)
    fd = os.memfd_create("kj-slab", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        # The runner can then neither shrink it (the harness's mapping would fault) nor grow it.
        fcntl.fcntl(
            fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        )
        return _map_host(fd, size, sealed=False)
    except BaseException:
        os.close(fd)
        raise


def _map_host(fd: int, nbytes: int, sealed: bool) -> Slab:
    try:
        if sealed:
            seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
            if not seals & fcntl.F_SEAL_SHRINK:
                raise SharedMemoryError("a host slab must come sealed against shrinking")
        if os.fstat(fd).st_size < nbytes:
            raise SharedMemoryError("the slab is smaller than described")
        mapping = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    except (OSError, ValueError) as exc:
        raise SharedMemoryError(f"a host slab cannot be mapped: {exc}") from exc
    raw = torch.frombuffer(mapping, dtype=torch.uint8)

    def release() -> None:
        # Torch's views keep the mapping alive until they are collected; close it only then.
        with contextlib.suppress(BufferError):
            mapping.close()

    return Slab("cpu", nbytes, fd, raw, release)


def _map_device(nbytes: int, device: str, fd: int | None) -> Slab:
    driver = _cuda()
    ordinal = driver.device()
    size = aligned(max(nbytes, 1), driver.granularity(ordinal))
    handle = ctypes.c_ulonglong()
    pointer = ctypes.c_ulonglong()
    undo: list[Any] = []

    def release() -> None:
        while undo:
            with contextlib.suppress(SharedMemoryError):
                undo.pop()()

    try:
        if fd is None:
            prop = driver.prop(ordinal)
            driver("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(prop),
                   ctypes.c_ulonglong(0))  # fmt: skip
            undo.append(lambda: driver("cuMemRelease", handle))
            exported = ctypes.c_int(-1)
            driver("cuMemExportToShareableHandle", ctypes.byref(exported), handle,
                   _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, ctypes.c_ulonglong(0))  # fmt: skip
            fd = exported.value
        else:
            driver("cuMemImportFromShareableHandle", ctypes.byref(handle),
                   ctypes.c_void_p(fd), _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)  # fmt: skip
            undo.append(lambda: driver("cuMemRelease", handle))
        driver("cuMemAddressReserve", ctypes.byref(pointer), ctypes.c_size_t(size),
               ctypes.c_size_t(0), ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))  # fmt: skip
        undo.append(lambda: driver("cuMemAddressFree", pointer, ctypes.c_size_t(size)))
        driver("cuMemMap", pointer, ctypes.c_size_t(size), ctypes.c_size_t(0), handle,
               ctypes.c_ulonglong(0))  # fmt: skip
        undo.append(lambda: driver("cuMemUnmap", pointer, ctypes.c_size_t(size)))
        access = _AccessDesc()
        access.location.type = _CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = ordinal
        access.flags = _CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        driver("cuMemSetAccess", pointer, ctypes.c_size_t(size), ctypes.byref(access),
               ctypes.c_size_t(1))  # fmt: skip
        raw = torch.as_tensor(_CudaArray(pointer.value, size), device=device)
    except BaseException:
        release()
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    if raw.data_ptr() != pointer.value:
        release()
        raise SharedMemoryError("torch copied the slab instead of wrapping it")
    # The runner's handle was imported from the fd; the fd itself is no longer needed there.
    return Slab(device, size, fd, raw, release)
