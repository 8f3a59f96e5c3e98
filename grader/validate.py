"""Validating a problem on one device before it goes live: this worker has what the problem
declares it needs, its reference runs cleanly on every test and benchmark case, grading the
reference passes in test and benchmark mode, and every example solution gets the verdict
its name promises."""

from __future__ import annotations

import importlib.util
import math
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from grader.calibrate import DevicePeaks
from grader.check import run_check
from grader.device import DeviceInfo, detect_device
from grader.devicemap import harness_device_map
from grader.expected import CUDA_ONLY, ProblemSide, device_env, import_reference
from grader.harness import Standby, grade
from grader.inputs import clone_data, devices_of, iter_tensors, seeded_case
from grader.problem import (
    TEST_CASES_FLOOR_S,
    TEST_CASES_MULTIPLE,
    Problem,
    derived_test_cases_timeout,
)
from grader.report import (
    CaseKind,
    Check,
    Mode,
    PhaseClock,
    Report,
    Status,
    Stop,
    ValidationReport,
    ValidationStatus,
    tail,
)
from grader.requirements import language_shortfall, shortfall
from grader.runner import NEEDS_GPU
from grader.untrusted import SandboxedProblemSide

# Seconds of timing per benchmark case when the reference is graded in benchmark mode: the
# point is that timing works end to end, not a precise number.
VALIDATION_CASE_BUDGET_S = 0.5
MODES = (Mode.TEST, Mode.BENCHMARK)
REFERENCE_STEPS = ("reference on every case",)
CPU_SIZED_HINT = (
    "on the CPU, cases sized for GPUs can take minutes: give CPU workers smaller benchmark "
    "cases (task.yml's cpu_benchmarks), or offer the problem on GPUs only"
)
# A test-mode grading's short limit, which bounds a hung kernel: task.yml's
# test_cases_timeout, else derived here from the reference's own test cases.
TEST_CASES_LIMIT = "the test cases exceeded their time limit"
TEST_CASES_HINT = (
    "test mode's cases must finish within its short limit, a bound on a hung kernel: "
    f"{TEST_CASES_MULTIPLE:g} × the reference's own test cases on this device type (at least "
    f"{TEST_CASES_FLOOR_S:g} s, at most test_timeout), or task.yml's test_cases_timeout where "
    "it sets one; where correct code needs longer on this device, set test_cases_timeout, "
    "or raise it"
)
# Where a report's test-mode limit came from.
FROM_TASK = "task.yml"
FROM_REFERENCE = "reference"
TRACE_LINES = 8


