"""What lets the harness time a runner's calls on a GPU with its own events (grader/clock.py):
a gate of two flags in device memory both processes map, and an arena the runner's calls
allocate from, which the harness maps too.

The runner queues each call behind a wait on the `go` flag and raises the `done` flag after
it (CUDA stream memory operations); the harness's stream records an event, raises `go`,
waits for `done` and records a second event. Contexts of two processes take turns on a GPU,
so whatever the runner's context does between the two events, on any of its streams, lies
between them. The submission can delay `done` but cannot move the harness's events.

A call's output returned as a new tensor is made in the arena (a torch memory pool whose
segments are carved from a slab the harness created), so the harness reads it where it lies
instead of the runner copying it into a result slot inside the timed window."""

from __future__ import annotations

import ctypes
import time
from collections.abc import Callable
from typing import Any

import torch

from grader.shared import ALIGN, SharedMemoryError, Slab

GATE_BYTES = 4096
FLUSH_MIN_BYTES = 128 << 20
GO, DONE = 0, 256  # byte offsets of the two 32-bit flags in the gate's slab
# What the runner says once it has queued every call of a windows request behind the gate,
# before it waits for them to finish and answers; the harness queues its windows only then
# (or after QUEUED_WAIT_S without it), so that a window holds the call's work on the device
# and not the runner's host launching it.
QUEUED = {"ok": True, "queued": True}
QUEUED_WAIT_S = 1.0
_WAIT_GEQ = 0x0  # CU_STREAM_WAIT_VALUE_GEQ
_WRITE_DEFAULT = 0x0  # a memory barrier before the write: the calls' writes land first


class StreamOps:
    """cuStreamWaitValue32 and cuStreamWriteValue32, which torch does not expose."""

    def __init__(self) -> None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise SharedMemoryError(f"the CUDA driver library cannot be loaded: {exc}") from exc
        self._wait: Any = getattr(lib, "cuStreamWaitValue32_v2", None) or lib.cuStreamWaitValue32
        self._write: Any = getattr(lib, "cuStreamWriteValue32_v2", None) or lib.cuStreamWriteValue32
        for fn in (self._wait, self._write):
            fn.argtypes = [ctypes.c_void_p, ctypes.c_ulonglong, ctypes.c_uint32, ctypes.c_uint]
            fn.restype = ctypes.c_int

    def wait(self, stream: int, pointer: int, value: int) -> None:
        """`stream` goes on once the 32-bit word at `pointer` is at least `value`."""
        status = self._wait(ctypes.c_void_p(stream), pointer, value & 0xFFFFFFFF, _WAIT_GEQ)
        if status:
            raise SharedMemoryError(f"cuStreamWaitValue32 failed with CUDA error {status}")

    def write(self, stream: int, pointer: int, value: int) -> None:
        """Once `stream` reaches it, the word at `pointer` becomes `value`."""
        status = self._write(ctypes.c_void_p(stream), pointer, value & 0xFFFFFFFF, _WRITE_DEFAULT)
        if status:
            raise SharedMemoryError(f"cuStreamWriteValue32 failed with CUDA error {status}")


class Arena:
    """A torch memory pool whose segments are carved from `slab` (first fit; a freed segment
    goes back). A segment the slab cannot hold comes from the driver instead (`cuMemAlloc`),
    so a call never fails for the arena's size: an output made there is copied into its
    result slot as before, which only makes that call slower."""

    _ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
    _FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)

    def __init__(self, slab: Slab) -> None:
        self.slab = slab
        self.base = slab.raw.data_ptr()
        self.nbytes = slab.nbytes
        self.free: list[tuple[int, int]] = [(0, slab.nbytes)]
        self.outside: set[int] = set()  # segments the driver gave when the slab was full
        # Bytes torch holds from this arena (slab and driver), and the most it held at once:
        # the harness sizes the next arena from it (grader/clock.py).
        self.held = 0
        self.peak = 0
        driver = ctypes.CDLL("libcuda.so.1")
        self._mem_alloc: Any = driver.cuMemAlloc_v2
        self._mem_alloc.argtypes = [ctypes.POINTER(ctypes.c_ulonglong), ctypes.c_size_t]
        self._mem_free: Any = driver.cuMemFree_v2
        self._mem_free.argtypes = [ctypes.c_ulonglong]
        # The callbacks must outlive every call torch makes to them: the arena is kept for
        # the runner's life (grader/runner.py).
        self._c_alloc = self._ALLOC(self._alloc)
        self._c_free = self._FREE(self._release)
        alloc = ctypes.cast(self._c_alloc, ctypes.c_void_p).value or 0
        release = ctypes.cast(self._c_free, ctypes.c_void_p).value or 0
        self.pool = torch.cuda.MemPool(torch._C._cuda_customAllocator(alloc, release))

    @staticmethod
    def supported() -> bool:
        """Whether this torch routes a thread's allocations to a pool of its own allocator."""
        return all(
            hasattr(torch._C, name)
            for name in (
                "_cuda_customAllocator",
                "_cuda_beginAllocateCurrentThreadToPool",
                "_cuda_endAllocateToPool",
            )
        ) and hasattr(torch.cuda, "MemPool")

    def _alloc(self, size: int, device: int, stream: Any) -> int:
        offset = take(self.free, size)
        if offset >= 0:
            pointer = self.base + offset
        else:
            driver = ctypes.c_ulonglong(0)
            if self._mem_alloc(ctypes.byref(driver), size) != 0:
                return 0  # torch reports the device out of memory
            pointer = driver.value
            self.outside.add(pointer)
        self.held += _rounded(size)
        self.peak = max(self.peak, self.held)
        return pointer

    def _release(self, pointer: int, size: int, device: int, stream: Any) -> None:
        self.held -= _rounded(size)
        if pointer in self.outside:
            self.outside.discard(pointer)
            self._mem_free(pointer)
        else:
            give_back(self.free, pointer - self.base, size)

    def offset(self, tensor: torch.Tensor) -> int | None:
        """Where `tensor` starts in the arena, if it is a contiguous tensor wholly inside."""
        pointer = tensor.data_ptr()
        offset = pointer - self.base
        if offset < 0 or offset % ALIGN or not tensor.is_contiguous():
            return None
        if offset + tensor.numel() * tensor.element_size() > self.nbytes:
            return None
        return offset


