"""Reading leaderboards for the API and the pages: the live board (from the problem's
``leaderboard_from_version`` on) or one version's, ranked, and the best score over time,
both from the precomputed tables (kept by ``upkeep``) and cached per leaderboard revision.

A problem in a competition whose board is frozen (from its freeze time until its final
results are published) shows everyone but the organizers its board as it stood at the
freeze (``shown``), as the competition's standings do: the reader's own entry counts all
their submissions and is placed against the frozen rows."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Engine, event, inspect
from sqlalchemy.orm import Session, object_session

from grader.baselines import BaselineKind
from server import anonymous
from server.cache import Lru
from server.errors import NotFound
from server.leaderboards import repository
from server.leaderboards.repository import Versions
from server.models import Baseline, Problem, User
from server.problems import baselines
from server.problems import service as problems
from server.problems.baselines import Speedup
from server.problems.schemas import BaselineOut
from server.settings import Settings

# Set in a session's info once it has changed a board or a problem, until it commits or
# rolls back: its reads skip the caches, which must hold only what was committed.
CHANGED_IN_SESSION = "leaderboards.changed"

# How long this process shows problems with their leaderboards (the API, the problem and
# leaderboard pages) as it last read them (who may see them, their versions, their
# leaderboard revision) before asking the database again: a change that another process
# commits (a report the results step records, an update by the command line) shows within
# this; one committed in this process shows at once.
PROBLEM_TTL_S = 0.25


@dataclass(frozen=True)
class Entry:
    rank: int
    user: str
    score: float
    sol_fraction: float | None
    short_calls: bool
    # Graded on fewer ranks than the problem asks for: its worker host offered fewer GPUs.
    ranks_scaled: bool
    submission_id: int
    submitted_at: datetime
    problem_version: int
    user_id: int
    # Over the newest baseline of its problem version on this device type.
    speedup: Speedup = field(default_factory=Speedup)


@dataclass(frozen=True)
class Record:
    """The best score so far changed at this moment, to this user's score."""

    at: datetime
    score: float
    user: str


class BoardKey(NamedTuple):
    """What a board's contents depend on: the database, the problem's revision (counting
    every change to its entries, records and users' bans) and which versions it ranks."""

    database: Engine
    problem_id: int
    revision: int
    from_version: int
    problem_version: int
    gpu_type: str
    version: int | None
    # The board as it stood at this moment (a competition's freeze); None: as it is now.
    until: datetime | None = None

    def validator(self) -> str:
        """The same as text, for an ETag: all but the database, which only tells apart the
        databases one process may serve (tests do)."""
        return ".".join(str(part) for part in self[1:])


@dataclass(frozen=True)
class Standings:
    """A whole leaderboard as of one revision: every entry, best first, ranked."""

    key: BoardKey
    entries: tuple[Entry, ...]
    places: dict[int, int] = field(repr=False)
    # The baselines shown beside the entries, never ranked: those of the version the board
    # is for (the live board: the live version), as timed most recently.
    baseline: Baseline | None = None
    # On a frozen board: the reader's own entry over all their submissions, placed against
    # the frozen rows (see ``shown``).
    own: Entry | None = None

    @property
    def frozen_at(self) -> datetime | None:
        return self.key.until

    @property
    def total(self) -> int:
        return len(self.entries)

    def page(self, offset: int, limit: int) -> tuple[Entry, ...]:
        return self.entries[offset : offset + limit]

    def entry_of(self, user: User | None) -> Entry | None:
        """The user's entry, or None when they are not on this board."""
        if user is None:
            return None
        if self.own is not None and self.own.user_id == user.id:
            return self.own
        place = self.places.get(user.id)
        return None if place is None else self.entries[place]

    def with_own(self, entry: Entry) -> Standings:
        """This board with the reader's ``entry`` from the live board, ranked against the
        other users' rows here (those stay as they are)."""
        ahead = sum(
            1
            for other in self.entries
            if other.user_id != entry.user_id
            and (other.score, other.submitted_at, other.submission_id)
            < (entry.score, entry.submitted_at, entry.submission_id)
        )
        return replace(self, own=replace(entry, rank=ahead + 1))


@dataclass(frozen=True)
class HeldProblem:
    problem: Problem  # a copy in no session, shared by the request threads: read only
    until: float  # time.monotonic()
    stamp: tuple[Any, ...]  # its small columns as read (see repository.problem_stamp)


