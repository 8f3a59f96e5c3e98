"""The ranks of a multi-rank grading, inside one sandbox: a launcher starts one process per
rank, each on its own channel to the harness. A rank imports the submission, joins the
process group (gloo over the sandbox's own loopback, made once per world size, never per
case), and calls `custom_kernel` on the inputs each call request carries; in profile mode,
a profile request's calls are run under torch.profiler (grader/profiling.py's, as a single
device's runner does) and the rank sends back its own table.

Nothing here is trusted: a rank can change anything in its own process and talk to its
peers, so the harness times every call on its own clock and checks every rank's output
with the trusted reference (grader/rankharness.py). Usage:
    python -m grader.rankrunner --channel-fds A,B,... --device cpu        (the launcher)
    python -m grader.rankrunner --channel-fds A --rank R --device cpu     (one rank)
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from grader.profiling import profile_calls
from grader.protocol import ChannelClosed, recv_message
from grader.rankinputs import rebuilt
from grader.runner import answer_calls, leave, load_submission, plain_output, tell

# gloo's own limit on a collective that waits for a peer; the harness's limits are shorter
# and end the grading first, so this only keeps an orphaned rank from waiting for ever.
GROUP_TIMEOUT = timedelta(minutes=10)
# Each world size's group rendezvous in its own file of the sandbox's private /tmp.
GROUP_FILE = "/tmp/kj-rank-group-{world_size}-{generation}"


class Rank:
    """One rank's state: its kernel and its group."""

    def __init__(self, rank: int, kernel: Callable[[Any], Any], device: str) -> None:
        self.rank = rank
        self.kernel = kernel
        self.device = device
        self.in_group = False
        self.generation = 0

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "group":
            return self._group(int(request["world_size"]))
        if op == "call":
            data = rebuilt(request.get("data"))
            started = time.perf_counter()
            output = plain_output(self.kernel(data))
            own_s = time.perf_counter() - started
            return {"ok": True, "output": output, "own_s": own_s}
        if op == "profile":
            # Every rank of the case gets one at once: the same calls on each, so the
            # collectives in them meet.
            data = rebuilt(request.get("data"))
            return {"ok": True, "profile": profile_calls(self.kernel, data, self.device)}
        if op == "ping":
            return {"ok": True}
        return {"ok": False, "error": f"unknown request {op!r}"}

    def _group(self, world_size: int) -> dict[str, Any]:
        """Leave the group of the last world size and join this one's, where this rank is in
        it (ranks past the world size sit the cases out)."""
        if self.in_group:
            dist.destroy_process_group()
            self.in_group = False
        self.generation += 1
        if self.rank < world_size:
            path = GROUP_FILE.format(world_size=world_size, generation=self.generation)
            dist.init_process_group(
                "gloo",
                init_method=f"file://{path}",
                rank=self.rank,
                world_size=world_size,
                timeout=GROUP_TIMEOUT,
            )
            self.in_group = True
        return {"ok": True}


def serve_rank(sock: socket.socket, rank: int, device: str) -> None:
    if not tell(sock, {"ok": True, "ready": True}):
        return
    while True:  # the harness's pings (its round trips to this rank), then `load`
        try:
            request = recv_message(sock.fileno())
        except ChannelClosed:
            return
        if not isinstance(request, dict) or request.get("op") != "ping":
            break
        if not tell(sock, {"ok": True}):
            return
    if not isinstance(request, dict) or request.get("op") != "load":
        return
    kernel = load_submission(sock, device)
    if kernel is not None:
        answer_calls(sock, device, Rank(rank, kernel, device).handle)


def launch(fds: list[int], device: str) -> None:
    """Start one process per rank, each holding only its own channel, and wait for them all;
    the harness learns of a rank's end from its channel, not from here."""
    ranks = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "grader.rankrunner",
                "--channel-fds",
                str(fd),
                "--rank",
                str(rank),
                "--device",
                device,
            ],
            pass_fds=(fd,),
        )
        for rank, fd in enumerate(fds)
    ]
    for fd in fds:
        os.close(fd)
    for process in ranks:
        process.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="grader.rankrunner")
    parser.add_argument("--channel-fds", required=True)
    parser.add_argument("--rank", type=int)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = parser.parse_args(argv)
    fds = [int(fd) for fd in args.channel_fds.split(",")]
    if args.rank is None:
        launch(fds, args.device)
        return
    torch.set_num_threads(1)
    serve_rank(socket.socket(fileno=fds[0]), args.rank, args.device)
    leave()


if __name__ == "__main__":
    main()