def _rounded(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def take(free: list[tuple[int, int]], size: int) -> int:
    """First fit of `size` bytes in the free list (offset, length), which it updates; -1
    (refused) when nothing fits."""
    size = _rounded(size)
    for index, (offset, length) in enumerate(free):
        if length >= size:
            if length == size:
                free.pop(index)
            else:
                free[index] = (offset + size, length - size)
            return offset
    return -1


def give_back(free: list[tuple[int, int]], offset: int, size: int) -> None:
    """Return a segment to the free list, merged with its neighbours."""
    free.append((offset, _rounded(size)))
    free.sort()
    merged: list[tuple[int, int]] = []
    for start, length in free:
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1] = (merged[-1][0], merged[-1][1] + length)
        else:
            merged.append((start, length))
    free[:] = merged


def copies_alone_s(
    target: torch.Tensor, source: torch.Tensor, flush: torch.Tensor, count: int
) -> list[float]:
    """`count` copies of `source` into `target`, each after `flush` has flushed L2 and each
    alone between two events of this process's stream: their seconds. A window's trusted
    copy is measured against these."""
    alone = []
    for _ in range(count):
        torch.amax(flush)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        target.copy_(source)
        end.record()
        torch.cuda.synchronize()
        alone.append(begin.elapsed_time(end) / 1e3)
    return alone


class Gate:
    """The harness's side: the gate's slab (handed to the runner), the harness's own stream
    the windows are timed on, the buffer that flushes L2 before each window, and the next
    sequence number. One per runner."""

    def __init__(self) -> None:
        from grader import shared

        self.slab = shared.create(GATE_BYTES, "cuda")
        self.slab.raw.zero_()
        torch.cuda.synchronize()
        self.ops = StreamOps()
        self.flags = self.slab.raw.data_ptr()
        self.stream = torch.cuda.Stream()
        self._rescue = torch.cuda.Stream()
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
        # Read, not written: the flush leaves clean lines, as the runner's timer's does.
        self.flush = torch.ones(max(2 * l2, FLUSH_MIN_BYTES), dtype=torch.int8, device="cuda")
        self.next_seq = 1
        self.broken = False

    def enqueue(
        self,
        count: int,
        before: Callable[[int], None] | None = None,
        after: Callable[[], None] | None = None,
    ) -> list[tuple[torch.cuda.Event, torch.cuda.Event]]:
        """`count` windows on the harness's stream, numbered from `next_seq` (which the
        runner is asked for first, grader/runner.py), after the work this process has queued
        so far: before window i, `before(i)` (a set's inputs copied in), then L2 flushed;
        after the last, `after()`. Returns each window's events."""
        if self.broken:
            raise SharedMemoryError("the gate was forced open after a failed window")
        seq = self.next_seq
        self.next_seq += count
        marks = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(count)
        ]
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            for i, (begin, end) in enumerate(marks):
                if before is not None:
                    before(i)
                torch.amax(self.flush)
                begin.record()
                self.ops.write(self.stream.cuda_stream, self.flags + GO, seq + i)
                self.ops.wait(self.stream.cuda_stream, self.flags + DONE, seq + i)
                end.record()
            if after is not None:
                after()
        return marks

    def finish(
        self, marks: list[tuple[torch.cuda.Event, torch.cuda.Event]], deadline: float
    ) -> list[float] | None:
        """Each window's seconds once the harness's stream has passed them all; None when it
        has not by `deadline` (the runner never raised `done`): the gate is then forced open,
        so that this process's stream does not wait for ever, and is not used again."""
        while not self.stream.query():
            if time.monotonic() > deadline:
                self.force_open()
                return None
            time.sleep(0.0005)
        return [begin.elapsed_time(end) / 1e3 for begin, end in marks]

    def force_open(self) -> None:
        self.broken = True
        with torch.cuda.stream(self._rescue):
            # The wait compares cyclically ((int32)(flag - value) >= 0): a value well past
            # every sequence number handed out releases each window still waiting.
            self.ops.write(self._rescue.cuda_stream, self.flags + DONE, self.next_seq + (1 << 30))
        self.stream.synchronize()

    def close(self) -> None:
        if not self.stream.query():
            self.force_open()
        self.slab.close()