# Boards read recently, a few hundred at most (a board of 10,000 entries is about 2 MB).
_standings: Lru[Standings] = Lru(256)
_records: Lru[list[Record]] = Lru(256)
_problems: Lru[HeldProblem] = Lru(256)


def readable_problem(session: Session, name: str, viewer: User | None) -> Problem:
    """``problems.get_visible_problem`` for showing a problem with its leaderboard, where a
    read is mostly this: the problem as read at most ``PROBLEM_TTL_S`` ago (a copy in no
    session), its visibility checked again for this viewer. A hit costs no query at all;
    after ``PROBLEM_TTL_S`` one small query tells whether the copy still stands, and only a
    problem that changed is read again whole (its files are most of it)."""
    key = (session.get_bind().engine, name)
    held = None if session.info.get(CHANGED_IN_SESSION) else _problems.get(key)
    now = time.monotonic()
    if held is not None and held.until < now:
        if repository.problem_stamp(session, name) == held.stamp:
            held = HeldProblem(held.problem, now + PROBLEM_TTL_S, held.stamp)
            _problems.put(key, held)
        else:
            held = None
    if held is None:
        problem = problems.get_visible_problem(session, name, viewer)
        stamp = repository.stamp_of(problem)
        _problems.put(key, HeldProblem(copy_of(problem), now + PROBLEM_TTL_S, stamp))
        return problem
    if not (problems.is_admin(viewer) or problems.shown_to_everyone(session, held.problem)):
        raise NotFound(problems.hidden_message(session, held.problem, name))
    return held.problem


_PROBLEM_COLUMNS = inspect(Problem).column_attrs


def copy_of(problem: Problem) -> Problem:
    """The problem's columns in a new object that belongs to no session."""
    return Problem(**{column.key: getattr(problem, column.key) for column in _PROBLEM_COLUMNS})


def choose_gpu(problem: Problem, settings: Settings, gpu: str | None) -> str:
    """The board's device type: a submission's rule, with an empty ``?gpu=`` read as none."""
    return problems.choose_gpu_type(problem, settings, gpu or None)


def versions_ranked(problem: Problem, version: int | None) -> Versions:
    """The live board ranks the versions from ``leaderboard_from_version`` on (all of them
    when updates carried it over); ``version`` asks for that one version's board."""
    if version is None:
        return Versions(first=problem.leaderboard_from_version)
    if not 1 <= version <= problem.version:
        raise NotFound(f"problem {problem.name!r} has no version {version}")
    return Versions(only=version)


def board_key(
    session: Session,
    problem: Problem,
    gpu_type: str,
    version: int | None,
    until: datetime | None = None,
) -> BoardKey:
    return BoardKey(
        session.get_bind().engine,
        problem.id,
        problem.leaderboard_revision,
        problem.leaderboard_from_version,
        problem.version,
        gpu_type,
        version,
        until,
    )


def frozen_for(
    session: Session, viewer: User | None, problem_ids: list[int] | None = None
) -> dict[int, datetime]:
    """The problems (of these, or of all) whose boards ``viewer`` reads as at a freeze, each
    with its freeze time: none for organizers, who always read the live boards."""
    return {} if problems.is_admin(viewer) else problems.frozen_since(session, problem_ids)


def frozen_at(session: Session, problem: Problem, viewer: User | None) -> datetime | None:
    """When the board ``viewer`` reads stopped moving: the freeze of a competition of the
    problem whose final results are not published yet; None for the live board."""
    return frozen_for(session, viewer, [problem.id]).get(problem.id)


def shown(
    session: Session,
    problem: Problem,
    gpu_type: str,
    version: int | None,
    viewer: User | None,
) -> Standings:
    """The board as ``viewer`` may read it: the live one (``standings``), or while the
    problem's competition is frozen the board as of its freeze, with the viewer's own entry
    from the live board (``Standings.with_own``)."""
    until = frozen_at(session, problem, viewer)
    if until is None:
        return standings(session, problem, gpu_type, version)
    board = standings(session, problem, gpu_type, version, until)
    mine = standings(session, problem, gpu_type, version).entry_of(viewer)
    return board if mine is None else board.with_own(mine)


