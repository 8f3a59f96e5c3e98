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
    ranks_scaled: bool = Field(
        default=False,
        description="graded on fewer ranks than the problem asks for: its worker host offered "
        "fewer GPUs (KJ_WORLD_SIZES), so the score is not comparable with full-size entries",
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
    frozen_at: datetime | None = Field(
        default=None,
        description="while the problem's competition is frozen (from its freeze time until "
        "its final results are published): the leaderboard as it stood then, only "
        "submissions made before it counting; `you` still counts all of yours, ranked "
        "against these entries. Organizers read the live leaderboard: null",
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


class StandingOut(BaseModel):
    """Where a ranked (leaderboard-mode, passed) run stands on its problem's leaderboard for
    its GPU type, as its submission page shows it."""

    problem: str
    gpu: str
    rank: int | None = Field(
        description="its author's rank on the leaderboard: that of their best ranked run, "
        "this one or an earlier one (`best_submission_id`); null when they are not on it"
    )
    entries: int = Field(description="entries on the leaderboard")
    best_submission_id: int | None = Field(
        description="the author's run the leaderboard ranks; null when they are not on it"
    )
    previous_best: float | None = Field(
        description="seconds: the author's best ranked score there before this run; null "
        "for their first ranked run there"
    )
    beats_previous_best: bool = Field(
        description="this run's score is below `previous_best` (an equal one later ranks "
        "below the earlier); false for a first ranked run"
    )
    leader: str | None = Field(description="the user ranked first; null on an empty leaderboard")
    leader_score: float | None = Field(description="seconds: the leader's score")
    version: int | None = Field(
        description="a run on a version before the live leaderboard's: that version's "
        "archived leaderboard, where it is ranked; null: the live leaderboard"
    )
