"""The harness's side of a multi-rank grading's sandbox: one sandbox holding every rank
(grader/rankrunner.py), one channel per rank, and requests sent to all ranks at once whose
answers are read on the harness's own clock. Each rank's outcome is kept apart, so a verdict
can name the rank that hung, died or raised."""

from __future__ import annotations

import contextlib
import select
import shutil
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import torch

import sandbox
from grader.confine import runner_env, runner_folders, runner_isolation
from grader.protocol import ChannelClosed, ChannelError, ChannelTimeout, recv_message, send_message
from grader.report import LOAD_FAILED, Status, Stop, tail
from grader.session import SKIP_IN_RUNNER

# Once one rank has raised or gone, the others get this long to answer before the verdict:
# a peer blocked in a collective with the failed rank never will, and must not be blamed.
SETTLE_S = 2.0
# Round trips to each rank before the submission loads, empty and carrying a tensor of
# CALIBRATION_BYTES: what a request costs beyond its call, and what each byte of its inputs
# adds (the fastest of each, so never more than an honest call pays).
CALIBRATION_PINGS = 10
CALIBRATION_BYTES = 1 << 20


class RankState(StrEnum):
    """How one rank ended a request."""

    ANSWERED = "answered"
    RAISED = "raised"  # it replied with an error (its custom_kernel raised, or its import)
    EXITED = "exited"  # its channel closed: the rank's process ended
    SILENT = "silent"  # no answer before the deadline


@dataclass(frozen=True)
class RankOutcome:
    rank: int
    state: RankState
    reply: dict[str, Any]
    # The harness's clock from sending the request to the whole answer's arrival.
    wall_s: float = 0.0


def _ranks(outcomes: list[RankOutcome], state: RankState) -> list[int]:
    return [o.rank for o in outcomes if o.state == state]


