"""Validating a problem on one device before it goes live: its reference runs cleanly on
every test and benchmark case, grading the reference passes in test and benchmark mode,
and every example solution gets the verdict its name promises."""

from __future__ import annotations

import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from grader.calibrate import DevicePeaks
from grader.check import run_check
from grader.device import detect_device
from grader.devicemap import harness_device_map
from grader.expected import CUDA_ONLY, device_env, import_reference
from grader.harness import Standby, grade
from grader.inputs import clone_data, devices_of, iter_tensors, seeded_case
from grader.problem import Problem
from grader.report import tail

# Seconds of timing per benchmark case when the reference is graded in benchmark mode: the
# point is that timing works end to end, not a precise number.
VALIDATION_CASE_BUDGET_S = 0.5
SOLUTIONS_DIR = "solutions"
MAX_SOLUTIONS = 50
MAX_SOLUTION_BYTES = 1_000_000
TRACE_LINES = 8


@dataclass
class Check:
    """One step of a validation. `expected` is what the step should do ("pass" or "fail");
    `outcome` is "ok", "problem" (the step contradicts its expectation) or "skipped"."""

    name: str
    kind: str  # "reference" | "solution"
    expected: str
    outcome: str
    status: str = ""  # the grading's status, where a grading ran
    message: str = ""
    wall_s: float = 0.0


@dataclass
class ValidationReport:
    status: str  # "passed" when no check found a problem, else "failed"
    problem: str
    device: str
    device_type: str = ""
    device_name: str = ""
    message: str = ""
    checks: list[Check] = field(default_factory=list)
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["checks"] = [asdict(check) for check in self.checks]
        return out


def example_solutions(folder: Path) -> dict[str, str]:
    """The example solutions shipped with a problem folder: every .py file under
    ``solutions/`` (GPU MODE's ``solutions/correct`` and ``solutions/wrong`` included), by
    path relative to the folder."""
    root = folder / SOLUTIONS_DIR
    if not root.is_dir():
        return {}
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if not path.is_file() or path.stat().st_size > MAX_SOLUTION_BYTES:
            continue
        found[path.relative_to(folder).as_posix()] = path.read_text(errors="replace")
        if len(found) >= MAX_SOLUTIONS:
            break
    return found


def expected_to_fail(path: str) -> bool:
    """GPU MODE's convention and ours: a solution whose path or name says "wrong"."""
    return "wrong" in path.lower()


def needs_cuda(path: str, code: str) -> bool:
    """A CUDA C++ solution (through torch.utils.cpp_extension) cannot run on a CPU worker."""
    return "cuda" in Path(path).stem.lower() or "cpp_extension" in code or "load_inline" in code


def reference_submission(problem: Problem) -> str:
    """The problem's own reference as a submission: KernelBench's template subclasses the
    module unchanged; a GPU MODE reference.py gets a ``custom_kernel`` calling ``ref_kernel``."""
    if problem.format == "kernelbench":
        return problem.submission_template
    return (
        problem.files["reference.py"]
        + "\n\ndef custom_kernel(data):\n    return ref_kernel(data)\n"
    )


def validate(
    problem: Problem,
    solutions: dict[str, str],
    *,
    device: str = "cpu",
    peaks: DevicePeaks | None = None,
    timeouts: dict[str, float] | None = None,
    memory_bytes: int | None = None,
    isolate: bool = True,
    standby: Standby | None = None,
) -> ValidationReport:
    """Validate `problem` on this host's `device`; later steps are skipped once the
    reference itself is broken, since every grading would only repeat that."""
    started = time.monotonic()
    info = detect_device(device)
    report = ValidationReport(
        status="running",
        problem=problem.name,
        device=info.kind,
        device_type=info.device_type,
        device_name=info.name,
    )
    limits = timeouts or {}
    report.checks.append(check_reference(problem, info.kind))
    quick = replace(problem, spec={**problem.spec, "case_time_budget_s": VALIDATION_CASE_BUDGET_S})
    for mode in ("test", "benchmark"):
        name = f"reference graded in {mode} mode"
        if report.checks[0].outcome != "ok":
            report.checks.append(
                Check(name, "reference", "pass", "skipped", message="the reference failed")
            )
            continue
        report.checks.append(
            graded_check(
                name,
                "reference",
                "pass",
                lambda mode=mode: grade(
                    quick,
                    reference_submission(problem),
                    mode=mode,
                    device=info.kind,
                    timeout_s=limits.get(mode),
                    peaks=peaks,
                    isolate=isolate,
                    memory_bytes=memory_bytes,
                    screen=False,  # the organizer's own code, not a competitor's
                    standby=standby,
                ),
            )
        )
    reference_ok = all(check.outcome == "ok" for check in report.checks)
    for path, code in sorted(solutions.items()):
        expected = "fail" if expected_to_fail(path) else "pass"
        if not reference_ok:
            skipped = Check(path, "solution", expected, "skipped", message="the reference failed")
            report.checks.append(skipped)
        elif info.kind == "cpu" and needs_cuda(path, code):
            reason = "needs CUDA; this worker grades on the CPU"
            report.checks.append(Check(path, "solution", expected, "skipped", message=reason))
        else:
            report.checks.append(
                graded_check(
                    path,
                    "solution",
                    expected,
                    lambda code=code: grade(
                        problem,
                        code,
                        mode="test",
                        device=info.kind,
                        timeout_s=limits.get("test"),
                        isolate=isolate,
                        memory_bytes=memory_bytes,
                        standby=standby,
                    ),
                )
            )
    conclude(report)
    report.wall_s = time.monotonic() - started
    return report