def test_cases_limit_text(report: ValidationReport) -> str:
    """The limit in a sentence for the organizer, or '' where there is none."""
    limit = report.test_cases_timeout_s
    if limit is None:
        return ""
    if report.test_cases_timeout_from == FROM_TASK:
        return f"test mode's cases may take {limit:g} s (task.yml's test_cases_timeout)"
    return (
        f"test mode's cases may take {limit:g} s on {report.device_type} "
        f"({TEST_CASES_MULTIPLE:g} × the reference's own {report.reference_test_cases_s:.2f} s, "
        f"at least {TEST_CASES_FLOOR_S:g} s, at most test_timeout)"
    )


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
    on_step: Callable[[str], None] | None = None,
    untrusted_reference: bool = False,
) -> ValidationReport:
    """Validate `problem` on this host's `device`; later steps are skipped once the
    reference itself is broken, since every grading would only repeat that. `on_step` is
    told each step's name as it begins. `untrusted_reference`: an author's problem, whose
    reference runs only in a sandbox of its own (grader/untrusted.py), here and in every
    grading."""
    step = on_step or (lambda name: None)
    started = time.monotonic()
    info = detect_device(device)
    report = ValidationReport(
        status=ValidationStatus.RUNNING,
        problem=problem.name,
        **info.report_fields(),
    )
    limits = timeouts or {}
    if lacks_requirements(problem, info, report, solutions):
        report.wall_s = time.monotonic() - started
        return report
    step(REFERENCE_STEPS[0])
    untrusted = None
    if untrusted_reference:
        untrusted = SandboxedProblemSide(problem, info.kind, None, PhaseClock({}))
        untrusted.isolate, untrusted.memory_bytes = isolate, memory_bytes
        untrusted.deadline = time.monotonic() + problem.timeout_for(Mode.LEADERBOARD)
    try:
        report.checks.append(check_reference(problem, info.kind, report.rooflines, untrusted))
    finally:
        if untrusted is not None:
            untrusted.close()
    for roofline in report.rooflines:
        floor = peaks.floor_s(roofline["bytes"], roofline["flops"]) if peaks else 0.0
        roofline["floor_s"] = floor if floor > 0 else None
    quick = replace(problem, spec={**problem.spec, "case_time_budget_s": VALIDATION_CASE_BUDGET_S})

    def graded(spec: Problem, code: str, mode: Mode, **extra: Any) -> Any:
        return grade(
            spec,
            code,
            mode=mode,
            device=info.kind,
            timeout_s=limits.get(mode),
            isolate=isolate,
            memory_bytes=memory_bytes,
            standby=standby,
            untrusted_reference=untrusted_reference,
            **extra,
        )

    reference_graded: dict[Mode, Report] = {}

    def grade_reference(mode: Mode) -> Report:
        # Unless task.yml sets it, test mode's short limit is what this grading measures:
        # the reference's test cases get the whole grading's limit.
        spec = quick
        if mode == Mode.TEST and problem.declared_test_cases_timeout is None:
            spec = replace(quick, validated_test_cases_timeout=math.inf)
        reference_graded[mode] = graded(
            spec,
            reference_submission(problem),
            mode,
            peaks=peaks,
            screen=False,  # the organizer's own code, not a competitor's
        )
        return reference_graded[mode]

    for mode in MODES:
        name = f"reference graded in {mode} mode"
        if report.checks[0].outcome != "ok":
            report.checks.append(
                Check(name, "reference", "pass", "skipped", message="the reference failed")
            )
            continue
        step(name)
        report.checks.append(
            graded_check(name, "reference", "pass", lambda mode=mode: grade_reference(mode))
        )
    limited = with_test_cases_limit(problem, report, reference_graded.get(Mode.TEST))
    # Solutions are graded in test mode (those named wrong in benchmark mode too, where they
    # pass the tests): only a reference that fails there dooms them.
    reference_ok = all(check.outcome == "ok" for check in report.checks[:2])
    for path, code in sorted(solutions.items()):
        expected = "fail" if expected_to_fail(path) else "pass"
        if not reference_ok:
            skipped = Check(path, "solution", expected, "skipped", message="the reference failed")
            report.checks.append(skipped)
        elif info.kind == "cpu" and needs_cuda(path, code):
            reason = "needs CUDA; this worker grades on the CPU"
            report.checks.append(Check(path, "solution", expected, "skipped", message=reason))
        elif reason := language_shortfall(code, info):
            report.checks.append(Check(path, "solution", expected, "skipped", message=reason))
        else:
            step(path)

            def solution(mode: Mode, code: str = code) -> Any:
                return graded(limited if mode == Mode.TEST else quick, code, mode)

            run = (
                (lambda: solution(Mode.TEST))
                if expected == "pass"
                else wrong_solution_run(solution)
            )
            report.checks.append(graded_check(path, "solution", expected, run))
    conclude(report)
    report.wall_s = time.monotonic() - started
    return report


def with_test_cases_limit(
    problem: Problem, report: ValidationReport, reference: Report | None
) -> Problem:
    """The problem as test mode grades it on this device type, and the report saying with
    what short limit: task.yml's test_cases_timeout, else one derived from `reference` (the
    reference's grading in test mode) where it passed."""
    if reference is not None and reference.status == Status.PASSED:
        report.reference_test_cases_s = reference.cases_wall_s
    declared = problem.declared_test_cases_timeout
    if declared is not None:
        report.test_cases_timeout_s, report.test_cases_timeout_from = declared, FROM_TASK
        return problem
    if report.reference_test_cases_s is None:
        return problem
    limit = derived_test_cases_timeout(report.reference_test_cases_s, problem.test_timeout)
    report.test_cases_timeout_s, report.test_cases_timeout_from = limit, FROM_REFERENCE
    return replace(problem, validated_test_cases_timeout=limit)


def wrong_solution_run(graded: Callable[[Mode], Any]) -> Callable[[], Any]:
    """A solution named wrong is graded on the test cases and, where it passes them, on the
    benchmark cases too (whose outputs are checked as well): a wrong answer that shows only
    at benchmark sizes, as a cheat aimed at the timed cases does, must still fail."""

    def run() -> Any:
        tested = graded(Mode.TEST)
        return graded(Mode.BENCHMARK) if tested.status == Status.PASSED else tested

    return run


