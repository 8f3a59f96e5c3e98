"""The problem's side of a grading, in the harness: its reference imported from a private
folder, each case's inputs generated (in leaderboard mode from the secret seed mixed with
the grading's nonce), the expected output, and which input tensors a submission may write
(the ones the reference writes, and buffers the reference ignores)."""

from __future__ import annotations

import importlib
import os
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from grader import inputs
from grader.check import is_tensor_tree
from grader.inputs import clone_data, devices_of, iter_tensors, poison, seeded_case, written_paths
from grader.plausibility import label
from grader.problem import Problem
from grader.report import PhaseClock, Status, Stop, tail

DEVICE_ENV = "KJ_DEVICE"  # how problem code (problems/utils.py) learns the grading device
CUDA_ONLY = "this problem generates its inputs on CUDA; grade it on a GPU worker"
# Registers and unregisters the problem's module names in sys.modules; one at a time.
_IMPORT_LOCK = threading.Lock()


@contextmanager
def device_env(kind: str) -> Iterator[None]:
    """KJ_DEVICE set to `kind` while the reference is imported and called (its utils read it)."""
    previous = os.environ.get(DEVICE_ENV)
    os.environ[DEVICE_ENV] = kind
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DEVICE_ENV, None)
        else:
            os.environ[DEVICE_ENV] = previous


def import_reference(folder: Path, module_names: list[str]) -> ModuleType:
    """Import the problem's reference.py from `folder` without leaving its helper modules
    (utils, task) in sys.modules, where they would shadow another problem's."""
    with _IMPORT_LOCK:
        saved = {name: sys.modules.pop(name) for name in module_names if name in sys.modules}
        sys.path.insert(0, str(folder))
        try:
            return importlib.import_module("reference")
        finally:
            sys.path.remove(str(folder))
            for name in module_names:
                sys.modules.pop(name, None)
            sys.modules.update(saved)


@dataclass(frozen=True)
class CaseSetup:
    """A case ready to grade: its first input set (pristine: the harness's own, never
    handed to the runner), the expected output, and the input paths the submission may
    write."""

    case: dict[str, Any]
    data: Any
    expected: Any
    written: set[str]
    # What the reference's own call read, wrote and computed, where the problem declares no
    # roofline: {"bytes": ..., "flops": ...} (see `measured_roofline`).
    measured: dict[str, float] | None = None


