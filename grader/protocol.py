"""Messages between harness and runner over their socket. A message is its skeleton (the
tree of containers and primitives, each tensor replaced by a small descriptor), written as
JSON (or, where JSON cannot carry it, with `torch.save`, read back with `weights_only=True`),
then each tensor's raw bytes. Only plain tensors of known dtypes, containers and primitives
can cross (no tensor subclasses, no arbitrary objects), and the bytes of large inputs are
not copied through a serializer.

    message := length(8) skeleton { length(8) tensor-bytes }*

A shared slab's file descriptor travels beside a message, as one marker byte carrying it
(`send_fd`, `recv_fd`); nothing else crosses the socket but messages."""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import socket
import time
from typing import Any

import torch

from grader.trees import is_tensor, map_tree

HEADER_BYTES = 8
MAX_MESSAGE_BYTES = 4 << 30
_CHUNK = 1 << 20
_TENSOR = "__kj_tensor__"
DTYPES = {
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float16, torch.bfloat16, torch.float32, torch.float64,
        torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
        torch.complex64, torch.complex128,
        *(getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)),
    )
}  # fmt: skip


class ChannelError(Exception):
    """The other side broke the protocol."""


class ChannelClosed(ChannelError):
    """The other side closed its end (it exited, or closed the fd)."""


class ChannelTimeout(ChannelError):
    """The deadline passed before the message was through."""


def _split(message: Any, tensors: list[torch.Tensor]) -> Any:
    """The skeleton of `message`, collecting its tensors (as contiguous CPU tensors)."""

    def describe(tensor: torch.Tensor) -> dict[str, Any]:
        tensors.append(tensor.detach().to("cpu").contiguous())
        return {_TENSOR: len(tensors) - 1, "dtype": str(tensor.dtype).removeprefix("torch."),
                "shape": list(tensor.shape)}  # fmt: skip

    return map_tree(message, is_tensor, describe)


def _raw(tensor: torch.Tensor) -> memoryview:
    if tensor.numel() == 0:
        return memoryview(b"")
    return tensor.reshape(-1).view(torch.uint8).numpy().data.cast("B")


_JSON, _TORCH = b"J", b"T"
_TUPLE = "__kj_tuple__"


def _as_json(node: Any) -> Any:
    """The skeleton in JSON's terms (tuples tagged), or raise TypeError where JSON would not
    bring it back as it was (keys that are not strings, objects of other types)."""
    if node is None or isinstance(node, bool | int | float | str):
        return node
    if isinstance(node, tuple):
        return {_TUPLE: [_as_json(x) for x in node]}
    if isinstance(node, list):
        return [_as_json(x) for x in node]
    if isinstance(node, dict) and all(isinstance(k, str) and k != _TUPLE for k in node):
        return {k: _as_json(v) for k, v in node.items()}
    raise TypeError(type(node).__name__)


def _from_json(node: dict[str, Any]) -> Any:
    if set(node) == {_TUPLE} and isinstance(node[_TUPLE], list):
        return tuple(node[_TUPLE])
    return node


def encode(message: Any) -> tuple[bytes, list[memoryview]]:
    """The skeleton as JSON where it can be (a small message then costs microseconds, not the
    tenth of a millisecond torch's serializer takes), else through torch.save."""
    tensors: list[torch.Tensor] = []
    skeleton = _split(message, tensors)
    try:
        blob = _JSON + json.dumps(_as_json(skeleton), allow_nan=True).encode()
    except (TypeError, ValueError, RecursionError):
        buffer = io.BytesIO()
        torch.save(skeleton, buffer)
        blob = _TORCH + buffer.getvalue()
    return blob, [_raw(tensor) for tensor in tensors]


def decode(blob: bytes) -> Any:
    try:
        if blob[:1] == _JSON:
            return json.loads(blob[1:], object_hook=_from_json)
        if blob[:1] == _TORCH:
            return torch.load(io.BytesIO(blob[1:]), weights_only=True, map_location="cpu")
    except Exception as exc:
        raise ChannelError(f"unreadable message: {type(exc).__name__}: {exc}") from exc
    raise ChannelError("unreadable message: unknown encoding")


def _is_descriptor(node: Any) -> bool:
    return isinstance(node, dict) and _TENSOR in node


def _descriptor(node: dict[str, Any]) -> tuple[torch.dtype, list[int]]:
    dtype = DTYPES.get(str(node.get("dtype")))
    shape = node.get("shape")
    if (
        dtype is None
        or not isinstance(shape, list)
        or not all(isinstance(n, int) and n >= 0 for n in shape)
    ):
        raise ChannelError("malformed tensor descriptor")
    return dtype, shape


