"""Whether a submission's output is right: it must be exact tensors, the problem's
check_implementation decides, and we add a listing of the first mismatching elements when
output and expected are comparable; inputs it was not allowed to write must come back as
they were given."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from grader.inputs import clone_data, iter_tensors, same_tensor, to_device
from grader.report import Stop

MAX_SHOWN = 5
DEFAULT_RTOL = 1e-5
DEFAULT_ATOL = 1e-8


def normalise_verdict(result: Any) -> tuple[bool, str]:
    """GPU MODE's newer checks return (ok, message); older ones a message, empty if OK."""
    if isinstance(result, tuple) and len(result) == 2:
        return bool(result[0]), str(result[1] or "")
    if isinstance(result, bool):
        return result, ""
    if result is None:
        return True, ""
    message = str(result)
    return message == "", message


def run_check(check: Callable[[Any, Any], Any], data: Any, output: Any) -> tuple[bool, str]:
    """Call the problem's check; an exception there (wrong shape, dtype...) is a failure. A
    Stop is the grading's end (a sandboxed reference that stopped answering,
    grader/untrusted.py), never the output's."""
    try:
        return normalise_verdict(check(data, output))
    except Stop:
        raise
    except Exception as exc:
        return False, f"checking the output raised {type(exc).__name__}: {exc}"


def first_mismatches(
    output: Any,
    expected: Any,
    *,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    limit: int = MAX_SHOWN,
) -> str:
    """'mismatch at (0, 0): got 0.0, expected 1.234; ... (2 shown, 16129 of 16129 elements
    differ)', or '' when the tensors are not comparable or agree."""
    pairs = _tensor_pairs(output, expected)
    if pairs is None:
        return ""
    parts: list[str] = []
    differing = total = 0
    for prefix, got, want in pairs:
        got_f = got.detach().to("cpu", torch.float64).reshape(got.shape or (1,))
        want_f = want.detach().to("cpu", torch.float64).reshape(want.shape or (1,))
        close = torch.isclose(got_f, want_f, rtol=rtol, atol=atol, equal_nan=True)
        bad = (~close).nonzero()
        differing += int(bad.shape[0])
        total += got_f.numel()
        for index in bad[: max(0, limit - len(parts))].tolist():
            shown = index if want.dim() > 0 else []
            where = prefix + "(" + ", ".join(str(i) for i in shown) + ")"
            parts.append(
                f"mismatch at {where}: got {got_f[tuple(index)].item():.6g}, "
                f"expected {want_f[tuple(index)].item():.6g}"
            )
    if not parts:
        return ""
    return "; ".join(parts) + f" ({len(parts)} shown, {differing} of {total} elements differ)"


def _tensor_pairs(
    output: Any, expected: Any
) -> list[tuple[str, torch.Tensor, torch.Tensor]] | None:
    if isinstance(output, torch.Tensor) and isinstance(expected, torch.Tensor):
        if output.shape != expected.shape:
            return None
        return [("", output, expected)]
    if isinstance(output, tuple | list) and isinstance(expected, tuple | list):
        if len(output) != len(expected):
            return None
        pairs: list[tuple[str, torch.Tensor, torch.Tensor]] = []
        for i, (o, e) in enumerate(zip(output, expected, strict=True)):
            sub = _tensor_pairs(o, e)
            if sub is None:
                return None
            pairs += [(f"[{i}]{p}", a, b) for p, a, b in sub]
        return pairs
    return None


def is_tensor_tree(output: Any) -> bool:
    """An exact torch.Tensor, or a non-empty tuple or list of them (nested)."""
    if type(output) is torch.Tensor:
        return True
    return type(output) in (tuple, list) and bool(output) and all(map(is_tensor_tree, output))


def wrong_output(
    check: Callable[[Any, Any], Any],
    data: Any,
    output: Any,
    expected: Callable[[], Any],
    *,
    device: str,
    tolerance: dict[str, float],
) -> str:
    """'' when `output` is right for the pristine inputs `data`, else what is wrong with it
    (the check's own message, after the first mismatches against `expected()`). The check
    runs on a clone, so it cannot spoil `data` for the calls after."""
    output = to_device(output, device)
    ok, message = run_check(check, clone_data(data), output)
    if ok:
        return ""
    listing = first_mismatches(
        output,
        expected(),
        rtol=tolerance.get("rtol", DEFAULT_RTOL),
        atol=tolerance.get("atol", DEFAULT_ATOL),
    )
    # The problem's own check often counts the differing elements too: say the count once.
    counted = re.search(r", (\d+ of \d+ elements differ)\)$", listing)
    if counted and message and counted.group(1) in message:
        listing = listing[: counted.start()] + ")"
    return "; ".join(part for part in (listing, message) if part)


def modified_inputs(data: Any, after: dict[str, torch.Tensor], written: set[str]) -> list[str]:
    """The paths of `data`'s tensors that the call changed though it may not write them."""
    changed = []
    for path, tensor in iter_tensors(data):
        if path in written:
            continue
        other = after.get(path)
        if other is None or not same_tensor(tensor, other.to(tensor.device)):
            changed.append(path)
    return changed
