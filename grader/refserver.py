"""The process that holds an untrusted problem's reference (grader/untrusted.py), inside its
own sandbox: it imports the problem's files from its work folder and answers the harness's
requests (`load`, `generate`, `reference`, `check`) one at a time over the channel, until
the harness closes it. It imports nothing the sandbox lacks (no `sandbox` package).

    python -m grader.refserver --channel-fd FD --device cpu|cuda"""

from __future__ import annotations

import argparse
import traceback
from pathlib import Path
from typing import Any

from grader.inputs import clone_data
from grader.protocol import ChannelError, recv_message, send_message
from grader.report import tail
from grader.trees import is_tensor, map_tree


def _answer(request: dict[str, Any], state: dict[str, Any], device: str) -> dict[str, Any]:
    from grader.expected import import_reference

    op = request.get("op")
    if op == "load":
        names = [str(name) for name in request.get("names", [])]
        reference = import_reference(Path.cwd(), names)
        missing = [
            needed
            for needed in ("generate_input", "ref_kernel", "check_implementation")
            if not callable(getattr(reference, needed, None))
        ]
        if missing:
            return {"missing": missing[0]}
        state["reference"] = reference
        return {"ok": True}
    reference = state["reference"]
    if op == "generate":
        return {"data": reference.generate_input(**request["kwargs"])}
    if op == "reference":
        scratch = _on(request["data"], device)
        if request.get("count_flops"):
            from torch.utils.flop_counter import FlopCounterMode

            counter = FlopCounterMode(display=False)
            pristine = clone_data(scratch)
            try:
                with counter:
                    expected = reference.ref_kernel(scratch)
            except Exception:
                scratch = pristine  # the reference's own failure shows without the counter
                return {"expected": reference.ref_kernel(scratch), "after": scratch}
            flops = float(counter.get_total_flops())
            return {"expected": expected, "after": scratch, "flops": flops}
        return {"expected": reference.ref_kernel(scratch), "after": scratch}
    if op == "check":
        # As grader.check.run_check reads a check in the harness: its exception is a failure.
        try:
            verdict = reference.check_implementation(
                _on(request["data"], device), _on(request["output"], device)
            )
        except Exception as exc:
            verdict = (False, f"checking the output raised {type(exc).__name__}: {exc}")
        return {"verdict": verdict}
    return {"error": f"unknown request {op!r}"}


def _on(tree: Any, device: str) -> Any:
    return map_tree(tree, is_tensor, lambda tensor: tensor.to(device))


def serve(fd: int, device: str) -> None:
    """Answer the harness's requests until it closes the channel."""
    from grader.devicemap import harness_device_map
    from grader.expected import device_env

    state: dict[str, Any] = {}
    send_message(fd, {"ready": True})
    with harness_device_map(device), device_env(device):
        while True:
            try:
                request = recv_message(fd)
            except ChannelError:
                return
            try:
                reply = _answer(request, state, device)
            except Exception:
                reply = {"error": tail(traceback.format_exc())}
            try:
                send_message(fd, reply)
            except ChannelError as exc:
                if "closed" in str(exc):
                    return
                send_message(fd, {"uncarried": str(exc)})
            except (TypeError, AttributeError, ValueError) as exc:
                send_message(fd, {"uncarried": f"{type(exc).__name__}: {exc}"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--channel-fd", type=int, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"), required=True)
    args = parser.parse_args()
    serve(args.channel_fd, args.device)


if __name__ == "__main__":
    main()
