"""Request and response bodies of the batches API."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from grader.precision import Precision
from grader.report import ErrorClass, Mode, Status
from server.batches.targets import MAX_URL_CHARS, Refused, host_and_port
from server.problems.schemas import SpeedupOut


class Tier(StrEnum):
    """How a batch is graded: quick grades test mode only (correctness on the public test
    cases); standard grades each item in its own mode; thorough grades each item in its own
    mode too, and times a benchmark or leaderboard item at the thorough precision
    (grader/precision.py: four times the samples, half the standard error, four times each
    case's time budget), with the same checks. The worker is told the precision in the
    grading's job, read from the item's batch when the job is sent."""

    QUICK = "quick"
    STANDARD = "standard"
    THOROUGH = "thorough"

    @property
    def precision(self) -> Precision:
        return Precision.THOROUGH if self is Tier.THOROUGH else Precision.STANDARD


class BatchStatus(StrEnum):
    RUNNING = "running"  # some item is queued or running
    DONE = "done"  # every item has its verdict


class BatchItemIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str = Field(
        min_length=1, max_length=200, description="the client's name for it, unique in the batch"
    )
    problem: str = Field(min_length=1, max_length=100, examples=["vectoradd"])
    code: str = Field(description="a Python file defining custom_kernel")
    mode: Mode = Mode.TEST
    gpu: str | None = Field(default=None, max_length=32)


class BatchCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    items: list[BatchItemIn] = Field(min_length=1)
    tier: Tier = Tier.STANDARD
    callback_url: str | None = Field(
        default=None,
        max_length=MAX_URL_CHARS,
        description="an http(s) URL each item's verdict is POSTed to as it is recorded, "
        "signed with the batch's callback_secret; a public address unless the organizer "
        "allows its network",
        examples=["https://trainer.example.org/kerneljudge"],
    )

    @field_validator("callback_url")
    @classmethod
    def _an_http_url(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                host_and_port(value)
            except Refused as exc:
                raise ValueError(str(exc)) from None
        return value


class BatchItemAccepted(BaseModel):
    key: str
    submission_id: int


class BatchAccepted(BaseModel):
    id: int
    items: list[BatchItemAccepted]
    callback_secret: str | None = Field(
        default=None,
        description="only with a callback_url: the secret each callback is signed with "
        "(HMAC-SHA256); given here and to a retry under the same Idempotency-Key, never again",
    )


class CallbackCounts(BaseModel):
    delivered: int
    failed: int = Field(description="given up: refused, answered 4xx, or every try failed")
    pending: int = Field(description="still being tried")


class BatchItemOut(BaseModel):
    key: str
    submission_id: int
    status: Status
    score: float | None = Field(description="seconds, as a submission's score")
    speedup: SpeedupOut
    error_class: ErrorClass | None
    flags: list[str]
    flag_codes: list[str]


class BatchOut(BaseModel):
    id: int
    status: BatchStatus = Field(description="done once every item has its verdict")
    tier: Tier
    created_at: datetime
    counts: dict[str, int] = Field(description="items by status, every status named")
    items: list[BatchItemOut] = Field(description="in the order they were sent")
    callbacks: CallbackCounts | None = Field(
        default=None, description="the items' callbacks by how they went; null without one"
    )
