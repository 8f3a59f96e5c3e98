"""A competition's file (YAML for `kerneljudge competition add`, the same fields as JSON for
the REST API), validated once here, and the API's request and response bodies."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from enum import StrEnum
from itertools import pairwise
from typing import Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from server.competitions.scoring import Scoring

COMPETITION_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# A team's name: shown on boards and written in URLs, so no control characters and no '/'.
TEAM_NAME = re.compile(r"^[^\x00-\x1f\x7f/]{1,64}$")
MAX_PROBLEMS = 50
MAX_TEAM_SIZE = 100
MAX_FINAL_RUNS = 20
# A queue a worker takes jobs from (`kerneljudge worker --queues NAME`): no comma (the option
# splits on them), and no longer than a worker's hello may name (server/worker/recorders.py).
QUEUE_NAME = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)*$")
QUEUE_NAME_MAX = 32
# The service's own queues, which grade nothing.
SERVICE_QUEUES = ("results", "callbacks")


class Phase(StrEnum):
    """Where a competition stands: it takes counting submissions only while open."""

    UPCOMING = "upcoming"
    OPEN = "open"
    CLOSED = "closed"


class Kind(StrEnum):
    """What a review set (a ``Judging`` row) is: a competition's final judging
    (server/competitions/judging.py), or an organizer's rejudge of selected submissions
    (server/rejudges/)."""

    FINAL = "final"
    REJUDGE = "rejudge"


class Stored(StrEnum):
    """A review set's status as stored; ``ready`` is read from its runs."""

    RUNNING = "running"
    PUBLISHED = "published"  # a final judging
    APPLIED = "applied"  # a rejudge
    DISCARDED = "discarded"


class ProblemInFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, description="an existing problem")
    weight: float = Field(
        default=1.0, gt=0, le=1000, allow_inf_nan=False, description="what it counts for"
    )
    baseline_s: float | None = Field(
        default=None,
        gt=0,
        allow_inf_nan=False,
        description="the reference's time on the competition's GPU type, in seconds: "
        "geomean_speedup's baseline, overriding the one a worker timed (the reference's eager "
        "baseline on the problem's live version); with neither, the problem is left out of "
        "the totals",
    )


class Pin(BaseModel):
    """The worker fingerprint a competition's final judging expects (grader/report.py's
    Fingerprint): each field given must match a run's report, or the preview flags it."""

    model_config = ConfigDict(extra="forbid")

    device_name: str | None = Field(default=None, max_length=200, examples=["NVIDIA H200"])
    driver: str | None = Field(default=None, max_length=64, examples=["570.124.06"])
    torch: str | None = Field(default=None, max_length=64, examples=["2.9.0+cu128"])

    @model_validator(mode="after")
    def names_something(self) -> Self:
        if self.device_name is None and self.driver is None and self.torch is None:
            raise ValueError("a pin names at least one of device_name, driver and torch")
        return self


class CompetitionFile(BaseModel):
    """A competition as its organizers write it (docs/competitions.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        max_length=64,
        description="its URL name: lowercase letters, digits and hyphens",
        examples=["spring-sprint"],
    )
    title: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=100_000, description="Markdown")
    problems: list[ProblemInFile] = Field(min_length=1, max_length=MAX_PROBLEMS)
    gpu: str = Field(min_length=1, max_length=32, description="the GPU type it ranks on")
    opens_at: AwareDatetime
    closes_at: AwareDatetime
    freeze_at: AwareDatetime | None = Field(
        default=None,
        description="from then until the final results are published, the public standings "
        "count only submissions made before it",
    )
    scoring: Scoring
    team_size: int = Field(ge=1, le=MAX_TEAM_SIZE, description="1: individuals")
    final_runs: int = Field(
        default=5,
        ge=1,
        le=MAX_FINAL_RUNS,
        description="gradings of each entry at the final judging",
    )
    points_table: list[float] | None = Field(
        default=None,
        min_length=1,
        max_length=1000,
        description="rank_points only: the points of rank 1, 2, ... on each problem (0 past "
        "its end); default 100 / rank",
    )
    pin: Pin | None = Field(
        default=None,
        description="the worker fingerprint the final judging expects: its preview flags "
        "every run graded elsewhere",
    )
    judging_queue: str | None = Field(
        default=None,
        max_length=QUEUE_NAME_MAX,
        description="the queue the final judging's runs go to instead of the GPU type's: the "
        "pinned machines' workers take it (`kerneljudge worker --queues NAME`); none: the GPU "
        "type's queue",
        examples=["h200-final"],
    )

    @field_validator("name")
    @classmethod
    def url_name(cls, name: str) -> str:
        if not COMPETITION_NAME.match(name):
            raise ValueError(
                f"{name!r} cannot be a competition's name, which is its URL: use lowercase "
                "letters, digits and single hyphens between them (e.g. spring-sprint)"
            )
        return name

    @field_validator("opens_at", "closes_at", "freeze_at")
    @classmethod
    def in_utc(cls, moment: datetime | None) -> datetime | None:
        return None if moment is None else moment.astimezone(UTC)

    @field_validator("gpu")
    @classmethod
    def device_type(cls, gpu: str) -> str:
        return gpu.strip().lower()

    @field_validator("judging_queue")
    @classmethod
    def queue_name(cls, queue: str | None) -> str | None:
        if queue is None:
            return None
        if not QUEUE_NAME.match(queue):
            raise ValueError(
                f"{queue!r} cannot be a queue's name: use lowercase letters and digits, with "
                "single hyphens or underscores between them (e.g. h200-final)"
            )
        if queue in SERVICE_QUEUES:
            raise ValueError(f"{queue!r} is the service's own queue, which grades nothing")
        return queue

    @field_validator("problems")
    @classmethod
    def each_problem_once(cls, problems: list[ProblemInFile]) -> list[ProblemInFile]:
        names = [problem.name for problem in problems]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"each problem once: {', '.join(twice)} is listed more than once")
        return problems

    @field_validator("points_table")
    @classmethod
    def points_fall_with_rank(cls, table: list[float] | None) -> list[float] | None:
        if table is None:
            return None
        if any(not math.isfinite(points) or points < 0 for points in table):
            raise ValueError("points are finite numbers, 0 or more")
        if any(later > earlier for earlier, later in pairwise(table)):
            raise ValueError("a better rank never gets fewer points: list them from rank 1 down")
        return table

    @model_validator(mode="after")
    def consistent(self) -> Self:
        if self.opens_at >= self.closes_at:
            raise ValueError("opens_at must come before closes_at")
        if self.freeze_at is not None and not self.opens_at < self.freeze_at <= self.closes_at:
            raise ValueError("freeze_at must come after opens_at, and not after closes_at")
        if self.points_table is not None and self.scoring != Scoring.RANK_POINTS:
            raise ValueError(
                f"points_table is for scoring rank_points; this competition's is {self.scoring}"
            )
        return self


def file_errors(exc: ValidationError) -> str:
    """A validation error as one line per mistake: where in the file, and what is wrong."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return "\n".join(lines)


