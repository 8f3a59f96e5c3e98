"""Request and response bodies of the submissions API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["test", "benchmark", "leaderboard"]
Status = Literal["queued", "running", "passed", "failed", "error", "timeout", "rejected"]


class SubmissionCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    problem: str = Field(min_length=1, max_length=100, examples=["vectoradd"])
    code: str = Field(description="the submission: a Python file defining custom_kernel")
    mode: Mode = "test"
    gpu: str | None = Field(
        default=None, max_length=32, description="device type; default: the problem's first"
    )


class SubmissionAccepted(BaseModel):
    id: int
    status: Status


class SubmissionOut(BaseModel):
    """A submission and its report (the report's fields are filled once it is graded)."""

    id: int
    problem: str
    problem_version: int
    user: str
    mode: Mode
    gpu: str
    status: Status
    score: float | None = Field(description="seconds: geometric mean of the cases' medians")
    message: str
    flags: list[str]
    hidden: bool = Field(description="an organizer hid it: it is off the leaderboard")
    hacked: bool = Field(description="an organizer marked it as hacked: it is off the leaderboard")
    cases: list[dict[str, Any]]
    queue_position: int | None = Field(
        description="submissions ahead of this one for the same device type, while queued"
    )
    worker: str | None
    device_name: str | None
    device_peaks: dict[str, Any] | None = Field(
        description="the worker's measured copy bandwidth and matrix rate behind each "
        "case's speed-of-light fraction"
    )
    stdout: str
    stderr: str
    code_sha256: str
    code: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
