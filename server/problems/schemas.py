"""Response bodies of the problems API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from grader.problem import TEST_CASES_FLOOR_S, TEST_CASES_MULTIPLE


class ProblemSummary(BaseModel):
    name: str
    version: int
    gpu_types: list[str]
    updated_at: datetime
    status: str = Field(
        description="'live'; admins also see 'validating' (the current version is being "
        "validated on the workers) and 'invalid' (it failed validation)"
    )
    starts_at: datetime | None = Field(
        default=None,
        description="before it, only admins see the problem (unless a competition of its "
        "opened earlier)",
    )
    hidden: bool = Field(
        default=False,
        description="hidden: competitors see the problem only once a competition of its "
        "has opened (starts_at does not open it)",
    )
    deadline: datetime | None = Field(
        default=None, description="after it, leaderboard-mode submissions are refused"
    )
    private: bool = Field(
        default=False,
        description="an author's own problem: only its author and the admins see it, and its "
        "reference is graded only in a sandbox of its own",
    )
    leaderboard_from_version: int = Field(
        description="the live leaderboard ranks submissions made against this version or later"
    )
    pending_version: int | None = Field(
        default=None,
        description="a new version being validated (or that failed validation) while this "
        "one stays live; it replaces this one once validated",
    )
    difficulty: str | None = Field(
        default=None,
        description="how hard the organizers rate it: 'easy', 'medium' or 'hard' (task.yml's "
        "difficulty or the admin page); null when not rated. Lists are ordered by it, "
        "easiest first, then by name",
    )


class ProblemOut(ProblemSummary):
    description: str
    tests: list[dict[str, Any]]
    benchmarks: list[dict[str, Any]]
    template: str | None
    created: bool | None = None


# Read from its row: DeviceValidation.model_validate(row) (the row's gpu_type, its
# problem_version), test_cases_timeout_s then set from its report.
class DeviceValidation(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    gpu: str = Field(validation_alias=AliasChoices("gpu", "gpu_type"))
    version: int = Field(validation_alias=AliasChoices("version", "problem_version"))
    status: str = Field(
        description="'queued', then 'passed', 'failed', or 'needs' (the device type cannot "
        "grade the problem; the report's message says what it needs)"
    )
    worker: str | None
    created_at: datetime
    finished_at: datetime | None
    report: dict[str, Any] | None = Field(
        description="the worker's report: status, message and checks, each with name, kind "
        "('reference' or 'solution'), expected ('pass' or 'fail'), outcome ('ok', 'problem' "
        "or 'skipped'), status (the grading's verdict) and message; test_cases_timeout_s, "
        "test_cases_timeout_from and reference_test_cases_s; rooflines: each benchmark "
        "case's physical floor (case, bytes, flops, declared, floor_s)"
    )
    test_cases_timeout_s: float | None = Field(
        default=None,
        description="test mode's short limit on this device type, in seconds: task.yml's "
        f"test_cases_timeout, else {TEST_CASES_MULTIPLE:g} times the reference's own test "
        f"cases graded here (at least {TEST_CASES_FLOOR_S:g} s, at most test_timeout); null "
        "where the reference did not pass test mode",
    )


class ValidationOut(BaseModel):
    problem: str
    version: int
    status: str = Field(description="the problem's status: 'validating', 'live' or 'invalid'")
    attempt: int = Field(description="the validation round that decides the status")
    devices: list[DeviceValidation]


class SpeedupOut(BaseModel):
    """A ranked score's speedup over its problem's baselines (server/problems/baselines.py)."""

    eager: float | None = Field(
        default=None,
        description="the reference's score as given over this one's (above 1 is faster); "
        "null where no baseline is timed on this problem version and GPU type",
    )
    compile: float | None = Field(
        default=None,
        description="torch.compile of the reference's score over this one's; null also "
        "where compiling could not work (the baseline row says why)",
    )


class BaselineOut(BaseModel):
    """A problem version's baselines on one GPU type, timed by one worker machine."""

    kind: str = Field(description="'eager': the reference as given; 'compile': torch.compile")
    score: float | None = Field(description="seconds, timed like a leaderboard submission")
    why_not: str | None = Field(description="why this kind has no score, where it has none")
    problem_version: int
    device_name: str | None = Field(description="the GPU (or CPU) that timed it")
    timed_at: datetime | None


class BaselinesRequested(BaseModel):
    problem: str
    version: int
    gpu_types: list[str] = Field(
        description="the device types whose workers will time the baselines (a device type "
        "with a request already waiting keeps that one)"
    )
