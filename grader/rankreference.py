"""The trusted side of a multi-rank problem: one process per rank, outside the sandbox,
running the problem's own `generate_input(rank=..., world_size=...)` and
`check_implementation` in a process group of their own (gloo). GPU MODE's multi-rank
references call collectives themselves (the expected output of rank r depends on every
rank's inputs), so the check can only run as a group; these processes hold each rank's
pristine inputs, and the sandbox only ever gets a copy."""

from __future__ import annotations

import argparse
import contextlib
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from grader.protocol import ChannelClosed, ChannelError, ChannelTimeout, recv_message, send_message
from grader.report import Status, Stop, tail

GROUP_TIMEOUT = timedelta(minutes=2)
UNCARRIED = (
    "its reply cannot be sent to the submission's ranks (inputs may hold tensors, numbers, "
    "strings, torch dtypes, objects with attributes, and tuples, lists and dicts of them)"
)
START_TIMEOUT_S = 120.0
EXIT_GRACE_S = 2.0
# Where `python -m grader.rankreference` is found: the folder holding the grader package.
PACKAGE_ROOT = Path(__file__).resolve().parent.parent


def _answer(request: dict[str, Any], module: Any, state: dict[str, Any], rank: int) -> Any:
    """One request's reply in a trusted rank (see ReferenceGroup for the requests)."""
    import torch.distributed as dist

    from grader.check import run_check
    from grader.inputs import clone_data
    from grader.rankinputs import carried

    op = request.get("op")
    if op == "group":
        if state.get("in_group"):
            dist.destroy_process_group()
        world_size = int(request["world_size"])
        state["in_group"] = rank < world_size
        if state["in_group"]:
            dist.init_process_group(
                "gloo",
                init_method=f"file://{request['store']}",
                rank=rank,
                world_size=world_size,
                timeout=GROUP_TIMEOUT,
            )
        return {"ok": True}
    if op == "generate":
        state["data"] = module.generate_input(**request["case"], rank=rank)
        return {"ok": True, "data": carried(state["data"])}
    if op == "check":
        passed, message = run_check(
            module.check_implementation, clone_data(state["data"]), request.get("output")
        )
        return {"ok": True, "passed": passed, "message": message}
    return None


def serve(fd: int, rank: int, folder: str, names: list[str], kind: str) -> None:
    """One trusted rank's loop: the reference imported, then requests until told to stop."""
    import torch

    from grader.devicemap import harness_device_map
    from grader.expected import device_env, import_reference

    torch.set_num_threads(1)
    with device_env(kind), harness_device_map(kind):
        try:
            module = import_reference(Path(folder), names)
        except Exception:
            send_message(fd, {"ok": False, "error": traceback.format_exc()})
            return
        send_message(fd, {"ok": True})
        state: dict[str, Any] = {}
        while True:
            try:
                request = recv_message(fd)
            except ChannelClosed:
                return
            try:
                reply = _answer(request, module, state, rank)
            except Exception:
                reply = {"ok": False, "error": traceback.format_exc()}
            if reply is None:
                return
            try:
                send_message(fd, reply)
            except (TypeError, AttributeError, pickle.PicklingError) as exc:
                # Raised while encoding, before a byte is written: the inputs hold something
                # the channel cannot carry (grader/rankinputs.py says what can).
                send_message(fd, {"ok": False, "error": f"{UNCARRIED}: {exc}"})


class ReferenceGroup:
    """`size` trusted rank processes; `group(w)` makes ranks 0..w-1 a process group."""

    def __init__(self, size: int, folder: Path, names: list[str], kind: str) -> None:
        self.size = size
        self.world_size = 0
        self._stores = tempfile.TemporaryDirectory(prefix="kj-reference-group-")
        self._generation = 0
        self._socks: list[socket.socket] = []
        self._processes: list[subprocess.Popen[bytes]] = []
        env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")])
        )
        for rank in range(size):
            ours, theirs = socket.socketpair()
            argv = [
                sys.executable,
                "-m",
                "grader.rankreference",
                "--fd",
                str(theirs.fileno()),
                "--rank",
                str(rank),
                "--folder",
                str(folder),
                "--names",
                ",".join(names),
                "--device",
                kind,
            ]
            try:
                self._processes.append(subprocess.Popen(argv, pass_fds=(theirs.fileno(),), env=env))
            finally:
                theirs.close()
            self._socks.append(ours)
        self._collect(range(size), time.monotonic() + START_TIMEOUT_S, "import reference.py")

    def _collect(self, ranks: range, deadline: float, what: str) -> list[dict[str, Any]]:
        replies = []
        for rank in ranks:
            try:
                reply = recv_message(self._socks[rank].fileno(), deadline=deadline)
            except ChannelTimeout as exc:
                raise Stop(
                    Status.ERROR, f"the problem's reference did not {what} in time (rank {rank})"
                ) from exc
            except ChannelError as exc:
                raise Stop(
                    Status.ERROR,
                    f"the problem's reference (rank {rank}) exited while asked to {what}",
                ) from exc
            if not isinstance(reply, dict) or not reply.get("ok"):
                error = reply.get("error", "") if isinstance(reply, dict) else ""
                raise Stop(
                    Status.ERROR,
                    f"the problem's reference failed to {what} (rank {rank}):\n" + tail(str(error)),
                )
            replies.append(reply)
        return replies

    def _ask(
        self, requests: list[dict[str, Any]], deadline: float, what: str
    ) -> list[dict[str, Any]]:
        for rank, request in enumerate(requests):
            send_message(self._socks[rank].fileno(), request, deadline=deadline)
        return self._collect(range(len(requests)), deadline, what)

    def group(self, world_size: int, deadline: float) -> None:
        self._generation += 1
        store = f"{self._stores.name}/group-{self._generation}"
        request = {"op": "group", "world_size": world_size, "store": store}
        self._ask([request] * self.size, deadline, "make its process group")
        self.world_size = world_size

    def generate(self, case: dict[str, Any], deadline: float) -> list[Any]:
        """Every rank's inputs for `case` (its arguments, seed and world_size included)."""
        request = {"op": "generate", "case": case}
        replies = self._ask([request] * self.world_size, deadline, "generate inputs")
        return [reply.get("data") for reply in replies]

    def check(self, outputs: list[Any], deadline: float) -> list[tuple[bool, str]]:
        """Each rank's (passed, message) for its output, against its last generated inputs."""
        requests = [{"op": "check", "output": output} for output in outputs]
        replies = self._ask(requests, deadline, "check the outputs")
        return [(bool(reply.get("passed")), str(reply.get("message", ""))) for reply in replies]

    def close(self) -> None:
        for sock in self._socks:
            with contextlib.suppress(OSError):
                sock.close()
        for process in self._processes:
            try:
                process.wait(EXIT_GRACE_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._stores.cleanup()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="grader.rankreference")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--rank", type=int, required=True)
    parser.add_argument("--folder", required=True)
    parser.add_argument("--names", required=True)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    serve(args.fd, args.rank, args.folder, args.names.split(","), args.device)


if __name__ == "__main__":
    main()