def _named(ranks: list[int]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + ", ".join(str(r) for r in ranks)


def verdict(outcomes: list[RankOutcome], what: str) -> Stop | None:
    """None when every rank answered; else the grading's end, naming the ranks at fault: a
    rank that exited before one that raised (a peer left waiting in a collective raises
    once its partner is gone), the rank that raised first before those that raised after it
    (their error is the collective their peer left), and either before one that fell silent
    (a peer blocked behind a dead or failed rank is a victim, not a cause)."""
    exited = _ranks(outcomes, RankState.EXITED)
    if exited:
        return Stop(Status.ERROR, f"{_named(exited)} exited during {what}")
    # In the order their answers came (sorted() is stable: rank order where none was timed).
    raised = sorted((o for o in outcomes if o.state == RankState.RAISED), key=lambda o: o.wall_s)
    if raised:
        first = raised[0]
        error = str(first.reply.get("error", "unknown error"))
        if first.reply.get("phase") == "import":
            return Stop(Status.ERROR, f"{LOAD_FAILED} (rank {first.rank}):\n" + tail(error))
        later = [o.rank for o in raised[1:]]
        after = f" ({_named(later)} raised after it)" if later else ""
        return Stop(
            Status.ERROR,
            f"custom_kernel raised on rank {first.rank} during {what}{after}:\n" + tail(error),
        )
    silent = _ranks(outcomes, RankState.SILENT)
    if silent:
        answered = _ranks(outcomes, RankState.ANSWERED)
        others = f" ({_named(answered)} did)" if answered else ""
        return Stop(
            Status.TIMEOUT, f"{_named(silent)} did not finish {what} within its time limit{others}"
        )
    return None


class RankSession:
    """The sandbox of one multi-rank grading, `size` ranks, from start to end."""

    def __init__(
        self,
        size: int,
        kind: str,
        *,
        isolate: bool,
        memory_bytes: int | None,
        gpus: Sequence[str] | None = None,
    ) -> None:
        """`gpus`: on a GPU, the ones the sandbox holds, one per rank (None: those
        CUDA_VISIBLE_DEVICES names)."""
        self.size = size
        self.kind = kind
        self.deadline = time.monotonic() + 3600.0
        self.root, self.work, lib = runner_folders("kj-ranks-")
        pairs = [socket.socketpair() for _ in range(size)]
        self._socks = [ours for ours, _ in pairs]
        theirs = [other.fileno() for _, other in pairs]
        argv = [
            sys.executable, "-m", "grader.rankrunner",
            "--channel-fds", ",".join(str(fd) for fd in theirs), "--device", kind,
        ]  # fmt: skip
        try:
            # Inside: a sandbox that cannot be set up (a GPU it cannot map) leaves nothing open.
            isolation = (
                runner_isolation(self.work, kind, memory_bytes, gpus=gpus) if isolate else None
            )
            env = runner_env(self.work, lib, kind, isolated=isolation is not None)
            # gloo binds to the sandbox's own loopback (the hostname there resolves to nothing).
            env["GLOO_SOCKET_IFNAME"] = "lo"
            self.child = sandbox.start(
                argv, cwd=self.work, env=env, pass_fds=tuple(theirs), isolation=isolation
            )
        except BaseException:
            for sock in self._socks:
                sock.close()
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        finally:
            for _, other in pairs:
                other.close()
        self.round_trip_s = [0.0] * size
        self.input_s_per_byte = [0.0] * size

    def hand_over_s(self, rank: int, input_bytes: int) -> float:
        """What a call request to `rank` carrying `input_bytes` of inputs costs beyond the
        call, as measured before the submission loaded."""
        return self.round_trip_s[rank] + input_bytes * self.input_s_per_byte[rank]

    def load(self, files: dict[str, str], code: str, deadline: float) -> None:
        """Every rank ready, its round trip measured, then the submission imported by each."""
        self.deadline = deadline
        for name, text in files.items():
            if name != "submission.py" and name not in SKIP_IN_RUNNER:
                (self.work / name).write_text(text)
        (self.work / "submission.py").write_text(code)
        self._expect(self.gather(range(self.size)), "the ranks' start")
        self.round_trip_s = self._fastest({"op": "ping"})
        payload = torch.zeros(CALIBRATION_BYTES, dtype=torch.uint8)
        carrying = self._fastest({"op": "ping", "data": payload})
        self.input_s_per_byte = [
            max(0.0, full - empty) / CALIBRATION_BYTES
            for full, empty in zip(carrying, self.round_trip_s, strict=True)
        ]
        self._expect(self.exchange({"op": "load"}), "loading submission.py")

    def _fastest(self, message: dict[str, Any]) -> list[float]:
        """Each rank's fastest answer to `message` over CALIBRATION_PINGS exchanges."""
        times: list[list[float]] = [[] for _ in range(self.size)]
        for _ in range(CALIBRATION_PINGS):
            for outcome in self._expect(self.exchange(message), "the ranks' start"):
                times[outcome.rank].append(outcome.wall_s)
        return [min(each) for each in times]

    def _expect(self, outcomes: list[RankOutcome], what: str) -> list[RankOutcome]:
        stop = verdict(outcomes, what)
        if stop is not None:
            raise stop
        return outcomes

    def exchange(
        self, message: dict[str, Any] | list[dict[str, Any]], ranks: range | None = None
    ) -> list[RankOutcome]:
        """Send `message` (or each rank its own) to `ranks` (all by default), back to back,
        and read every answer; each rank's wall time runs from its own send."""
        chosen = range(self.size) if ranks is None else ranks
        sent: dict[int, float] = {}
        for rank in chosen:
            one = message[rank] if isinstance(message, list) else message
            sent[rank] = time.monotonic()
            try:
                send_message(self._socks[rank].fileno(), one, deadline=self.deadline)
            except ChannelTimeout as exc:
                raise Stop(Status.TIMEOUT, f"rank {rank} stopped reading its requests") from exc
            except (ChannelClosed, ConnectionResetError, BrokenPipeError):
                sent[rank] = -1.0  # gone: gather() finds its channel closed
        return self.gather(chosen, sent)

    def gather(self, ranks: range, sent: dict[int, float] | None = None) -> list[RankOutcome]:
        """Each rank's answer, in rank order. A message is read whole once its first bytes
        arrive; once a rank has failed, the rest get SETTLE_S more."""
        waiting = {self._socks[rank].fileno(): rank for rank in ranks}
        found: dict[int, RankOutcome] = {}
        deadline = self.deadline
        while waiting:
            left = deadline - time.monotonic()
            ready = select.select(list(waiting), [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                break
            for fd in ready:
                rank = waiting.pop(fd)
                outcome = self._read(rank, fd, (sent or {}).get(rank))
                found[rank] = outcome
                if outcome.state != RankState.ANSWERED:
                    deadline = min(deadline, time.monotonic() + SETTLE_S)
        for rank in waiting.values():
            found[rank] = RankOutcome(rank, RankState.SILENT, {})
        return [found[rank] for rank in ranks]

    def _read(self, rank: int, fd: int, sent: float | None) -> RankOutcome:
        try:
            reply = recv_message(fd, deadline=self.deadline)
        except ChannelTimeout:
            return RankOutcome(rank, RankState.SILENT, {})
        except ChannelClosed:
            return RankOutcome(rank, RankState.EXITED, {})
        except ChannelError as exc:
            bad = {"error": f"rank {rank} sent a malformed message: {exc}"}
            return RankOutcome(rank, RankState.RAISED, bad)
        wall = time.monotonic() - sent if sent is not None and sent >= 0 else 0.0
        if not isinstance(reply, dict) or not reply.get("ok"):
            shown = reply if isinstance(reply, dict) else {"error": "a malformed message"}
            return RankOutcome(rank, RankState.RAISED, shown, wall)
        return RankOutcome(rank, RankState.ANSWERED, reply, wall)

    def close(self) -> sandbox.ProcessResult:
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.close()
        self.child.wait(max(0.0, min(2.0, self.deadline - time.monotonic())))
        result = self.child.result()
        shutil.rmtree(self.root, ignore_errors=True)
        return result
