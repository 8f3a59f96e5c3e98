"""Keeping the precomputed leaderboards true: each user's best per board
(``leaderboard_entries``) and each board's records (``leaderboard_records``), after a
report is recorded, a submission moderated or a user banned, and rebuilding them whole.

A board is one version of a problem on one device type. Entries are kept for banned users
too (the boards are read without them), so an unban needs no search; records leave banned
users out, since the chart does. Every change bumps the problem's ``leaderboard_revision``.
These run in the caller's transaction and never commit."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from grader.report import Mode
from server.leaderboards import repository
from server.leaderboards.repository import Board
from server.leaderboards.service import CHANGED_IN_SESSION
from server.models import LeaderboardEntry, LeaderboardRecord, Problem, Submission, User
from server.submissions import reports

# Rows of reports read at a time when a rebuild fills in speed-of-light fractions.
BACKFILL_BATCH = 500


def submission_changed(session: Session, submission: Submission) -> bool:
    """Bring the boards this submission is on, was on or holds records of up to date after
    its report was recorded or it was hidden, unhidden, marked or unmarked as hacked, or
    reset for a re-run (which may move it to the problem's current version). Call it after
    changing the submission, in the same transaction. Returns whether any board changed.

    A new report costs a few indexed lookups: the user's entry and the board's last record
    are compared with it. Only when the submission was its user's best, or held a record,
    is the next best looked up in the submissions table. A test or benchmark run is never
    on a board and costs nothing."""
    if submission.mode != Mode.LEADERBOARD:
        return False
    session.flush()
    repository.lock_problems(session, [submission.problem_id])
    store_sol_fraction(submission)
    held = repository.records_of_submission(session, submission.problem_id, submission.id)
    boards = {board_of(submission)}
    boards |= {board_of_entry(e) for e in repository.entries_of_submission(session, submission.id)}
    boards |= {board_of_entry(r) for r in held}
    changed = False
    for board in sorted(boards):
        changed |= update_entry(session, board, submission)
        records_held = [r for r in held if board_of_entry(r) == board]
        changed |= update_records(session, board, submission, records_held)
    if changed:
        note_changed(session, [submission.problem_id])
    return changed


def user_changed(session: Session, user: User) -> bool:
    """After a ban or an unban: the user's entries stay (boards are read without banned
    users), and the records of every board they are on are computed again. Returns whether
    any board changed (false for a user with no ranked submission)."""
    session.flush()
    # Locked before the boards are read, so a report being recorded meanwhile is either
    # seen here or sees the ban.
    repository.lock_problems(session, repository.problems_of_user(session, user.id))
    boards = repository.boards_of_user(session, user.id)
    if not boards:
        return False
    for board in sorted(boards):
        repository.clear_board_records(session, board)
        repository.insert_records(session, None, board)
    note_changed(session, [board.problem_id for board in boards])
    return True


def rebuild(session: Session, problem: Problem | None = None) -> None:
    """Compute the entries and records of one problem (or of every problem) again from the
    submissions table, replacing what the tables held, and bump the revision of each problem
    rebuilt. Ranked submissions recorded without a stored speed-of-light fraction get it
    from their report first. For a database from before the tables existed, and after bulk
    loads that bypass ``submission_changed``."""
    session.flush()
    problem_id = problem.id if problem is not None else None
    problem_ids = [problem_id] if problem_id is not None else repository.problem_ids(session)
    repository.lock_problems(session, problem_ids)
    fill_in_sol_fractions(session, problem_id)
    repository.clear_boards(session, problem_id)
    repository.insert_entries(session, problem_id)
    repository.insert_records(session, problem_id)
    note_changed(session, problem_ids)


def rebuild_if_empty(session: Session) -> bool:
    """``rebuild`` everything when the tables hold no entry but some submission is ranked:
    a database from before they existed (call it on start). Otherwise it costs one lookup,
    or two when no submission is ranked yet. Returns whether it rebuilt."""
    if repository.has_entries(session) or not repository.has_ranked(session):
        return False
    rebuild(session)
    return True


def board_of(submission: Submission) -> Board:
    return Board(submission.problem_id, submission.gpu_type, submission.problem_version)


def board_of_entry(row: LeaderboardEntry | LeaderboardRecord) -> Board:
    return Board(row.problem_id, row.gpu_type, row.problem_version)


def update_entry(session: Session, board: Board, submission: Submission) -> bool:
    """The submission's user's entry on the board. It only ever gets better by this
    submission; if it was this submission, the user's best is looked up again."""
    entry = repository.get_entry(session, board, submission.user_id)
    here = repository.is_ranked(submission) and board_of(submission) == board
    if entry is None:
        if not here:
            return False
        entry = LeaderboardEntry(
            problem_id=board.problem_id,
            gpu_type=board.gpu_type,
            problem_version=board.version,
            user_id=submission.user_id,
        )
        fill_entry(entry, submission)
        session.add(entry)
        return True
    if entry.submission_id != submission.id:
        if here and rank_key(submission) < (entry.score, entry.submitted_at, entry.submission_id):
            return fill_entry(entry, submission)
        return False
    best = repository.best_of_user(session, board, submission.user_id)
    if best is None:
        session.delete(entry)
        return True
    return fill_entry(entry, best)


