"""Queries for leaderboards: the precomputed boards (``leaderboard_entries``) and records
(``leaderboard_records``), and the submissions they are computed from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Label,
    Row,
    Subquery,
    and_,
    delete,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.orm import QueryableAttribute, Session

from grader.report import Mode, Status
from server.models import LeaderboardEntry, LeaderboardRecord, Problem, Submission, User


@dataclass(frozen=True)
class Versions:
    """Which versions of a problem a leaderboard ranks: ``first`` and later, or ``only``."""

    first: int = 1
    only: int | None = None

    def condition(self, column: Any = Submission.problem_version) -> ColumnElement[bool]:
        if self.only is not None:
            return column == self.only
        return column >= self.first


class Board(NamedTuple):
    """One version's board on one device type: what an entry and a record belong to."""

    problem_id: int
    gpu_type: str
    version: int


def _ranked_terms(submission: Any) -> tuple[Any, ...]:
    """What puts a submission on a leaderboard: a passed, scored leaderboard-mode run that
    organizers have neither hidden nor marked as hacked, and no final judging's run (its
    user's ban is checked apart).
    Stated once for both readings: on the `Submission` class each term is SQL (`ranked`),
    on a submission in memory a bool (`is_ranked`)."""
    return (
        submission.mode == Mode.LEADERBOARD,
        submission.status == Status.PASSED,
        submission.score != None,  # noqa: E711  (SQL: IS NOT NULL)
        submission.is_hidden == False,  # noqa: E712  (SQL: = false)
        submission.is_hacked == False,  # noqa: E712
        submission.judging_id == None,  # noqa: E711
    )


def ranked() -> list[ColumnElement[bool]]:
    """The ranked rule as SQL conditions on `Submission`."""
    return list(_ranked_terms(Submission))


def is_ranked(submission: Submission) -> bool:
    """The ranked rule for one submission in memory (its user's ban aside)."""
    return all(_ranked_terms(submission))


def best_first(*group: QueryableAttribute[Any]) -> Label[int]:
    """Each submission's place in its group, labelled ``place``: the lower score first, then
    the earlier, then the lower id (the order of every board and every team's entry)."""
    return (
        func.row_number()
        .over(partition_by=group, order_by=(Submission.score, Submission.created_at, Submission.id))
        .label("place")
    )


def ranked_conditions(
    problem_id: int, gpu_type: str, versions: Versions
) -> list[ColumnElement[bool]]:
    """A ranked submission on a problem's versions ``versions`` on one device type."""
    return [
        Submission.problem_id == problem_id,
        versions.condition(),
        Submission.gpu_type == gpu_type,
        *ranked(),
    ]


# Reading boards


def board_rows(
    session: Session, problem_id: int, gpu_type: str, versions: Versions
) -> Sequence[Row[int, str, float, float | None, bool, bool, int, datetime, int]]:
    """Entries of unbanned users on the versions ranked, best first (ties to the earlier
    submission): (user id, user name, score, sol fraction, short calls, ranks scaled,
    submission id, submitted at, version). A user appears once per version."""
    return session.execute(
        select(
            LeaderboardEntry.user_id,
            User.name,
            LeaderboardEntry.score,
            LeaderboardEntry.sol_fraction,
            LeaderboardEntry.short_calls,
            LeaderboardEntry.ranks_scaled,
            LeaderboardEntry.submission_id,
            LeaderboardEntry.submitted_at,
            LeaderboardEntry.problem_version,
        )
        .join(User, User.id == LeaderboardEntry.user_id)
        .where(
            LeaderboardEntry.problem_id == problem_id,
            LeaderboardEntry.gpu_type == gpu_type,
            versions.condition(LeaderboardEntry.problem_version),
            User.is_banned.is_(False),
        )
        .order_by(
            LeaderboardEntry.score, LeaderboardEntry.submitted_at, LeaderboardEntry.submission_id
        )
    ).all()


def frozen_rows(
    session: Session, problem_id: int, gpu_type: str, versions: Versions, until: datetime
) -> Sequence[Row[int, str, float, float | None, bool, bool, int, datetime, int]]:
    """``board_rows`` as the board stood at ``until`` (a competition's freeze): each unbanned
    user's best ranked submission made before it, read from the submissions themselves."""
    best = best_ranked(
        Submission.problem_id == problem_id,
        Submission.gpu_type == gpu_type,
        versions.condition(),
        Submission.created_at < until,
    )
    return session.execute(
        select(
            best.c.user_id,
            User.name,
            best.c.score,
            best.c.sol_fraction,
            best.c.short_calls,
            best.c.ranks_scaled,
            best.c.id,
            best.c.created_at,
            best.c.problem_version,
        )
        .join(User, User.id == best.c.user_id)
        .where(best.c.place == 1, User.is_banned.is_(False))
        .order_by(best.c.score, best.c.created_at, best.c.id)
    ).all()