def lacks_requirements(
    problem: Problem, info: DeviceInfo, report: ValidationReport, solutions: dict[str, str]
) -> bool:
    """True (and the report concluded) when this worker lacks what task.yml's `requires`
    declares: a device of another kind or capability ("needs"), or a package ("failed")."""
    lacking = shortfall(problem.requirements, info)
    if lacking is None:
        return False
    device = lacking.kind == "device"
    report.status = ValidationStatus.NEEDS if device else ValidationStatus.FAILED
    report.message = lacking.message
    steps = [REFERENCE_STEPS[0], *(f"reference graded in {mode} mode" for mode in MODES)]
    report.checks += [Check(name, "reference", "pass", "skipped") for name in steps]
    report.checks += [
        Check(path, "solution", "fail" if expected_to_fail(path) else "pass", "skipped")
        for path in sorted(solutions)
    ]
    for check in report.checks:
        check.message = lacking.message
    return True


def graded_check(name: str, kind: str, expected: str, run: Any) -> Check:
    """Grade, and compare the verdict with what was expected: "pass" must pass; "fail" must
    end in any verdict but passed. A grading that ends because the code needs a GPU this
    CPU worker does not have is neither: it is skipped."""
    started = time.monotonic()
    graded = run()
    passed = graded.status == Status.PASSED
    ok = passed if expected == "pass" else not passed
    outcome = "ok" if ok else "problem"
    if graded.status == Status.ERROR and NEEDS_GPU in graded.message:
        outcome, message = "skipped", "needs CUDA; this worker grades on the CPU"
    elif ok:
        message = graded.message if expected == "fail" else ""
        if message and graded.mode == Mode.BENCHMARK:
            message = f"passed the test cases, then in benchmark mode: {message}"
    elif expected == "pass":
        message = f"expected to pass, but {graded.status}: {graded.message}"
        timed_out = graded.status == Status.TIMEOUT
        if timed_out and graded.device == "cpu" and graded.mode != Mode.TEST:
            message += f"\n{CPU_SIZED_HINT}"
        elif timed_out and graded.message.startswith(TEST_CASES_LIMIT):
            message += f"\n{TEST_CASES_HINT}"
    else:
        message = (
            "expected to fail (its name says wrong), but it passed every test and benchmark case"
        )
    return Check(
        name=name,
        kind=kind,
        expected=expected,
        outcome=outcome,
        status=graded.status,
        message=message[:2000],
        wall_s=time.monotonic() - started,
    )


def conclude(report: ValidationReport) -> None:
    problems = [check for check in report.checks if check.outcome == "problem"]
    skipped = [check for check in report.checks if check.outcome == "skipped"]
    report.status = ValidationStatus.FAILED if problems else ValidationStatus.PASSED
    if problems and all(check.message == CUDA_ONLY for check in problems):
        # The reference itself makes CUDA tensors: the problem needs a GPU, nothing is wrong.
        report.status, report.message = ValidationStatus.NEEDS, f"needs a CUDA GPU: {CUDA_ONLY}"
    elif problems:
        report.message = "; ".join(f"{check.name}: {check.message}" for check in problems)[:4000]
    else:
        ran = len(report.checks) - len(skipped)
        report.message = f"all {ran} checks passed on {report.device_type}" + (
            f" ({len(skipped)} skipped)" if skipped else ""
        )
        if limit := test_cases_limit_text(report):
            report.message += f"; {limit}"


# -- the reference, run in this (trusted) process or, an author's, in its own sandbox ------


