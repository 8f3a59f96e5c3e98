"""The GPUs of a worker that owns several, leased to its gradings: a grading of k GPUs holds k
that no other grading of the worker holds, its own pool process's GPU among them, from before
its work starts until it ends or its process dies. One small file under the worker's run
folder, read and written under a file lock, is the whole state; no process of another worker
reads it (workers on one host own disjoint GPUs, as ever).

A request is granted in order behind any earlier one of several GPUs: the GPUs that free up go
to the first grading of several GPUs waiting, so gradings of one GPU never starve it. A
grading of one GPU waits only for its own GPU, and goes ahead of earlier waiters of one GPU
whose GPUs are still held."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STATE_FILE = "gpus.json"
LOCK_FILE = "gpus.lock"
POLL_S = 0.05


def owned_gpus(count: int, visible: str | None) -> tuple[str, ...]:
    """The GPUs a worker started with `--gpus count` owns: the `count` that
    CUDA_VISIBLE_DEVICES (`visible`) names, or where it is unset the host's first `count`
    (indices in PCI bus order). A ValueError says what does not match."""
    if count < 1:
        raise ValueError(f"a worker owns at least one GPU, not {count}")
    if visible is None:
        return tuple(str(index) for index in range(count))
    named = tuple(part.strip() for part in visible.split(",") if part.strip())
    if len(named) != count or len(set(named)) != count:
        raise ValueError(
            f"--gpus {count}, but CUDA_VISIBLE_DEVICES names {len(set(named))} distinct GPUs "
            f"({visible!r}): name exactly the GPUs this worker owns"
        )
    return named


def _identity(pid: int) -> str | None:
    """A process as the lease names it: its pid and start time (a pid the system gave again
    to another process is not the same holder); None once it has exited."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    except OSError:
        return f"{pid}"
    # The fields after the command's name (which may hold spaces), start time the 20th.
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{pid}:{fields[19]}"


def _alive(holder: str) -> bool:
    return _identity(int(holder.split(":", 1)[0])) == holder


@dataclass(frozen=True)
class GpuLease:
    """The lease of one worker's `gpus` (as CUDA_VISIBLE_DEVICES names them), kept in
    `folder`, which the worker makes before its pool forks."""

    folder: Path
    gpus: tuple[str, ...]

    @contextmanager
    def hold(self, count: int, own: str | None = None) -> Iterator[tuple[str, ...]]:
        """Wait for `count` GPUs, `own` (the pool process's GPU) among them, and hold them
        for the block: the GPUs in the worker's order."""
        held = self.acquire(count, own)
        try:
            yield held
        finally:
            self.release()

    def acquire(self, count: int, own: str | None = None) -> tuple[str, ...]:
        """`hold`'s wait, for this process (which holds nothing yet)."""
        if not 1 <= count <= len(self.gpus):
            raise ValueError(
                f"a grading of {count} GPUs cannot be held by a worker of {len(self.gpus)}"
            )
        if own is not None and own not in self.gpus:
            raise ValueError(f"GPU {own!r} is not one of this worker's ({', '.join(self.gpus)})")
        me = _identity(os.getpid()) or str(os.getpid())
        while True:
            with self._state() as state:
                granted = _grant(state, self.gpus, me, count, own)
                if granted is not None:
                    state["held"][me] = list(granted)
                    state["waiting"] = [w for w in state["waiting"] if w["who"] != me]
                    return granted
                if all(w["who"] != me for w in state["waiting"]):
                    state["waiting"].append({"who": me, "count": count, "own": own})
            time.sleep(POLL_S)

    def release(self) -> None:
        """What this process holds or waits for goes back."""
        me = _identity(os.getpid()) or str(os.getpid())
        with self._state() as state:
            state["held"].pop(me, None)
            state["waiting"] = [w for w in state["waiting"] if w["who"] != me]

    def holders(self) -> dict[str, tuple[str, ...]]:
        """Who holds which GPUs now (processes that died left theirs)."""
        with self._state() as state:
            return {who: tuple(gpus) for who, gpus in state["held"].items()}

    @contextmanager
    def _state(self) -> Iterator[dict[str, Any]]:
        """The lease's state under its lock, written back after the block; the holders and
        waiters that died are dropped as it is read."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / LOCK_FILE, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            path = self.folder / STATE_FILE
            try:
                state = json.loads(path.read_text()) if path.exists() else {}
            except ValueError:
                state = {}
            state = {
                "held": {w: g for w, g in state.get("held", {}).items() if _alive(w)},
                "waiting": [w for w in state.get("waiting", []) if _alive(w["who"])],
            }
            yield state
            scratch = path.with_suffix(".tmp")
            scratch.write_text(json.dumps(state))
            scratch.replace(path)


def _grant(
    state: dict[str, Any], gpus: Sequence[str], me: str, count: int, own: str | None
) -> tuple[str, ...] | None:
    """The GPUs `me` gets now, or None while it must wait: none behind an earlier waiter of
    several GPUs; never an earlier waiter's own GPU; its own first, then the lowest free."""
    earlier = []
    for waiter in state["waiting"]:
        if waiter["who"] == me:
            break
        earlier.append(waiter)
    if any(waiter["count"] > 1 for waiter in earlier):
        return None
    taken = {gpu for held in state["held"].values() for gpu in held}
    spoken_for = {waiter["own"] for waiter in earlier if waiter["own"] is not None}
    if own is not None and (own in taken or own in spoken_for):
        return None
    others = [g for g in gpus if g != own and g not in taken and g not in spoken_for]
    chosen = ([own] if own is not None else []) + others[: count - (own is not None)]
    if len(chosen) < count:
        return None
    return tuple(g for g in gpus if g in chosen)