def record_rows(
    session: Session,
    problem_id: int,
    gpu_type: str,
    versions: Versions,
    until: datetime | None = None,
) -> Sequence[Row[datetime, float, str]]:
    """Records of the versions ranked (set before ``until``, where given), oldest first:
    (at, score, user name)."""
    conditions = [
        LeaderboardRecord.problem_id == problem_id,
        LeaderboardRecord.gpu_type == gpu_type,
        versions.condition(LeaderboardRecord.problem_version),
    ]
    if until is not None:
        conditions.append(LeaderboardRecord.at < until)
    return session.execute(
        select(LeaderboardRecord.at, LeaderboardRecord.score, User.name)
        .join(User, User.id == LeaderboardRecord.user_id)
        .where(*conditions)
        .order_by(LeaderboardRecord.at, LeaderboardRecord.submission_id)
    ).all()


def entry_versions(session: Session, problem_id: int) -> list[int]:
    """The versions of a problem with an entry on some device type, oldest first."""
    return list(
        session.scalars(
            select(LeaderboardEntry.problem_version)
            .where(LeaderboardEntry.problem_id == problem_id)
            .distinct()
            .order_by(LeaderboardEntry.problem_version)
        ).all()
    )


def competitor_counts(session: Session, frozen: Mapping[int, datetime]) -> dict[int, int]:
    """Problem id -> how many users have a visible submission to it; for the problems in
    ``frozen`` (problem id -> a competition's freeze), only submissions made before it."""
    before_freeze = [
        and_(Submission.problem_id == problem_id, Submission.created_at < until)
        for problem_id, until in frozen.items()
    ]
    rows = session.execute(
        select(Submission.problem_id, func.count(func.distinct(Submission.user_id)))
        .where(
            Submission.is_hidden.is_(False),
            or_(Submission.problem_id.not_in(list(frozen)), *before_freeze),
        )
        .group_by(Submission.problem_id)
    ).all()
    return {problem_id: count for problem_id, count in rows}


# Keeping boards up to date


def lock_problems(session: Session, problem_ids: Iterable[int]) -> None:
    """Take the problems' rows, in id order, so one change to a problem's boards at a time
    reads and writes them (a no-op on SQLite, which writes one transaction at a time)."""
    ids = sorted(set(problem_ids))
    if ids:
        session.execute(
            select(Problem.id).where(Problem.id.in_(ids)).order_by(Problem.id).with_for_update()
        ).all()


def bump_revisions(session: Session, problem_ids: Iterable[int]) -> None:
    ids = sorted(set(problem_ids))
    if ids:
        session.execute(
            update(Problem)
            .where(Problem.id.in_(ids))
            .values(leaderboard_revision=Problem.leaderboard_revision + 1)
        )


def get_entry(session: Session, board: Board, user_id: int) -> LeaderboardEntry | None:
    return session.scalar(
        select(LeaderboardEntry).where(
            LeaderboardEntry.problem_id == board.problem_id,
            LeaderboardEntry.gpu_type == board.gpu_type,
            LeaderboardEntry.problem_version == board.version,
            LeaderboardEntry.user_id == user_id,
        )
    )


def entries_of_submission(session: Session, submission_id: int) -> Sequence[LeaderboardEntry]:
    return session.scalars(
        select(LeaderboardEntry).where(LeaderboardEntry.submission_id == submission_id)
    ).all()


def problems_of_user(session: Session, user_id: int) -> list[int]:
    """The problems the user has made leaderboard-mode submissions to."""
    return list(
        session.scalars(
            select(Submission.problem_id)
            .where(Submission.user_id == user_id, Submission.mode == Mode.LEADERBOARD)
            .distinct()
        ).all()
    )


def boards_of_user(session: Session, user_id: int) -> list[Board]:
    """Every board the user has an entry on (entries stay while a user is banned)."""
    rows = session.execute(
        select(
            LeaderboardEntry.problem_id,
            LeaderboardEntry.gpu_type,
            LeaderboardEntry.problem_version,
        )
        .where(LeaderboardEntry.user_id == user_id)
        .distinct()
    ).all()
    return [Board(*row) for row in rows]


