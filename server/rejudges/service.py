"""Rejudges (DOMjudge's model): an organizer selects submissions by problem, version,
status, user and time, they are graded again as a review set, the preview says what would
change, and the organizer applies or discards the set as a whole.

Rules: at least one filter; only graded submissions of users' own are selected (no review
set's run, nothing queued or running); at most ``KJ_REJUDGE_MAX_SUBMISSIONS`` of them, none
in another rejudge not decided yet (a submission has one pending new verdict at most). Each
is graded again once against its problem's current version, as a run of the review set
(server/competitions/judging.py's ``queue_run``: a submission of its own, ``judging_id``
set, on no board and in no count until applied). Applying, once every run has a verdict,
keeps each original's verdict in its history (``submission_verdicts``) and gives it the
run's, then brings the boards up to date; an original an organizer re-ran meanwhile keeps
its own. Discarding keeps the runs and changes nothing. Every step is audited.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from grader.report import TERMINAL_STATUSES, Mode, Status
from server.audit import service as audit
from server.competitions import repository as review_sets
from server.competitions.judging import READY, queue_run, settle, status_of
from server.competitions.schemas import Kind, Stored
from server.errors import BadRequest, Conflict, NotFound
from server.leaderboards import upkeep
from server.leaderboards.repository import is_ranked
from server.models import Competition, Judging, Submission, User, utcnow
from server.problems import repository as problem_repository
from server.rejudges import repository
from server.settings import Settings
from server.submissions import repository as submission_repository
from server.submissions.service import keep_verdict, verdict_of
from server.users import repository as user_repository

FILTERS = ("problem", "version", "status", "user", "since", "until")


@dataclass(frozen=True)
class Selection:
    """What a rejudge selects, as the organizer gave it (None: any)."""

    problem: str | None = None
    version: int | None = None
    status: str | None = None
    user: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def given(self) -> dict[str, Any]:
        """The filters given, JSON-safe (kept with the rejudge)."""
        found: dict[str, Any] = {}
        for name in FILTERS:
            value = getattr(self, name)
            if value is not None:
                found[name] = value.isoformat() if isinstance(value, datetime) else value
        return found


@dataclass(frozen=True)
class Change:
    """One selected submission beside its run."""

    original: Submission
    run: Submission

    @property
    def graded(self) -> bool:
        return self.run.status in TERMINAL_STATUSES

    @property
    def changed(self) -> bool:
        return self.graded and (self.run.status, self.run.score) != (
            self.original.status,
            self.original.score,
        )

    @property
    def now_fails(self) -> bool:
        return self.graded and self.original.status == Status.PASSED and not self.passes

    @property
    def now_passes(self) -> bool:
        return self.original.status != Status.PASSED and self.passes

    @property
    def passes(self) -> bool:
        return self.run.status == Status.PASSED


@dataclass(frozen=True)
class Move:
    """A user whose place on a leaderboard (problem, device type, version) the rejudge would
    change; None: not on that board."""

    problem: str
    gpu: str
    version: int
    user: str
    rank_before: int | None
    rank_after: int | None


@dataclass(frozen=True)
class Preview:
    rejudge: Judging
    status: str
    changes: list[Change]
    moves: list[Move] = field(default_factory=list)


# Starting


def start(
    session: Session,
    settings: Settings,
    selection: Selection,
    actor: User | None,
    competition: Competition | None = None,
) -> tuple[Judging, int]:
    """A new rejudge of the submissions ``selection`` matches, each queued once; the rejudge
    and how many. Started from a competition's review page (``competition``), its runs on
    the competition's GPU type go to its ``judging_queue`` where it names one. A bad filter,
    an empty selection or one over the cap is a BadRequest (422) naming what is wrong;
    audited as ``rejudge.start``."""
    given = selection.given()
    if not given:
        raise BadRequest(f"choose at least one filter: {', '.join(FILTERS)}")
    problem = None
    if selection.problem is not None:
        problem = problem_repository.get_problem(session, selection.problem, light=True)
        if problem is None:
            raise BadRequest(f"problem: no problem named {selection.problem!r}")
    if selection.version is not None:
        if problem is None:
            raise BadRequest("version: give the problem whose version it is")
        if not 1 <= selection.version <= problem.version:
            raise BadRequest(
                f"version: problem {problem.name!r} has versions 1 to {problem.version}, "
                f"not {selection.version}"
            )
    terminal = [str(s) for s in TERMINAL_STATUSES]
    if selection.status is not None and selection.status not in terminal:
        raise BadRequest(
            f"status: {selection.status!r} is no verdict; choose one of {', '.join(terminal)}"
        )
    user = None
    if selection.user is not None:
        user = user_repository.get_user_by_name(session, selection.user)
        if user is None:
            raise BadRequest(f"user: no user named {selection.user!r}")
    for name in ("since", "until"):
        moment = getattr(selection, name)
        if moment is not None and moment.tzinfo is None:
            raise BadRequest(f"{name}: give the time with its time zone (Z or +02:00)")
    if (
        selection.since is not None
        and selection.until is not None
        and selection.until <= selection.since
    ):
        raise BadRequest("until: must be after since")
    conditions = repository.matching(
        problem_id=problem.id if problem is not None else None,
        version=selection.version,
        status=selection.status,
        user_id=user.id if user is not None else None,
        since=selection.since,
        until=selection.until,
    )
    found = repository.count(session, conditions)
    if found == 0:
        raise BadRequest(f"no graded submission matches {given}: nothing to rejudge")
    cap = settings.rejudge_max_submissions
    if found > cap:
        raise BadRequest(
            f"{found} submissions match {given}; a rejudge takes at most {cap} "
            "(KJ_REJUDGE_MAX_SUBMISSIONS): narrow the selection"
        )
    held = repository.undecided_holding(session, conditions)
    if held:
        raise Conflict(
            f"rejudge {', '.join(map(str, held))} already grades some of these submissions: "
            "apply or discard it first"
        )
    rejudge = Judging(
        kind=Kind.REJUDGE.value,
        competition_id=None,
        runs=1,
        status=Stored.RUNNING.value,
        selection=given,
        created_at=utcnow(),
        created_by_id=actor.id if actor is not None else None,
    )
    session.add(rejudge)
    session.flush()
    for original in repository.selected(session, conditions):
        queue_run(
            session, rejudge, original, version=original.problem.version, competition=competition
        )
    audited(session, actor, rejudge, "rejudge.start", {"selection": given, "submissions": found})
    return rejudge, found


# Reading


def get(session: Session, rejudge_id: int, *, for_update: bool = False) -> Judging:
    found = repository.get_rejudge(session, rejudge_id, for_update=for_update)
    if found is None:
        raise NotFound(f"no rejudge {rejudge_id}")
    return found


def of_problems(session: Session, names: Collection[str], limit: int = 200) -> list[Judging]:
    """Of the newest ``limit`` rejudges, those selecting one of these problems."""
    return [
        found
        for found in repository.newest(session, limit)
        if (found.selection or {}).get("problem") in names
    ]


def changes(session: Session, rejudge: Judging) -> list[Change]:
    found = []
    for row, run in review_sets.judging_runs(session, rejudge.id):
        original = session.get(Submission, row.entry_id)
        assert original is not None
        found.append(Change(original=original, run=run))
    return sorted(found, key=lambda c: c.original.id)


def preview(session: Session, rejudge: Judging) -> Preview:
    found = changes(session, rejudge)
    status = status_of(rejudge, [change.run for change in found])
    moves = board_moves(session, found) if status != Stored.APPLIED else []
    return Preview(rejudge=rejudge, status=status, changes=found, moves=moves)


Key = tuple[str, str, int]  # problem, device type, version


def board_moves(session: Session, found: Sequence[Change]) -> list[Move]:
    """Who would move on the leaderboards of the problems whose leaderboard-mode
    submissions are in the set, ranked by the leaderboards' rule (each user's best, ties to
    the earlier submission) before and as if applied (a run not graded yet: unchanged)."""
    by_original = {change.original.id: change for change in found}
    touched = {c.original.problem_id for c in found if c.original.mode == Mode.LEADERBOARD}
    if not touched:
        return []
    standing = repository.ranked_on(session, touched)
    before: list[tuple[Key, Submission, float]] = []
    after: list[tuple[Key, Submission, float]] = []
    for submission in standing:
        assert submission.score is not None
        entry = (board(submission, submission.problem_version), submission, submission.score)
        before.append(entry)
        if submission.id not in by_original:
            after.append(entry)
    for change in found:
        original, run = change.original, change.run
        if (
            change.graded
            and change.passes
            and run.score is not None
            and not original.user.is_banned
        ):
            if original.mode == Mode.LEADERBOARD and not (original.is_hidden or original.is_hacked):
                after.append((board(original, run.problem_version), original, run.score))
        elif not change.graded and is_ranked(original) and not original.user.is_banned:
            assert original.score is not None
            after.append((board(original, original.problem_version), original, original.score))
    ranks_before, ranks_after = ranks(before), ranks(after)
    moves = []
    for key in sorted(set(ranks_before) | set(ranks_after)):
        old, new = ranks_before.get(key, {}), ranks_after.get(key, {})
        for user in sorted(set(old) | set(new)):
            if old.get(user) != new.get(user):
                moves.append(
                    Move(*key, user=user, rank_before=old.get(user), rank_after=new.get(user))
                )
    return moves


def board(submission: Submission, version: int) -> Key:
    return (submission.problem.name, submission.gpu_type, version)


def ranks(entries: Sequence[tuple[Key, Submission, float]]) -> dict[Key, dict[str, int]]:
    """Per board, each user's rank by their best score (ties to the earlier submission)."""
    best: dict[Key, dict[str, tuple[float, datetime, int]]] = {}
    for key, submission, score in entries:
        mine = (score, submission.created_at, submission.id)
        users = best.setdefault(key, {})
        name = submission.user.name
        if name not in users or mine < users[name]:
            users[name] = mine
    return {
        key: {name: rank for rank, name in enumerate(sorted(users, key=users.__getitem__), 1)}
        for key, users in best.items()
    }