def standings(
    session: Session,
    problem: Problem,
    gpu_type: str,
    version: int | None = None,
    until: datetime | None = None,
) -> Standings:
    """The board (``version`` None: the live one). Each user's best entry among the versions
    ranked, lowest score first, ties to the earlier submission (then the lower id); with
    ``until``, among their submissions made before it."""
    versions = versions_ranked(problem, version)
    key = board_key(session, problem, gpu_type, version, until)

    def read() -> Standings:
        entries: list[Entry] = []
        place: dict[int, int] = {}
        timed = baselines.newest(session, problem.id, gpu_type)
        for (
            user_id,
            name,
            score,
            fraction,
            short_calls,
            ranks_scaled,
            sid,
            submitted_at,
            problem_version,
        ) in (
            repository.board_rows(session, problem.id, gpu_type, versions)
            if until is None
            else repository.frozen_rows(session, problem.id, gpu_type, versions, until)
        ):
            if user_id in place:  # a better entry of theirs on another version came first
                continue
            place[user_id] = len(entries)
            entries.append(
                Entry(
                    rank=len(entries) + 1,
                    user=name,
                    score=score,
                    sol_fraction=fraction,
                    short_calls=short_calls,
                    ranks_scaled=ranks_scaled,
                    submission_id=sid,
                    submitted_at=submitted_at,
                    problem_version=problem_version,
                    user_id=user_id,
                    speedup=Speedup.of(score, timed.get(problem_version)),
                )
            )
        shown = timed.get(problem.version if version is None else version)
        if shown is not None:
            session.expunge(shown)  # kept in the cache, read by other sessions' threads
        return Standings(key=key, entries=tuple(entries), places=place, baseline=shown)

    if session.info.get(CHANGED_IN_SESSION):
        return read()
    return _standings.get_or_make(key, read)


def baseline_rows(baseline: Baseline | None) -> list[BaselineOut]:
    """The board's baselines as rows beside its entries: eager, then compile."""
    if baseline is None:
        return []
    device = (baseline.fingerprint or {}).get("device_name")
    return [
        BaselineOut(
            kind=kind,
            score=score,
            why_not=why,
            problem_version=baseline.problem_version,
            device_name=device,
            timed_at=baseline.finished_at,
        )
        for kind, score, why in (
            (BaselineKind.EAGER, baseline.eager_s, baseline.eager_error),
            (BaselineKind.COMPILE, baseline.compile_s, baseline.compile_error),
        )
    ]


def entries(
    session: Session, problem: Problem, gpu_type: str, version: int | None = None
) -> list[Entry]:
    return list(standings(session, problem, gpu_type, version).entries)


def records(
    session: Session,
    problem: Problem,
    gpu_type: str,
    version: int | None = None,
    until: datetime | None = None,
) -> list[Record]:
    """Each moment the best score improved (before ``until``, where given), oldest first.
    The live board's are the records of its versions that beat every earlier one of the
    others too."""
    versions = versions_ranked(problem, version)

    def read() -> list[Record]:
        best: list[Record] = []
        rows = repository.record_rows(session, problem.id, gpu_type, versions, until)
        for at, score, user in rows:
            if not best or score < best[-1].score:
                best.append(Record(at=at, score=score, user=user))
        return best

    if session.info.get(CHANGED_IN_SESSION):
        return read()
    key = board_key(session, problem, gpu_type, version, until)
    return list(_records.get_or_make(key, read))


def archived_versions(session: Session, problem: Problem) -> list[int]:
    """Versions before the live board's with entries: their boards are archived."""
    return [
        v
        for v in repository.entry_versions(session, problem.id)
        if v < problem.leaderboard_from_version
    ]


def competitor_counts(session: Session, viewer: User | None) -> dict[int, int]:
    """Problem id -> how many users have a visible run on it, as ``viewer`` may know it: on
    a frozen competition's problems, those whose runs came before the freeze (organizers
    count everyone)."""
    return repository.competitor_counts(session, frozen_for(session, viewer))


@event.listens_for(Problem, "after_insert")
@event.listens_for(Problem, "after_update")
@event.listens_for(Problem, "after_delete")
def _problem_written(_mapper: Any, _connection: Any, problem: Problem) -> None:
    session = object_session(problem)
    if session is not None:
        session.info[CHANGED_IN_SESSION] = True


@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    """A committed change to a problem or a board in this process: read problems afresh
    (boards are cached by revision, so they need nothing)."""
    if session.info.pop(CHANGED_IN_SESSION, False):
        _problems.clear()
        anonymous.copies.forget()


@event.listens_for(Session, "after_rollback")
def _rolled_back(session: Session) -> None:
    session.info.pop(CHANGED_IN_SESSION, None)