def best_of_user(session: Session, board: Board, user_id: int) -> Submission | None:
    """The user's best ranked submission on the board: lowest score, then earliest."""
    return session.scalar(
        select(Submission)
        .where(
            Submission.user_id == user_id,
            *ranked_conditions(board.problem_id, board.gpu_type, Versions(only=board.version)),
        )
        .order_by(Submission.score, Submission.created_at, Submission.id)
        .limit(1)
    )


def best_before(session: Session, submission: Submission, versions: Versions) -> float | None:
    """The best score of the submission's user among their ranked runs on its problem and
    device type, of the versions ``versions``, made before it (earlier, or at the same moment
    with a lower id)."""
    return session.scalar(
        select(func.min(Submission.score)).where(
            Submission.user_id == submission.user_id,
            *ranked_conditions(submission.problem_id, submission.gpu_type, versions),
            or_(
                Submission.created_at < submission.created_at,
                and_(
                    Submission.created_at == submission.created_at,
                    Submission.id < submission.id,
                ),
            ),
        )
    )


def last_record(session: Session, board: Board) -> LeaderboardRecord | None:
    return session.scalar(
        _board_records(board)
        .order_by(LeaderboardRecord.at.desc(), LeaderboardRecord.submission_id.desc())
        .limit(1)
    )


def board_records(session: Session, board: Board) -> Sequence[LeaderboardRecord]:
    """The board's records, oldest first."""
    return session.scalars(
        _board_records(board).order_by(LeaderboardRecord.at, LeaderboardRecord.submission_id)
    ).all()


def _board_records(board: Board) -> Any:
    return select(LeaderboardRecord).where(
        LeaderboardRecord.problem_id == board.problem_id,
        LeaderboardRecord.gpu_type == board.gpu_type,
        LeaderboardRecord.problem_version == board.version,
    )


def records_of_submission(
    session: Session, problem_id: int, submission_id: int
) -> Sequence[LeaderboardRecord]:
    return session.scalars(
        select(LeaderboardRecord).where(
            LeaderboardRecord.problem_id == problem_id,
            LeaderboardRecord.submission_id == submission_id,
        )
    ).all()


def ranked_after(
    session: Session, board: Board, after: tuple[datetime, int] | None, below: float | None
) -> Sequence[Row[datetime, float | None, int, int]]:
    """Ranked submissions of unbanned users on the board, oldest first, from after the moment
    ``after`` (created at, id) on and scoring below ``below``: the candidates for records
    there. (created at, score, user id, id) each."""
    conditions = [
        *ranked_conditions(board.problem_id, board.gpu_type, Versions(only=board.version)),
        User.is_banned.is_(False),
    ]
    if after is not None:
        at, submission_id = after
        conditions.append(
            or_(
                Submission.created_at > at,
                and_(Submission.created_at == at, Submission.id > submission_id),
            )
        )
    if below is not None:
        conditions.append(Submission.score < below)
    return session.execute(
        select(Submission.created_at, Submission.score, Submission.user_id, Submission.id)
        .join(User, User.id == Submission.user_id)
        .where(*conditions)
        .order_by(Submission.created_at, Submission.id)
    ).all()


def is_banned(session: Session, user_id: int) -> bool:
    return bool(session.scalar(select(User.is_banned).where(User.id == user_id)))


# Rebuilding from the submissions table


def has_entries(session: Session) -> bool:
    return session.scalar(select(LeaderboardEntry.id).limit(1)) is not None


def has_ranked(session: Session) -> bool:
    """Whether any submission is ranked (banned users' included)."""
    return session.scalar(select(Submission.id).where(*ranked()).limit(1)) is not None


def problem_ids(session: Session) -> list[int]:
    return list(session.scalars(select(Problem.id).order_by(Problem.id)).all())


def unscored_reports(
    session: Session, problem_id: int | None, after_id: int, batch: int
) -> Sequence[Row[int, dict[str, Any] | None]]:
    """Ranked submissions (id, report) with a report but no stored speed-of-light fraction,
    in id order from after ``after_id``: recorded before the fraction was stored."""
    query = select(Submission.id, Submission.report).where(
        *ranked(),
        Submission.sol_fraction.is_(None),
        Submission.report.is_not(None),
        Submission.id > after_id,
    )
    if problem_id is not None:
        query = query.where(Submission.problem_id == problem_id)
    return session.execute(query.order_by(Submission.id).limit(batch)).all()


def set_sol_fractions(session: Session, fractions: dict[int, float]) -> None:
    if fractions:
        session.execute(
            update(Submission),
            [{"id": sid, "sol_fraction": fraction} for sid, fraction in fractions.items()],
        )