# Deciding


def apply(session: Session, rejudge_id: int, actor: User | None) -> Judging:
    """Each original takes its run's verdict, the one it replaces kept in its history; the
    boards follow. Only a ready rejudge; audited as ``rejudge.apply``."""
    rejudge = get(session, rejudge_id, for_update=True)
    found = changes(session, rejudge)
    status = status_of(rejudge, [change.run for change in found])
    if status != READY:
        raise Conflict(
            f"rejudge {rejudge.id} is {status}: only a ready one (every run graded) can be applied"
        )
    applied = skipped = 0
    for change in found:
        original = submission_repository.get_submission(
            session, change.original.id, for_update=True
        )
        assert original is not None
        if original.status not in TERMINAL_STATUSES:
            skipped += 1  # re-run by an organizer since: its own grading stands
            continue
        take_verdict(session, original, change.run)
        applied += 1
    settle(session, rejudge, Stored.APPLIED, actor)
    audited(session, actor, rejudge, "rejudge.apply", {"applied": applied, "skipped": skipped})
    return rejudge


def take_verdict(session: Session, original: Submission, run: Submission) -> None:
    keep_verdict(session, original)
    for name, value in verdict_of(run).items():
        setattr(original, name, value)
    original.short_calls = run.short_calls
    original.ranks_scaled = run.ranks_scaled
    # The old grading's profile goes with its report; the run's comes with its own.
    submission_repository.delete_files(session, original.id)
    submission_repository.move_files(session, run.id, original.id)
    session.flush()
    upkeep.submission_changed(session, original)


def discard(session: Session, rejudge_id: int, actor: User | None) -> Judging:
    """Set the rejudge aside, its runs and verdicts kept; audited as ``rejudge.discard``."""
    rejudge = get(session, rejudge_id, for_update=True)
    if rejudge.status != Stored.RUNNING:
        raise Conflict(f"rejudge {rejudge.id} is {rejudge.status} already")
    settle(session, rejudge, Stored.DISCARDED, actor)
    audited(session, actor, rejudge, "rejudge.discard")
    return rejudge


def audited(
    session: Session,
    actor: User | None,
    rejudge: Judging,
    action: str,
    details: dict[str, Any] | None = None,
) -> None:
    """Record ``action`` on ``rejudge`` in the audit log."""
    audit.record(
        session, actor, action, target_type="rejudge", target=str(rejudge.id), details=details
    )