def rank_key(submission: Submission) -> tuple[float, datetime, int]:
    assert submission.score is not None
    return (submission.score, submission.created_at, submission.id)


def fill_entry(entry: LeaderboardEntry, submission: Submission) -> bool:
    """Point the entry at the submission; returns whether anything changed."""
    assert submission.score is not None
    values = {
        "submission_id": submission.id,
        "score": submission.score,
        "sol_fraction": submission.sol_fraction,
        "short_calls": submission.short_calls,
        "ranks_scaled": submission.ranks_scaled,
        "submitted_at": submission.created_at,
    }
    changed = False
    for name, value in values.items():
        if getattr(entry, name) != value:
            setattr(entry, name, value)
            changed = True
    return changed


def update_records(
    session: Session, board: Board, submission: Submission, held: list[LeaderboardRecord]
) -> bool:
    """The board's records, given that this submission changed. ``held``: the records it
    holds on this board (none or one)."""
    # The ban as committed (read past the session's own copy of the user): a ban committed
    # while this waited for the problem's lock counts.
    counts = (
        repository.is_ranked(submission)
        and board_of(submission) == board
        and not repository.is_banned(session, submission.user_id)
    )
    if held:
        record = held[0]
        if counts and (record.score, record.at) == (submission.score, submission.created_at):
            return False
        redo_records_from(session, board, record)
        return True
    if not counts:
        return False  # it held no record, so it was never the best so far
    assert submission.score is not None
    moment = (submission.created_at, submission.id)
    last = repository.last_record(session, board)
    if last is None or (last.at, last.submission_id) < moment:
        if last is not None and submission.score >= last.score:
            return False
        session.add(record_of(board, submission))
        return True
    # Graded after a later submission set a record: a record if it beats every earlier
    # one, and then the later records it does not beat are records no more.
    records = repository.board_records(session, board)
    before = [r for r in records if (r.at, r.submission_id) < moment]
    if before and submission.score >= before[-1].score:
        return False
    session.add(record_of(board, submission))
    for later in records[len(before) :]:
        if later.score >= submission.score:
            session.delete(later)
    return True


def redo_records_from(session: Session, board: Board, removed: LeaderboardRecord) -> None:
    """The records before ``removed`` stand; those from it on are found again among the
    board's ranked submissions that beat the last record standing."""
    records = repository.board_records(session, board)
    kept = [r for r in records if (r.at, r.submission_id) < (removed.at, removed.submission_id)]
    for record in records[len(kept) :]:
        session.delete(record)
    last = kept[-1] if kept else None
    best = last.score if last is not None else None
    after = (last.at, last.submission_id) if last is not None else None
    for at, score, user_id, submission_id in repository.ranked_after(session, board, after, best):
        if score is not None and (best is None or score < best):
            session.add(
                LeaderboardRecord(
                    problem_id=board.problem_id,
                    gpu_type=board.gpu_type,
                    problem_version=board.version,
                    at=at,
                    score=score,
                    user_id=user_id,
                    submission_id=submission_id,
                )
            )
            best = score


def record_of(board: Board, submission: Submission) -> LeaderboardRecord:
    assert submission.score is not None
    return LeaderboardRecord(
        problem_id=board.problem_id,
        gpu_type=board.gpu_type,
        problem_version=board.version,
        at=submission.created_at,
        score=submission.score,
        user_id=submission.user_id,
        submission_id=submission.id,
    )


def store_sol_fraction(submission: Submission) -> None:
    """A ranked submission's speed-of-light fraction, from its report if it was recorded
    without one (the entry shows it)."""
    if submission.sol_fraction is None and repository.is_ranked(submission):
        report = reports.stored(submission)
        submission.sol_fraction = report.sol_fraction if report is not None else None


def fill_in_sol_fractions(session: Session, problem_id: int | None) -> None:
    after = 0
    while rows := repository.unscored_reports(session, problem_id, after, BACKFILL_BATCH):
        # Only ranked submissions' reports: leaderboard mode's.
        fractions = {
            sid: reports.from_storage(
                kept, problem="", mode=Mode.LEADERBOARD, row_id=sid
            ).sol_fraction
            for sid, kept in rows
        }
        repository.set_sol_fractions(
            session, {sid: f for sid, f in fractions.items() if f is not None}
        )
        after = rows[-1][0]


def note_changed(session: Session, problem_ids: list[int]) -> None:
    repository.bump_revisions(session, problem_ids)
    session.info[CHANGED_IN_SESSION] = True