def clear_boards(session: Session, problem_id: int | None) -> None:
    entries = delete(LeaderboardEntry)
    records = delete(LeaderboardRecord)
    if problem_id is not None:
        entries = entries.where(LeaderboardEntry.problem_id == problem_id)
        records = records.where(LeaderboardRecord.problem_id == problem_id)
    session.execute(entries)
    session.execute(records)


def clear_board_records(session: Session, board: Board) -> None:
    session.execute(
        delete(LeaderboardRecord).where(
            LeaderboardRecord.problem_id == board.problem_id,
            LeaderboardRecord.gpu_type == board.gpu_type,
            LeaderboardRecord.problem_version == board.version,
        )
    )


def best_ranked(*conditions: ColumnElement[bool]) -> Subquery:
    """The ranked submissions meeting ``conditions``, each with its ``place`` among its
    user's on its board (``best_first``: place 1 is the user's entry there)."""
    board = (Submission.problem_id, Submission.gpu_type, Submission.problem_version)
    return (
        select(
            *board,
            Submission.user_id,
            Submission.id,
            Submission.score,
            Submission.sol_fraction,
            Submission.short_calls,
            Submission.ranks_scaled,
            Submission.created_at,
            best_first(*board, Submission.user_id),
        )
        .where(*ranked(), *conditions)
        .subquery()
    )


def insert_entries(session: Session, problem_id: int | None) -> None:
    """Each user's best ranked submission per board, straight from the submissions table."""
    best = best_ranked(*([] if problem_id is None else [Submission.problem_id == problem_id]))
    session.execute(
        insert(LeaderboardEntry).from_select(
            [
                "problem_id",
                "gpu_type",
                "problem_version",
                "user_id",
                "submission_id",
                "score",
                "sol_fraction",
                "short_calls",
                "ranks_scaled",
                "submitted_at",
            ],
            select(
                best.c.problem_id,
                best.c.gpu_type,
                best.c.problem_version,
                best.c.user_id,
                best.c.id,
                best.c.score,
                best.c.sol_fraction,
                best.c.short_calls,
                best.c.ranks_scaled,
                best.c.created_at,
            ).where(best.c.place == 1),
        )
    )


def insert_records(session: Session, problem_id: int | None, board: Board | None = None) -> None:
    """Every ranked submission of an unbanned user that beat all earlier ones on its board
    (strictly: an equal score later is no record), for one problem, one board or all."""
    columns = (Submission.problem_id, Submission.gpu_type, Submission.problem_version)
    conditions = [*ranked(), User.is_banned.is_(False)]
    if board is not None:
        conditions += [
            Submission.problem_id == board.problem_id,
            Submission.gpu_type == board.gpu_type,
            Submission.problem_version == board.version,
        ]
    elif problem_id is not None:
        conditions.append(Submission.problem_id == problem_id)
    history = (
        select(
            *columns,
            Submission.created_at,
            Submission.score,
            Submission.user_id,
            Submission.id,
            func.min(Submission.score)
            .over(
                partition_by=columns,
                order_by=(Submission.created_at, Submission.id),
                rows=(None, -1),
            )
            .label("best_before"),
        )
        .join(User, User.id == Submission.user_id)
        .where(*conditions)
        .subquery()
    )
    session.execute(
        insert(LeaderboardRecord).from_select(
            [
                "problem_id",
                "gpu_type",
                "problem_version",
                "at",
                "score",
                "user_id",
                "submission_id",
            ],
            select(
                history.c.problem_id,
                history.c.gpu_type,
                history.c.problem_version,
                history.c.created_at,
                history.c.score,
                history.c.user_id,
                history.c.id,
            ).where(or_(history.c.best_before.is_(None), history.c.score < history.c.best_before)),
        )
    )


# The columns that say whether a problem read earlier still stands: everything but its
# files, example solutions and description, which change only with its files' digest or
# its update time.
_STAMP = (
    Problem.id,
    Problem.version,
    Problem.files_sha256,
    Problem.updated_at,
    Problem.status,
    Problem.is_public,
    Problem.starts_at,
    Problem.deadline,
    Problem.code_public_after_deadline,
    Problem.leaderboard_from_version,
    Problem.leaderboard_revision,
    Problem.validation_attempt,
    Problem.gpu_types,
)


def problem_stamp(session: Session, name: str) -> tuple[Any, ...] | None:
    row = session.execute(select(*_STAMP).where(Problem.name == name)).first()
    return None if row is None else stamp_values(tuple(row))


def stamp_of(problem: Problem) -> tuple[Any, ...]:
    return stamp_values(tuple(getattr(problem, column.key) for column in _STAMP))


def stamp_values(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Hashable and comparable: the JSON list of device types as a tuple."""
    return tuple(tuple(v) if isinstance(v, list) else v for v in values)
