"""A problem whose reference the service does not trust (a problem an author added for their
own use, not an organizer): its `generate_input`, `ref_kernel` and `check_implementation`
run in a sandbox of their own, beside the runner's and like it (bubblewrap, seccomp, a cgroup
capping its memory, no network, nothing of the host's but read-only system paths and
Python), never in the harness's process, which holds the worker's own state and whose
report is the verdict. The harness asks it for each input set, expected output and check
over the same channel as the runner's, and reads its replies as it reads a runner's: only
tensors, numbers, strings and containers of them cross (grader/protocol.py). Each grading
starts it afresh and kills it, with everything it started, when the grading ends.

That process is grader/refserver.py; `SandboxedProblemSide` is the harness's side of it."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import sandbox
from grader.confine import runner_env, runner_folders, runner_isolation
from grader.expected import ProblemSide
from grader.inputs import clone_data, iter_tensors, poison, seeded_case, written_paths
from grader.plausibility import label
from grader.protocol import ChannelError, ChannelTimeout, recv_message, send_message
from grader.report import Status, Stop, tail
from grader.trees import is_tensor, map_tree

# How long the reference's process may take to start and import the problem's files.
START_S = 120.0
EXIT_GRACE_S = 2.0
# What a reply the sandbox could not send says.
UNCARRIED = (
    "returned what cannot leave its sandbox (only tensors, numbers, strings and tuples, "
    "lists and dicts of them can)"
)


class _Reference(SimpleNamespace):
    """The reference as the harness's code calls it (`side.module.generate_input(...)`, its
    `ref_kernel` and `check_implementation`), each call answered from the sandbox."""


class SandboxedProblemSide(ProblemSide):
    """ProblemSide whose reference answers from its own sandbox. `deadline` (monotonic
    seconds) bounds every request; the grading sets it to its own limit."""

    isolate = True
    memory_bytes: int | None = None
    deadline = float("inf")

    def load(self, folder: Path) -> None:
        with self.clock.phase("reference"):
            self._start(folder)
            names = [Path(name).stem for name in self.problem.files if name.endswith(".py")]
            reply = self._ask({"op": "load", "names": names}, "reference.py failed to import")
            if "missing" in reply:
                raise Stop(
                    Status.ERROR, f"the problem's reference.py does not define {reply['missing']}"
                )
        self.reference = _Reference(  # type: ignore[assignment]
            generate_input=self._generate_input,
            ref_kernel=self._ref_kernel,
            check_implementation=self._check,
        )

    def _start(self, folder: Path) -> None:
        self.root, work, lib = runner_folders("kj-reference-")
        for source in folder.iterdir():
            if source.is_file():
                shutil.copyfile(source, work / source.name)
        mine, theirs = socket.socketpair()
        self._sock: socket.socket | None = mine
        argv = [sys.executable, "-m", "grader.refserver", "--channel-fd", str(theirs.fileno()),
                "--device", self.kind]  # fmt: skip
        isolation = runner_isolation(work, self.kind, self.memory_bytes) if self.isolate else None
        try:
            self.child: sandbox.Child | None = sandbox.start(
                argv,
                cwd=work,
                env=runner_env(work, lib, self.kind, isolated=isolation is not None),
                pass_fds=(theirs.fileno(),),
                isolation=isolation,
            )
        except BaseException:
            mine.close()
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        finally:
            theirs.close()
        self._fd = mine.fileno()
        os.set_blocking(self._fd, False)
        self._receive(min(self.deadline, time.monotonic() + START_S), "did not start")

    def close(self) -> None:
        """End the reference's process and everything it started; remove its folder."""
        sock = getattr(self, "_sock", None)
        if sock is None:
            return
        sock.close()
        if self.child is not None:
            self.child.wait(EXIT_GRACE_S)
            self.child.result()
            self.child = None
        shutil.rmtree(self.root, ignore_errors=True)
        self._sock = None

    def _receive(self, deadline: float, what: str) -> dict[str, Any]:
        try:
            reply = recv_message(self._fd, deadline=deadline)
        except ChannelTimeout as exc:
            raise Stop(
                Status.TIMEOUT, f"the problem's reference {what}: it did not answer in time"
            ) from exc
        except ChannelError as exc:
            detail = ""
            if self.child is not None:
                self.child.wait(EXIT_GRACE_S)
                stderr = self.child.result().stderr
                self.child = None
                detail = ":\n" + tail(stderr) if stderr.strip() else ""
            raise Stop(Status.ERROR, f"the problem's reference {what}: {exc}{detail}") from exc
        if not isinstance(reply, dict):
            raise Stop(Status.ERROR, f"the problem's reference {what}: malformed reply")
        return reply

    def _ask(self, request: dict[str, Any], what: str) -> dict[str, Any]:
        """The reply to `request`, or Stop naming `what` failed and why."""
        if self.child is None:
            raise Stop(Status.ERROR, f"the problem's reference {what}: its process ended")
        try:
            send_message(self._fd, request, deadline=self.deadline)
        except ChannelTimeout as exc:
            raise Stop(Status.TIMEOUT, f"the problem's reference {what}: no answer") from exc
        except ChannelError as exc:
            raise Stop(Status.ERROR, f"the problem's reference {what}: {exc}") from exc
        reply = self._receive(self.deadline, what)
        if "error" in reply:
            raise Stop(Status.ERROR, f"the problem's {what}:\n{reply['error']}")
        if "uncarried" in reply:
            raise Stop(Status.ERROR, f"the problem's {what.split()[0]} {UNCARRIED}")
        return reply

    def _on_device(self, tree: Any) -> Any:
        return map_tree(tree, is_tensor, lambda tensor: tensor.to(self.kind))

    def generate(self, case: dict[str, Any], repeat: int = 0, seed: int | None = None) -> Any:
        with self.clock.phase("inputs"):
            kwargs = seeded_case(case, self.ranked_seed if seed is None else seed, repeat=repeat)
            return self._inputs(kwargs, f"generate_input failed for case {label(case)}")

    def expected_and_written(
        self, case: dict[str, Any], data: Any, flops: list[float] | None = None
    ) -> tuple[Any, set[str]]:
        with self.clock.phase("reference"):
            request = {"op": "reference", "data": data, "count_flops": flops is not None}
            reply = self._ask(request, f"ref_kernel failed for case {label(case)}")
            if flops is not None and isinstance(reply.get("flops"), float):
                flops.append(reply["flops"])
            expected = self._on_device(reply.get("expected"))
            return expected, written_paths(data, self._on_device(reply.get("after")))

    def _reference_ignores(self, data: Any, path: str, expected: Any) -> bool:
        from grader.check import is_tensor_tree

        with self.clock.phase("reference"):
            scratch = clone_data(data)
            poison(scratch, [path])
            try:
                reply = self._ask({"op": "reference", "data": scratch}, "ref_kernel failed")
            except Stop as stop:
                if stop.status == Status.TIMEOUT:
                    raise
                return False
            again = self._on_device(reply.get("expected"))
            return is_tensor_tree(again) and not written_paths(expected, again)

    def _generate_input(self, **kwargs: Any) -> Any:
        return self._inputs(kwargs, "generate_input failed")

    def _inputs(self, kwargs: dict[str, Any], what: str) -> Any:
        """generate_input(**kwargs) in the sandbox, on this grading's device."""
        return self._on_device(self._ask({"op": "generate", "kwargs": kwargs}, what)["data"])

    def _ref_kernel(self, data: Any) -> Any:
        """ref_kernel's output; what it wrote into `data` in the sandbox is written here."""
        reply = self._ask({"op": "reference", "data": data}, "ref_kernel failed")
        after = dict(iter_tensors(self._on_device(reply.get("after"))))
        for path, tensor in iter_tensors(data):
            if path in after and after[path].shape == tensor.shape:
                tensor.copy_(after[path])
        return self._on_device(reply.get("expected"))

    def _check(self, data: Any, output: Any) -> Any:
        reply = self._ask(
            {"op": "check", "data": data, "output": output}, "check_implementation failed"
        )
        return reply.get("verdict")