# Teams


class TeamCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1, max_length=64, description="unique in the competition, whatever its case"
    )

    @field_validator("name")
    @classmethod
    def shown_name(cls, name: str) -> str:
        name = " ".join(name.split())
        if not TEAM_NAME.match(name):
            raise ValueError("a team's name is 1-64 characters, without '/'")
        return name


class JoinRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    invite: str = Field(min_length=1, max_length=64, description="the team's invite code")


class TeamOut(BaseModel):
    team: str
    invite: str = Field(description="whoever holds it may join the team (until it is full)")
    members: list[str] = Field(description="in the order they joined")


class DisqualifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        min_length=1, max_length=1000, description="shown on the standings with the team"
    )

    @field_validator("reason")
    @classmethod
    def said(cls, reason: str) -> str:
        if not reason.strip():
            raise ValueError("say why the team is disqualified")
        return reason.strip()


class Disqualification(BaseModel):
    reason: str
    at: datetime


class DisqualifiedOut(BaseModel):
    team: str
    disqualified: Disqualification


# Competitions


class CompetitionProblemOut(BaseModel):
    name: str
    weight: float
    baseline_s: float | None


class CompetitionSummary(BaseModel):
    name: str
    title: str
    gpu: str
    opens_at: datetime
    closes_at: datetime
    freeze_at: datetime | None
    scoring: Scoring
    team_size: int
    status: Phase = Field(description="upcoming, open (counting submissions) or closed")
    teams: int = Field(description="teams entered, disqualified ones included")


class CompetitionOut(CompetitionSummary):
    description: str = Field(description="Markdown")
    problems: list[CompetitionProblemOut] = Field(
        description="in order; a problem not yet shown to competitors is listed to admins only"
    )
    final_runs: int
    points_table: list[float] | None
    pin: Pin | None = None
    judging_queue: str | None = Field(
        default=None,
        description="the queue its final judging's runs go to (none: the GPU type's)",
    )
    created_at: datetime
    updated_at: datetime
    your_team: TeamOut | None = Field(
        default=None, description="the caller's team, when a token is sent and its user is in one"
    )


class CompetitionSaved(CompetitionOut):
    changed: list[str] = Field(
        default_factory=list, description="the fields an edit changed (none: nothing to do)"
    )


# Standings


class ProblemCellOut(BaseModel):
    rank: int = Field(description="among the problem's entries on this board")
    score: float = Field(description="the entry's score, in seconds")
    submission_id: int
    submitted_at: datetime
    value: float | None = Field(
        description="what the entry counts for under the scoring rule: points (rank_points), "
        "its rank (mean_rank), its speedup over the baseline (geomean_speedup; null while the "
        "problem has no baseline), its speed-of-light fraction (sol_fraction)"
    )


class StandingsRow(BaseModel):
    rank: int | None = Field(
        description="null for a team without any counting entry, and for a disqualified one"
    )
    team: str
    members: list[str]
    total: float | None
    problems: dict[str, ProblemCellOut] = Field(
        description="by problem name; a problem the team has no entry for is absent"
    )
    reached_at: datetime | None = Field(
        default=None,
        description="when the team's entries were all in place (the latest submission behind "
        "them): equal totals go to the earlier",
    )
    disqualified: Disqualification | None = None
    yours: bool = Field(default=False, description="the caller's own team")
    live: bool = Field(
        default=False,
        description="while the board is frozen: this row (the caller's own) counts every "
        "submission, and its rank is where that would place it against the frozen rows",
    )


class StandingsOut(BaseModel):
    competition: str
    title: str
    scoring: Scoring
    gpu: str
    status: Phase
    opens_at: datetime
    closes_at: datetime
    freeze_at: datetime | None
    frozen: bool = Field(
        description="the rows count only submissions made before freeze_at (everyone but the "
        "organizers, from freeze_at until the final results are published)"
    )
    final: bool = Field(description="the final results are published")
    problems: list[CompetitionProblemOut]
    notes: list[str] = Field(description="what a reader should know about these standings")
    rows: list[StandingsRow] = Field(
        description="in rank order; then teams without an entry; disqualified teams last"
    )
