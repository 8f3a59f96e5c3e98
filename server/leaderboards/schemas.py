"""Response bodies of the leaderboards API."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from server.problems.schemas import BaselineOut, SpeedupOut


class LeaderboardEntry(BaseModel):
    rank: int
    user: str
    score: float = Field(description="seconds: geometric mean of the benchmark cases' medians")
    sol_fraction: float | None = Field(
        default=None,
        description="geometric mean of the benchmark cases' speed-of-light fractions, "
        "where the problem states its roofline",
    )
    short_calls: bool = Field(
        default=False,
        description="most of the score's cases time GPU calls under 50 µs, whose time moves "
        "by a few percent from one process to the next: the score cannot rank finer than that",
    )
    submission_id: int
    submitted_at: datetime
    problem_version: int = Field(description="the problem's version the submission was graded on")
    speedup: SpeedupOut = Field(
        default_factory=SpeedupOut,
        description="the score's speedup over the baselines of its problem version on this GPU "
        "type (the baseline's score over this one's, above 1 is faster); null where none",
    )


class Leaderboard(BaseModel):
    problem: str
    gpu: str
    version: int | None = Field(
        default=None, description="the one version asked for; null for the live leaderboard"
    )
    from_version: int = Field(
        description="the live leaderboard ranks submissions to this version and later"
    )
    total: int = Field(description="entries on the leaderboard, all pages together")
    limit: int = Field(description="at most this many entries from offset on")
    offset: int = Field(description="entries skipped before the first one shown")
    entries: list[LeaderboardEntry] = Field(
        description="best first; ranks count from the top of the whole leaderboard"
    )
    baselines: list[BaselineOut] = Field(
        default_factory=list,
        description="the problem's reference as given (eager) and under torch.compile, timed "
        "by a worker of this GPU type in leaderboard mode like a submission: shown beside the "
        "entries, never ranked and never counted in competitions; empty until timed",
    )
    you: LeaderboardEntry | None = Field(
        default=None,
        description="the caller's own entry, when a bearer token is sent and its user is on "
        "the leaderboard (wherever the page is)",
    )
