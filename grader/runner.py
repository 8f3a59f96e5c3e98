"""The runner: runs inside the sandbox in a fresh process, imports the submission and runs
the calls the harness asks for, answering with raw outputs and its own timings.

Nothing here is trusted: once submission.py is imported it can change anything in this
process, so the harness checks every answer. Usage:
    python -m grader.runner --recv-fd N --send-fd M --device cpu|cuda
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Callable
from typing import Any

import torch

from grader.inputs import to_cpu, to_device
from grader.protocol import ChannelClosed, recv_message, send_message
from grader.timing import DEFAULT_CASE_BUDGET_S, MAX_SAMPLES, Timer

NOT_A_TENSOR = "custom_kernel must return a torch.Tensor (or a tuple or list of them)"


class SubmissionError(Exception):
    """The submission did something the contract forbids; the message is for its author."""


def plain_output(output: Any) -> Any:
    """Contiguous CPU copies of exact torch.Tensor outputs; subclasses and other objects
    are refused, because their operations could lie to the comparison."""
    if type(output) is torch.Tensor:
        return output.detach().cpu().contiguous()
    if type(output) in (tuple, list) and output:
        return type(output)(plain_output(x) for x in output)
    raise SubmissionError(f"{NOT_A_TENSOR}, got {type(output).__module__}.{type(output).__name__}")


def _error_reply(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, SubmissionError):
        text = str(exc)
    else:
        text = "".join(traceback.format_exception(exc))
    print(text, file=sys.stderr, flush=True)
    return {"ok": False, "error": text}


def import_submission(device: str, kernelbench_seed: int | None = None) -> Callable[[Any], Any]:
    module = importlib.import_module("submission")
    if kernelbench_seed is not None:
        return kernelbench_kernel(module, device, kernelbench_seed)
    kernel = getattr(module, "custom_kernel", None)
    if not callable(kernel):
        raise SubmissionError("submission.py does not define a function custom_kernel(data)")
    return kernel


def kernelbench_kernel(module: Any, device: str, init_seed: int) -> Callable[[Any], Any]:
    """A KernelBench submission's ModelNew, built like the reference's Model (same
    constructor arguments, after the same seed) and called on the inputs."""
    model_new = getattr(module, "ModelNew", None)
    if not isinstance(model_new, type):
        raise SubmissionError("submission.py does not define a class ModelNew")
    problem_module = importlib.import_module("model")
    torch.manual_seed(init_seed)
    instance = model_new(*problem_module.get_init_inputs())
    if isinstance(instance, torch.nn.Module):
        instance = instance.to(device)

    def forward(data: Any) -> Any:
        with torch.no_grad():
            return instance(*data)

    return forward


class Runner:
    def __init__(self, kernel: Callable[[Any], Any], device: str) -> None:
        self.kernel = kernel
        self.device = device
        self._timer: Timer | None = None
        # Inputs staged on the device for `batch` requests, so that a batch's round trip
        # carries no data and the harness's clock times the calls, not a transfer.
        self._staged: Any = None

    @property
    def timer(self) -> Timer:
        if self._timer is None:
            self._timer = Timer(self.device)
        return self._timer

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        data = to_device(request.get("data"), self.device)
        if op == "run":
            output = plain_output(self.kernel(data))
            reply: dict[str, Any] = {"ok": True, "output": output}
            if request.get("return_data"):
                reply["data"] = to_cpu(data)
            return reply
        if op == "time":
            samples, output = self.timer.time_case(
                self.kernel,
                data,
                budget_s=float(request.get("budget_s", DEFAULT_CASE_BUDGET_S)),
                max_samples=int(request.get("max_samples", MAX_SAMPLES)),
                poison_paths=[str(path) for path in request.get("poison", [])],
            )
            return {
                "ok": True,
                "samples": samples.seconds,
                "wall_s": samples.wall_s,
                "paused_s": samples.paused_s,
                "sm_clock_mhz": samples.sm_clock_mhz,
                "output": plain_output(output),
            }
        if op == "warmup":
            self.timer.warm_up(self.kernel, data)
            return {"ok": True}
        if op == "time_one":
            seconds, output = self.timer.one_call(self.kernel, data)
            return {
                "ok": True,
                "samples": [seconds],
                "sm_clock_mhz": self.timer.sm_clock_mhz(),
                "output": plain_output(output),
            }
        if op == "stage":
            self._staged = data
            return {"ok": True}
        if op == "batch":
            if self._staged is None:
                raise SubmissionError("a batch request came before any inputs were staged")
            self.timer.batch(self.kernel, self._staged, int(request.get("calls", 1)))
            return {"ok": True}
        if op == "ping":
            return {"ok": True}
        raise SubmissionError(f"the runner does not know the request {op!r}")


def _tell(send_fd: int, message: dict[str, Any]) -> bool:
    """Send; False when the harness has already gone (it stopped the grading before the
    runner was ready, say), which is no error of the submission's to report."""
    try:
        send_message(send_fd, message)
    except (ChannelClosed, BrokenPipeError):
        return False
    return True


def serve(recv_fd: int, send_fd: int, device: str, kernelbench_seed: int | None = None) -> None:
    try:
        runner = Runner(import_submission(device, kernelbench_seed), device)
    except BaseException as exc:
        _tell(send_fd, {"ok": False, "phase": "import", **_error_reply(exc)})
        return
    if not _tell(send_fd, {"ok": True, "ready": True}):
        return
    while True:
        try:
            request = recv_message(recv_fd)
        except ChannelClosed:
            return
        if not isinstance(request, dict) or request.get("op") == "exit":
            return
        try:
            reply = runner.handle(request)
        except BaseException as exc:
            send_message(send_fd, {"phase": "call", **_error_reply(exc)})
            return
        send_message(send_fd, reply)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="grader.runner")
    parser.add_argument("--recv-fd", type=int, required=True)
    parser.add_argument("--send-fd", type=int, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument(
        "--kernelbench-seed", type=int, default=None, help="a KernelBench problem's init seed"
    )
    args = parser.parse_args(argv)
    serve(args.recv_fd, args.send_fd, args.device, args.kernelbench_seed)


if __name__ == "__main__":
    main()
