"""Length-prefixed messages between harness and runner over pipes: 8-byte big-endian length,
then a `torch.save` blob read back with `weights_only=True`, so only plain tensors,
containers and primitives can cross (no tensor subclasses, no arbitrary objects)."""

from __future__ import annotations

import io
import os
import select
import time
from typing import Any

import torch

HEADER_BYTES = 8
MAX_MESSAGE_BYTES = 4 << 30
_CHUNK = 1 << 20


class ChannelError(Exception):
    """The other side broke the protocol."""


class ChannelClosed(ChannelError):
    """The other side closed its end (it exited, or closed the fd)."""


class ChannelTimeout(ChannelError):
    """The deadline passed before the message was through."""


def encode(message: Any) -> bytes:
    buffer = io.BytesIO()
    torch.save(message, buffer)
    return buffer.getvalue()


def decode(blob: bytes) -> Any:
    try:
        return torch.load(io.BytesIO(blob), weights_only=True, map_location="cpu")
    except Exception as exc:
        raise ChannelError(f"unreadable message: {type(exc).__name__}: {exc}") from exc


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
    blob = encode(message)
    if len(blob) > MAX_MESSAGE_BYTES:
        raise ChannelError(f"message of {len(blob)} bytes exceeds {MAX_MESSAGE_BYTES}")
    if deadline is not None:
        os.set_blocking(fd, False)
    view = memoryview(len(blob).to_bytes(HEADER_BYTES, "big") + blob)
    while view:
        _wait(fd, True, deadline)
        try:
            written = os.write(fd, view[:_CHUNK])
        except BlockingIOError:
            continue
        except BrokenPipeError as exc:
            raise ChannelClosed("the other side closed the channel") from exc
        view = view[written:]


def _read_exact(fd: int, count: int, deadline: float | None) -> bytes:
    parts: list[bytes] = []
    remaining = count
    while remaining:
        _wait(fd, False, deadline)
        try:
            chunk = os.read(fd, min(remaining, _CHUNK))
        except BlockingIOError:
            continue
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def recv_message(
    fd: int, *, deadline: float | None = None, max_bytes: int = MAX_MESSAGE_BYTES
) -> Any:
    """Read one message, refusing any larger than `max_bytes`."""
    if deadline is not None:
        os.set_blocking(fd, False)
    length = int.from_bytes(_read_exact(fd, HEADER_BYTES, deadline), "big")
    if length > max_bytes:
        raise ChannelError(f"message of {length} bytes exceeds the limit of {max_bytes}")
    return decode(_read_exact(fd, length, deadline))
