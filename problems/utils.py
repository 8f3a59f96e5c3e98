"""Helpers shared by the built-in problems (referenced as ../utils.py from each task.yml,
as in GPU MODE's reference-kernels): the grading device and output comparison."""

import os

import torch


def grading_device() -> torch.device:
    """The device inputs are generated on: the grader says so through KJ_DEVICE."""
    requested = os.environ.get("KJ_DEVICE")
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def seeded_generator(seed: int) -> torch.Generator:
    gen = torch.Generator(device=grading_device())
    gen.manual_seed(seed)
    return gen


def count_mismatches(
    output: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float
) -> str:
    """'' when close, else how many elements differ (the grader lists the first ones)."""
    # On the tensors' own device: a GPU compares 8192x8192 outputs in well under a millisecond,
    # where copying them to the host first took longer than the kernel being graded.
    got = output.detach().double()
    want = expected.detach().to(got.device).double()
    bad = int((~torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)).sum())
    if bad == 0:
        return ""
    return f"{bad} of {got.numel()} elements differ beyond rtol={rtol:g}, atol={atol:g}"


def form_mismatch(output, shape: tuple[int, ...], dtype: torch.dtype) -> str:
    """'' when output is a tensor of this shape and dtype, else the first way it is not."""
    if not isinstance(output, torch.Tensor):
        return f"expected a torch.Tensor, got {type(output).__name__}"
    if tuple(output.shape) != tuple(shape):
        return f"shape mismatch: got {tuple(output.shape)}, expected {tuple(shape)}"
    if output.dtype != dtype:
        return f"dtype mismatch: got {output.dtype}, expected {dtype}"
    return ""


def make_match_reference(ref_kernel, rtol: float = 1e-5, atol: float = 1e-8):
    """check_implementation(data, output) -> (ok, message) comparing with ref_kernel(data)."""

    def check_implementation(data, output):
        expected = ref_kernel(data)
        reason = form_mismatch(output, expected.shape, expected.dtype) or count_mismatches(
            output, expected, rtol, atol
        )
        return reason == "", reason

    return check_implementation