def check_reference(
    problem: Problem,
    kind: str,
    rooflines: list[dict[str, Any]] | None = None,
    untrusted: SandboxedProblemSide | None = None,
) -> Check:
    """Generate every test and benchmark case's inputs, run ``ref_kernel`` on them, and
    check its output: finite (unless the inputs are not), and accepted by the problem's own
    ``check_implementation``. Where all pass, each benchmark case's bytes and flops go into
    `rooflines` (see ValidationReport.rooflines). With `untrusted` (not loaded yet), the
    reference runs in that sandbox instead of this process (grader/untrusted.py)."""
    started = time.monotonic()
    cases = [(CaseKind.TEST, case) for case in problem.tests] + [
        (CaseKind.BENCHMARK, case) for case in problem.benchmarks_for(kind)
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
            if untrusted is not None:
                untrusted.load(Path(folder))
                reference = untrusted.module
            else:
                reference = import_reference(Path(folder), module_names(problem))
        except Stop as stop:
            message = stop.message
        except ModuleNotFoundError as exc:
            message = missing_module(exc) or "reference.py failed to import:\n" + trace_tail()
        except Exception as exc:
            if kind == "cpu" and "cuda" in str(exc).lower():
                message = CUDA_ONLY
            else:
                message = "reference.py failed to import:\n" + trace_tail()
        else:
            message = missing_functions(reference)
            if not cases:
                message = message or "the problem has no test or benchmark cases"
            if problem.multi_gpu:
                # Its functions need every rank in a process group: the reference's gradings
                # (the next steps, grader/rankharness.py) run them; here only the cases.
                message = message or world_sizes_problem(cases)
                cases = []
            for case_kind, case in cases:
                if message:
                    break
                message = check_case(reference, kind, case_kind, case)
            if not message and rooflines is not None and not problem.multi_gpu:
                message = case_rooflines(problem, kind, reference, rooflines, untrusted)
    return Check(
        name=REFERENCE_STEPS[0],
        kind="reference",
        expected="pass",
        outcome="problem" if message else "ok",
        status=Status.FAILED if message else Status.PASSED,
        message=message,
        wall_s=time.monotonic() - started,
    )


def missing_module(exc: ModuleNotFoundError) -> str:
    """The sentence for a reference importing a package this worker lacks, or ''."""
    package = (exc.name or "").partition(".")[0]
    if not package or package in sys.modules or importlib.util.find_spec(package) is not None:
        return ""
    return (
        f"reference.py imports {package}, which is not installed on this worker: install it "
        "in the worker's Python environment, and name it in task.yml's requires.packages "
        "so that a worker without it says so first"
    )


def module_names(problem: Problem) -> list[str]:
    return [Path(name).stem for name in problem.files if name.endswith(".py")]


def missing_functions(reference: ModuleType) -> str:
    for needed in ("generate_input", "ref_kernel", "check_implementation"):
        if not callable(getattr(reference, needed, None)):
            return f"reference.py does not define {needed}"
    return ""


def world_sizes_problem(cases: list[tuple[CaseKind, dict[str, Any]]]) -> str:
    """'' when every case of a multi-rank problem names its world size, else which does not."""
    for case_kind, case in cases:
        size = case.get("world_size")
        if type(size) is not int or size < 1:
            label = " ".join(f"{k}={v}" for k, v in case.items())
            return (
                f"{case_kind} case {label} names no world_size: every case of a problem with "
                "multi_gpu: true gives the number of ranks it runs on (a whole number, 1 or more)"
            )
    return ""


def check_case(reference: ModuleType, kind: str, case_kind: CaseKind, case: dict[str, Any]) -> str:
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
    try:
        if all_finite(data):
            for path, tensor in iter_tensors(output, "output"):
                if not all_finite(tensor):
                    return f"ref_kernel produced NaN or infinity in {path} on {label}"
    except Exception:
        return f"checking whether ref_kernel's output is finite raised on {label}:\n" + trace_tail()
    ok, verdict = run_check(reference.check_implementation, clone_data(data), output)
    if not ok:
        return f"check_implementation rejects the reference's own output on {label}: {verdict}"
    return ""


def case_rooflines(
    problem: Problem,
    kind: str,
    reference: ModuleType,
    into: list[dict[str, Any]],
    untrusted: SandboxedProblemSide | None = None,
) -> str:
    """Each benchmark case's bytes and flops into `into`; '' or what went wrong."""
    side = untrusted or ProblemSide(problem, kind, None, PhaseClock({}))
    side.reference = reference
    for case in problem.benchmarks_for(kind):
        declared = problem.roofline(case)
        if declared is None:
            try:
                declared = side.prepare(case, measure=True).measured
            except Stop as stop:
                return stop.message
            except Exception:
                return "measuring what the reference moves and computes raised:\n" + trace_tail()
        if declared is None:
            continue
        into.append({
            "case": dict(case), "bytes": float(declared.get("bytes", 0.0)),
            "flops": float(declared.get("flops", 0.0)),
            "declared": problem.declares_roofline, "floor_s": None,
        })  # fmt: skip
    return ""


def all_finite(data: Any) -> bool:
    for _, tensor in iter_tensors(data):
        if not (tensor.is_floating_point() or tensor.is_complex()):
            continue
        if tensor.element_size() == 1:
            tensor = tensor.float()  # fp8 types, for which isfinite is not implemented
        if not bool(torch.isfinite(tensor).all()):
            return False
    return True


def trace_tail() -> str:
    return tail(traceback.format_exc(), TRACE_LINES)
