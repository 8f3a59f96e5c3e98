"""Each verdict's error class, as a trainer maps it to a reward, and each flag's code. Real
gradings of each class a submission earns are in tests/server/batches/test_batches.py;
here the rule itself, for the verdicts no submission can cause."""

from __future__ import annotations

import pytest

from grader.report import (
    GRADER_FAILURE,
    INVALID_REPORT,
    ErrorClass,
    Status,
    error_class,
    flag_code,
)
from grader.screen import REASON_CODES, screen

CORRECT = """
def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out
"""


def test_what_a_submission_prints_cannot_make_its_error_infrastructure() -> None:
    # A crash's message carries the submission's own text after a fixed start.
    message = "custom_kernel raised:\nValueError: the problem's reference.py does not define x"
    assert error_class(Status.ERROR, message, []) == ErrorClass.RUNTIME


@pytest.mark.parametrize(
    ("status", "message", "flags", "expected"),
    [
        (Status.TIMEOUT, "", [], ErrorClass.TIMEOUT),
        (
            Status.ERROR,
            "the grader failed on this worker (OSError)",
            [GRADER_FAILURE],
            ErrorClass.INFRASTRUCTURE,
        ),
        (
            Status.ERROR,
            "the worker returned an invalid report",
            [INVALID_REPORT],
            ErrorClass.INFRASTRUCTURE,
        ),
        (
            Status.ERROR,
            "the problem's ref_kernel failed for case size=8",
            [],
            ErrorClass.INFRASTRUCTURE,
        ),
        (
            Status.ERROR,
            "this problem needs a GPU (task.yml's requires.devices: cuda)",
            [],
            ErrorClass.INFRASTRUCTURE,
        ),
        (
            Status.ERROR,
            "this worker lacks helion, which task.yml's requires.packages names",
            [],
            ErrorClass.INFRASTRUCTURE,
        ),
        (Status.QUEUED, "", [], None),
        (Status.RUNNING, "", [], None),
    ],
)
def test_the_rule_for_verdicts_no_submission_causes(
    status: Status, message: str, flags: list[str], expected: ErrorClass | None
) -> None:
    assert error_class(status, message, flags) == expected


def test_each_screening_flag_has_its_reasons_code() -> None:
    found = screen("import threading\nimport ctypes\n" + CORRECT)
    codes = {flag_code("screening: " + flag) for flag in found.flags}
    assert codes and codes <= {f"screening.{code}" for code in REASON_CODES.values()}
    assert "screening.native" in codes


def test_flag_codes_are_distinct_and_the_unknown_is_other() -> None:
    assert len(set(REASON_CODES.values())) == len(REASON_CODES)
    assert flag_code("case size=8: the runner's own median of 1.000 µs is under ...") == (
        "timing.runner_clock"
    )
    assert flag_code(GRADER_FAILURE) == GRADER_FAILURE
    assert flag_code("something new") == "other"