def graded_check(name: str, kind: str, expected: str, run: Any) -> Check:
    """Grade, and compare the verdict with what was expected: "pass" must pass; "fail" must
    end in any verdict but passed."""
    started = time.monotonic()
    graded = run()
    passed = graded.status == "passed"
    ok = passed if expected == "pass" else not passed
    if ok:
        message = graded.message if expected == "fail" else ""
    elif expected == "pass":
        message = f"expected to pass, but {graded.status}: {graded.message}"
    else:
        message = "expected to fail (its name says wrong), but it passed every test case"
    return Check(
        name=name,
        kind=kind,
        expected=expected,
        outcome="ok" if ok else "problem",
        status=graded.status,
        message=message[:2000],
        wall_s=time.monotonic() - started,
    )


def conclude(report: ValidationReport) -> None:
    problems = [check for check in report.checks if check.outcome == "problem"]
    skipped = [check for check in report.checks if check.outcome == "skipped"]
    report.status = "failed" if problems else "passed"
    if problems:
        report.message = "; ".join(f"{check.name}: {check.message}" for check in problems)[:4000]
    else:
        ran = len(report.checks) - len(skipped)
        report.message = f"all {ran} checks passed on {report.device_type}" + (
            f" ({len(skipped)} skipped)" if skipped else ""
        )


# -- the reference, run in this (trusted) process -----------------------------------------


def check_reference(problem: Problem, kind: str) -> Check:
    """Generate every test and benchmark case's inputs, run ``ref_kernel`` on them, and
    check its output: finite (unless the inputs are not), and accepted by the problem's own
    ``check_implementation``."""
    started = time.monotonic()
    cases = [("test", case) for case in problem.tests] + [
        ("benchmark", case) for case in problem.benchmarks_for(kind)
    ]
    message = ""
    with (
        tempfile.TemporaryDirectory(prefix="kj-validate-") as folder,
        device_env(kind),
        harness_device_map(kind),
    ):
        for name, text in problem.files.items():
            if name != "submission.py" and "/" not in name:
                (Path(folder) / name).write_text(text)
        try:
            reference = import_reference(Path(folder), module_names(problem))
            message = missing_functions(reference)
            if not cases:
                message = message or "the problem has no test or benchmark cases"
            for case_kind, case in cases:
                if message:
                    break
                message = check_case(reference, kind, case_kind, case)
        except Exception:
            message = "reference.py failed to import:\n" + trace_tail()
    return Check(
        name="reference on every case",
        kind="reference",
        expected="pass",
        outcome="problem" if message else "ok",
        status="failed" if message else "passed",
        message=message,
        wall_s=time.monotonic() - started,
    )


def module_names(problem: Problem) -> list[str]:
    return [Path(name).stem for name in problem.files if name.endswith(".py")]


def missing_functions(reference: ModuleType) -> str:
    for needed in ("generate_input", "ref_kernel", "check_implementation"):
        if not callable(getattr(reference, needed, None)):
            return f"reference.py does not define {needed}"
    return ""


def check_case(reference: ModuleType, kind: str, case_kind: str, case: dict[str, Any]) -> str:
    """'' when the reference handles the case, else what went wrong."""
    label = f"{case_kind} case " + " ".join(f"{k}={v}" for k, v in case.items())
    try:
        data = reference.generate_input(**seeded_case(case, None))
    except Exception as exc:
        if kind == "cpu" and "cuda" in str(exc).lower():
            return CUDA_ONLY
        return f"generate_input raised on {label}:\n" + trace_tail()
    if kind == "cpu" and "cuda" in devices_of(data):
        return CUDA_ONLY
    try:
        output = reference.ref_kernel(clone_data(data))
    except Exception:
        return f"ref_kernel raised on {label}:\n" + trace_tail()
    if not any(True for _ in iter_tensors(output)):
        return f"ref_kernel returned no tensor on {label}"
    if all_finite(data):
        for path, tensor in iter_tensors(output, "output"):
            if not all_finite(tensor):
                return f"ref_kernel produced NaN or infinity in {path} on {label}"
    ok, verdict = run_check(reference.check_implementation, clone_data(data), output)
    if not ok:
        return f"check_implementation rejects the reference's own output on {label}: {verdict}"
    return ""


def all_finite(data: Any) -> bool:
    for _, tensor in iter_tensors(data):
        if (tensor.is_floating_point() or tensor.is_complex()) and not bool(
            torch.isfinite(tensor).all()
        ):
            return False
    return True


def trace_tail() -> str:
    return tail(traceback.format_exc(), TRACE_LINES)