class ProblemSide:
    """One grading's reference, on this process's device `kind`."""

    def __init__(
        self, problem: Problem, kind: str, ranked_seed: int | None, clock: PhaseClock
    ) -> None:
        self.problem = problem
        self.kind = kind
        self.ranked_seed = ranked_seed
        # The timed batches' fresh sets: the ranked seed in leaderboard mode, else one drawn
        # for this grading alone, so no set can be known before it is handed over.
        self.fresh_seed = ranked_seed if ranked_seed is not None else inputs.ranked_seed(None)
        self.clock = clock
        self.reference: ModuleType | None = None
        # Input paths an earlier case's reference was seen to read: probing them again (one
        # more reference call a case, 8 s on GPU MODE's eigh) could only find them read, or
        # at most let the submission write one, so they stay inputs for the whole grading.
        self._read_paths: set[str] = set()

    def load(self, folder: Path) -> None:
        with self.clock.phase("reference"):
            names = [Path(name).stem for name in self.problem.files if name.endswith(".py")]
            try:
                self.reference = import_reference(folder, names)
            except Exception as exc:
                if self.kind == "cpu" and "cuda" in str(exc).lower():
                    raise Stop(Status.ERROR, CUDA_ONLY) from exc
                raise Stop(
                    Status.ERROR,
                    "the problem's reference.py failed to import:\n" + tail(traceback.format_exc()),
                ) from exc
            for needed in ("generate_input", "ref_kernel", "check_implementation"):
                if not callable(getattr(self.reference, needed, None)):
                    raise Stop(Status.ERROR, f"the problem's reference.py does not define {needed}")

    def close(self) -> None:
        """Nothing to end for a reference imported here (see grader/untrusted.py)."""

    @property
    def module(self) -> ModuleType:
        assert self.reference is not None
        return self.reference

    def generate(self, case: dict[str, Any], repeat: int = 0, seed: int | None = None) -> Any:
        """Input set `repeat` of `case`; `seed` overrides the grading's ranked seed (fresh sets
        for the timed batches outside leaderboard mode)."""
        with self.clock.phase("inputs"):
            kwargs = seeded_case(case, self.ranked_seed if seed is None else seed, repeat=repeat)
            try:
                data = self.module.generate_input(**kwargs)
            except Exception as exc:
                if self.kind == "cpu" and "cuda" in str(exc).lower():
                    raise Stop(Status.ERROR, CUDA_ONLY) from exc
                raise Stop(
                    Status.ERROR,
                    f"the problem's generate_input failed for case {label(case)}:\n"
                    + tail(traceback.format_exc()),
                ) from exc
            if self.kind == "cpu" and "cuda" in devices_of(data):
                raise Stop(Status.ERROR, CUDA_ONLY)
            return data

    def expected_and_written(
        self, case: dict[str, Any], data: Any, flops: list[float] | None = None
    ) -> tuple[Any, set[str]]:
        """The expected output, and which input tensors the reference itself writes. With
        `flops`, the call is made under torch's flop counter and its count appended (none
        where the counter cannot follow the reference: the call is then made again without)."""
        with self.clock.phase("reference"):
            scratch = clone_data(data)
            try:
                if flops is None:
                    expected = self.module.ref_kernel(scratch)
                else:
                    expected = self._counted(scratch, flops)
            except Exception as exc:
                raise Stop(
                    Status.ERROR,
                    f"the problem's ref_kernel failed for case {label(case)}:\n"
                    + tail(traceback.format_exc()),
                ) from exc
            return expected, written_paths(data, scratch)

    def _counted(self, scratch: Any, flops: list[float]) -> Any:
        from torch.utils.flop_counter import FlopCounterMode

        pristine = clone_data(scratch)
        try:
            counter = FlopCounterMode(display=False)
            with counter:
                expected = self.module.ref_kernel(scratch)
        except Exception:
            scratch_again = pristine  # the reference's own failure shows without the counter
            expected = self.module.ref_kernel(scratch_again)
            _copy_into(scratch, scratch_again)
            return expected
        flops.append(float(counter.get_total_flops()))
        return expected

    def prepare(self, case: dict[str, Any], measure: bool = False) -> CaseSetup:
        """The case's first input set with the reference's expected output; with `measure`,
        what the reference's call read, wrote and computed too (`measured_roofline`)."""
        data = self.generate(case)
        flops: list[float] | None = [] if measure else None
        expected, written = self.expected_and_written(case, data, flops)
        written |= self._ignored_buffers(data, written, expected)
        measured = measured_roofline(data, expected, written, flops) if measure else None
        return CaseSetup(case, data, expected, written, measured)

    def _ignored_buffers(self, data: Any, written: set[str], expected: Any) -> set[str]:
        """Output buffers the reference neither reads nor writes (GPU MODE's conv2d passes
        one its reference never uses): input tensors shaped like an expected output whose
        poisoning leaves the reference's result alone. Their dtype may differ from the
        output's (GPU MODE's prefixsum fills a float32 buffer while its reference returns
        float64): what keeps them harmless is not their dtype but that they are the
        submission's to write and are poisoned before every call like the buffers the
        reference writes, so a call cannot pass on what an earlier one left there, and the
        check reads the harness's pristine inputs, never the slab."""
        shapes = {t.shape for _, t in iter_tensors(expected)}
        ignored: set[str] = set()
        for path, tensor in iter_tensors(data):
            if path in written or path in self._read_paths or tensor.shape not in shapes:
                continue
            if self._reference_ignores(data, path, expected):
                ignored.add(path)
            else:
                self._read_paths.add(path)
        return ignored

    def _reference_ignores(self, data: Any, path: str, expected: Any) -> bool:
        """Whether the reference's result is the same with the tensor at `path` poisoned. A
        tensor the reference reads changes its result and stays an input the submission
        must leave alone."""
        with self.clock.phase("reference"):
            scratch = clone_data(data)
            poison(scratch, [path])
            try:
                again = self.module.ref_kernel(scratch)
            except Exception:
                return False
            return is_tensor_tree(again) and not written_paths(expected, again)


def measured_roofline(
    data: Any, expected: Any, written: set[str], flops: list[float] | None
) -> dict[str, float]:
    """The least a call must move and compute, from the reference's own call: every input
    tensor it reads (the buffers it only writes left out) read once, every output tensor
    written once, and the flops torch's counter saw (matrix products, convolutions and
    attention; none where it could not follow the reference)."""
    read = sum(
        t.numel() * t.element_size() for path, t in iter_tensors(data) if path not in written
    )
    wrote = sum(t.numel() * t.element_size() for _, t in iter_tensors(expected, "output"))
    return {"bytes": float(read + wrote), "flops": float(flops[0]) if flops else 0.0}


def _copy_into(target: Any, source: Any) -> None:
    """The tensors of `source` into the same places in `target` (trees of one shape)."""
    found = dict(iter_tensors(source))
    for path, tensor in iter_tensors(target):
        if path in found:
            tensor.copy_(found[path])