def _join(node: Any, next_tensor: Any) -> Any:
    """Put the tensors back into the skeleton, in the order they were sent."""
    return map_tree(node, _is_descriptor, lambda leaf: next_tensor(*_descriptor(leaf)))


def _wait(fd: int, for_write: bool, deadline: float | None) -> None:
    if deadline is None:
        return
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ChannelTimeout("deadline passed")
    readers, writers = ([], [fd]) if for_write else ([fd], [])
    ready = select.select(readers, writers, [], remaining)
    if not any(ready):
        raise ChannelTimeout("deadline passed")


def send_message(fd: int, message: Any, *, deadline: float | None = None) -> None:
    """Write one message; with a deadline the fd must be non-blocking (we set it)."""
    skeleton, raws = encode(message)
    total = len(skeleton) + sum(len(raw) for raw in raws)
    if total > MAX_MESSAGE_BYTES:
        raise ChannelError(f"message of {total} bytes exceeds {MAX_MESSAGE_BYTES}")
    if deadline is not None:
        os.set_blocking(fd, False)
    _write_all(fd, memoryview(len(skeleton).to_bytes(HEADER_BYTES, "big") + skeleton), deadline)
    for raw in raws:
        _write_all(fd, memoryview(len(raw).to_bytes(HEADER_BYTES, "big")), deadline)
        _write_all(fd, raw, deadline)


def _write_all(fd: int, view: memoryview, deadline: float | None) -> None:
    while view:
        _wait(fd, True, deadline)
        try:
            written = os.write(fd, view[:_CHUNK])
        except BlockingIOError:
            continue
        except BrokenPipeError as exc:
            raise ChannelClosed("the other side closed the channel") from exc
        view = view[written:]


def _read_exact(fd: int, count: int, deadline: float | None) -> bytearray:
    buffer = bytearray(count)
    view = memoryview(buffer)
    done = 0
    while done < count:
        _wait(fd, False, deadline)
        try:
            got = os.readv(fd, [view[done : done + _CHUNK]])
        except BlockingIOError:
            continue
        if not got:
            raise ChannelClosed("the other side closed the channel")
        done += got
    return buffer


def _read_length(fd: int, deadline: float | None, budget: int) -> int:
    length = int.from_bytes(_read_exact(fd, HEADER_BYTES, deadline), "big")
    if length > budget:
        raise ChannelError(f"message exceeds the limit of {budget} bytes")
    return length


def recv_message(
    fd: int, *, deadline: float | None = None, max_bytes: int = MAX_MESSAGE_BYTES
) -> Any:
    """Read one message, refusing any larger than `max_bytes` in all."""
    if deadline is not None:
        os.set_blocking(fd, False)
    budget = max_bytes
    length = _read_length(fd, deadline, budget)
    budget -= length
    skeleton = decode(bytes(_read_exact(fd, length, deadline)))

    def next_tensor(dtype: torch.dtype, shape: list[int]) -> torch.Tensor:
        nonlocal budget
        size = _read_length(fd, deadline, budget)
        budget -= size
        numel = 1
        for n in shape:
            numel *= n
        if size != numel * dtype.itemsize:
            raise ChannelError("a tensor's bytes do not match its shape and dtype")
        if size == 0:
            return torch.empty(shape, dtype=dtype)
        raw = torch.frombuffer(_read_exact(fd, size, deadline), dtype=torch.uint8)
        return raw.view(dtype).reshape(shape)

    return _join(skeleton, next_tensor)


_FD_MARKER = b"F"


def send_fd(sock: socket.socket, fd: int, *, deadline: float | None = None) -> None:
    """Pass a copy of file descriptor `fd` to the other end."""
    _wait(sock.fileno(), True, deadline)
    try:
        socket.send_fds(sock, [_FD_MARKER], [fd])
    except (BrokenPipeError, ConnectionResetError) as exc:
        raise ChannelClosed("the other side closed the channel") from exc


def recv_fd(sock: socket.socket, *, deadline: float | None = None) -> int:
    """The file descriptor the other end passed with `send_fd`."""
    _wait(sock.fileno(), False, deadline)
    marker, fds, _, _ = socket.recv_fds(sock, len(_FD_MARKER), 1)
    if not marker:
        raise ChannelClosed("the other side closed the channel")
    if marker != _FD_MARKER or len(fds) != 1:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        raise ChannelError("expected one file descriptor")
    return fds[0]
