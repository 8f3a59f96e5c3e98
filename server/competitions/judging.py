"""A competition's final judging: after the close each team's entry per problem is graded
again K times (fresh inputs each, as every leaderboard grading draws), its judged score the
median of the K; organizers read the standings that would give beside the current ones,
then publish them as the final results or discard them.

Rules: a judging starts only after the close, and only while no other is running or ready
and none was published. Each run is a submission of its own (the entry's author, problem,
code and GPU type, ``judging_id`` set), queued through the outbox like any (on the
competition's ``judging_queue`` where it names one, so that only its pinned machines grade
it: ``run_queue``): a worker that dies hands its job back, and a report recorded twice
counts once (``record_report``).
Judging runs are on no board, no user page and no competition count. An entry counts in
the judged standings only when all its K runs passed (one failure on fresh inputs is a
wrong kernel); its score is their median, its sol fraction theirs. A judging is ``ready``
once every run has a verdict; publishing stores its judged entries, which the standings
then rank for everyone (``final``: no freeze); discarding keeps it, its verdicts included,
and changes nothing.

A judging is one kind of *review set* (a ``judgings`` row, ``kind`` final); an organizer's
rejudge (server/rejudges/) is the other, and shares this module's machinery: ``queue_run``,
the stored statuses, ``status_of`` and ``settle``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from grader.report import TERMINAL_STATUSES, Status
from server.audit import service as audit
from server.competitions import repository
from server.competitions.schemas import MAX_FINAL_RUNS, Kind, Phase, Stored
from server.competitions.scoring import Entry, Placed
from server.competitions.service import get_competition, phase, when
from server.errors import BadRequest, Conflict, NotFound
from server.models import Competition, Judging, JudgingRun, Submission, Team, User, utcnow
from server.outbox import jobs
from server.problems import loaded
from server.submissions import reports

READY = "ready"


@dataclass(frozen=True)
class JudgedEntry:
    """One team's entry on one problem as the judging graded it."""

    team_id: int
    problem: str
    entry: Entry  # as it stands at the close
    runs: list[Submission]

    @property
    def scores(self) -> list[float | None]:
        return [run.score if run.status == Status.PASSED else None for run in self.runs]

    @property
    def done(self) -> bool:
        return all(run.status in TERMINAL_STATUSES for run in self.runs)

    @property
    def passed(self) -> bool:
        return all(score is not None for score in self.scores)

    @property
    def median(self) -> float | None:
        scores = [score for score in self.scores if score is not None]
        return statistics.median(scores) if self.passed and scores else None

    @property
    def cv(self) -> float | None:
        """The K scores' coefficient of variation (standard deviation over mean)."""
        scores = [score for score in self.scores if score is not None]
        if not self.passed or len(scores) < 2:
            return None
        return statistics.stdev(scores) / statistics.mean(scores)

    def off_pin(self, pin: Mapping[str, str] | None) -> list[int]:
        """The runs graded on a worker whose fingerprint differs from ``pin`` in a field it
        names (or that reported none); a run not graded yet is not judged by it."""
        if not pin:
            return []
        found = []
        for run in self.runs:
            report = reports.stored(run)
            if report is None:
                continue
            seen = report.fingerprint
            if seen is None or any(getattr(seen, key) != value for key, value in pin.items()):
                found.append(run.id)
        return found

    def judged(self) -> Entry | None:
        """The entry the judged standings rank: None when a run failed."""
        median = self.median
        if median is None:
            return None
        fractions = [run.sol_fraction for run in self.runs if run.sol_fraction is not None]
        return Entry(
            submission_id=self.entry.submission_id,
            score=median,
            sol_fraction=statistics.median(fractions) if fractions else None,
            submitted_at=self.entry.submitted_at,
        )


@dataclass(frozen=True)
class PreviewRow:
    team: Team
    before: Placed | None
    after: Placed | None
    entries: list[JudgedEntry]


@dataclass(frozen=True)
class Preview:
    judging: Judging
    competition: Competition
    status: str
    rows: list[PreviewRow]


def status_of(judging: Judging, runs: Sequence[Submission]) -> str:
    if judging.status == Stored.RUNNING and all(r.status in TERMINAL_STATUSES for r in runs):
        return READY
    return judging.status


# Starting


def start(session: Session, name: str, runs: int | None, actor: User | None) -> Judging:
    """A new judging of a closed competition, its K runs per entry queued; audited as
    ``judging.start``."""
    competition = repository.get_competition(session, name, for_update=True)
    if competition is None:
        raise NotFound(f"no competition named {name!r}")
    if phase(competition) != Phase.CLOSED:
        raise Conflict(
            f"competition {competition.name!r} closes at {when(competition.closes_at)}; its "
            "final judging starts after that"
        )
    k = competition.final_runs if runs is None else runs
    if not 1 <= k <= MAX_FINAL_RUNS:
        raise BadRequest(f"runs must be from 1 to {MAX_FINAL_RUNS}, not {k}")
    for earlier in repository.judgings(session, competition.id):
        if earlier.status == Stored.PUBLISHED:
            raise Conflict(
                f"judging {earlier.id} of {competition.name!r} was published at "
                f"{when(earlier.decided_at or earlier.created_at)}: the results are final"
            )
        if earlier.status == Stored.RUNNING:
            raise Conflict(
                f"judging {earlier.id} of {competition.name!r} is not decided yet: publish or "
                "discard it first"
            )
    judging = Judging(
        kind=Kind.FINAL.value,
        competition_id=competition.id,
        runs=k,
        status=Stored.RUNNING.value,
        created_at=utcnow(),
        created_by_id=actor.id if actor is not None else None,
    )
    session.add(judging)
    session.flush()
    queued = 0
    for team_id, problem_entries in standing_entries(session, competition).items():
        for entry in problem_entries.values():
            original = session.get(Submission, entry.submission_id)
            assert original is not None
            for _ in range(k):
                queue_run(session, judging, original, team_id=team_id, competition=competition)
                queued += 1
    audit.record(
        session,
        actor,
        "judging.start",
        target_type="competition",
        target=competition.name,
        details={"judging": judging.id, "runs": k, "queued": queued},
    )
    return judging


def queue_run(
    session: Session,
    review: Judging,
    original: Submission,
    *,
    team_id: int | None = None,
    version: int | None = None,
    competition: Competition | None = None,
) -> Submission:
    """One run of a review set: the original's author, problem, code, mode and GPU type as a
    submission of its own (``judging_id`` set: on no board, no page, in no count), graded
    against ``version`` (default the original's), queued through the outbox like any, on
    the queue ``run_queue`` names for it in ``competition``."""
    run = Submission(
        user_id=original.user_id,
        problem_id=original.problem_id,
        problem_version=original.problem_version if version is None else version,
        code=original.code,
        code_sha256=original.code_sha256,
        mode=original.mode,
        gpu_type=original.gpu_type,
        status=Status.QUEUED.value,
        flags=[],
        judging_id=review.id,
    )
    session.add(run)
    session.flush()
    session.add(
        JudgingRun(
            submission_id=run.id, judging_id=review.id, team_id=team_id, entry_id=original.id
        )
    )
    queue = run_queue(competition, run.gpu_type)
    gpus = loaded.gpus_for(run.problem, run.gpu_type)
    jobs.enqueue(session, jobs.Job.GRADE, run.id, queue=queue, mode=run.mode, gpus=gpus)
    return run


def run_queue(competition: Competition | None, gpu_type: str) -> str:
    """The queue a competition's review run on ``gpu_type`` goes to: its ``judging_queue``,
    which the workers of the machines its pin names take, for a run on its own GPU type;
    else the GPU type's queue. The run's GPU type stays its own: a worker grades it there
    as it would on the GPU type's queue, and records the fingerprint its preview checks."""
    if competition is not None and competition.judging_queue and gpu_type == competition.gpu_type:
        return competition.judging_queue
    return gpu_type


def standing_entries(session: Session, competition: Competition) -> dict[int, dict[str, Entry]]:
    """The entries at the close of the teams not disqualified."""
    from server.competitions.standings import entries_by_team

    standing = {
        t.id for t in repository.teams(session, competition.id) if t.disqualified_at is None
    }
    found = entries_by_team(session, competition, competition.closes_at)
    return {team_id: found[team_id] for team_id in sorted(found) if team_id in standing}


# Reading


def latest(session: Session, name: str) -> tuple[Competition, Judging]:
    competition = get_competition(session, name)
    judgings = repository.judgings(session, competition.id)
    if not judgings:
        raise NotFound(f"competition {competition.name!r} has no final judging yet")
    return competition, judgings[-1]


def judged_entries(session: Session, judging: Judging) -> list[JudgedEntry]:
    """Each judged entry with its runs, by team and problem."""
    competition = session.get(Competition, judging.competition_id)
    assert competition is not None
    at_close = standing_entries(session, competition)
    names = {entry.problem_id: entry.problem.name for entry in competition.problems}
    grouped: dict[tuple[int, int], list[Submission]] = {}
    entry_of: dict[tuple[int, int], int] = {}
    for run, submission in repository.judging_runs(session, judging.id):
        assert run.team_id is not None  # a final judging's run grades a team's entry
        key = (run.team_id, submission.problem_id)
        grouped.setdefault(key, []).append(submission)
        entry_of[key] = run.entry_id
    found = []
    for (team_id, problem_id), runs in grouped.items():
        problem = names[problem_id]
        entry = at_close.get(team_id, {}).get(problem)
        if entry is None or entry.submission_id != entry_of[(team_id, problem_id)]:
            # Disqualified, banned or hidden since: judged on what stands now.
            continue
        found.append(JudgedEntry(team_id, problem, entry, sorted(runs, key=lambda s: s.id)))
    return found


def preview(session: Session, judging: Judging) -> Preview:
    from server.competitions.standings import ranked_placements

    competition = session.get(Competition, judging.competition_id)
    assert competition is not None
    entries = judged_entries(session, judging)
    status = status_of(judging, [run for entry in entries for run in entry.runs])
    teams = [t for t in repository.teams(session, competition.id) if t.disqualified_at is None]
    before = ranked_placements(competition, teams, standing_entries(session, competition))
    after = ranked_placements(competition, teams, judged_by_team(entries))
    rows = [
        PreviewRow(
            team=team,
            before=before.get(team.id),
            after=after.get(team.id),
            entries=[entry for entry in entries if entry.team_id == team.id],
        )
        for team in teams
    ]
    rows.sort(
        key=lambda r: (
            r.after is None,
            r.after.rank if r.after is not None else 0,
            r.before.rank if r.before is not None else 0,
            r.team.id,
        )
    )
    return Preview(judging=judging, competition=competition, status=status, rows=rows)


def judged_by_team(entries: Sequence[JudgedEntry]) -> dict[int, dict[str, Entry]]:
    found: dict[int, dict[str, Entry]] = {}
    for judged in entries:
        entry = judged.judged()
        if entry is not None:
            found.setdefault(judged.team_id, {})[judged.problem] = entry
    return found


# Deciding


def publish(session: Session, name: str, actor: User | None) -> Judging:
    """The judged standings become the final results, stored; audited as
    ``judging.publish``."""
    competition, judging = latest(session, name)
    entries = judged_entries(session, judging)
    status = status_of(judging, [run for entry in entries for run in entry.runs])
    if status != READY:
        raise Conflict(
            f"judging {judging.id} of {competition.name!r} is {status}: only a ready one "
            "(every run graded) can be published"
        )
    judging.entries = stored_entries(judged_by_team(entries))
    return decide(session, competition, judging, Stored.PUBLISHED, actor)


def discard(session: Session, name: str, actor: User | None) -> Judging:
    """Set the judging aside, its runs and verdicts kept; audited as ``judging.discard``."""
    competition, judging = latest(session, name)
    if judging.status != Stored.RUNNING:
        raise Conflict(f"judging {judging.id} of {competition.name!r} is {judging.status} already")
    return decide(session, competition, judging, Stored.DISCARDED, actor)


def settle(session: Session, review: Judging, to: Stored, actor: User | None) -> None:
    """A review set decided as a whole: its status, when and by whom (any kind)."""
    review.status = to.value
    review.decided_at = utcnow()
    review.decided_by_id = actor.id if actor is not None else None
    session.flush()


def decide(
    session: Session, competition: Competition, judging: Judging, to: Stored, actor: User | None
) -> Judging:
    settle(session, judging, to, actor)
    audit.record(
        session,
        actor,
        f"judging.{'publish' if to == Stored.PUBLISHED else 'discard'}",
        target_type="competition",
        target=competition.name,
        details={"judging": judging.id},
    )
    return judging


# The published entries, as stored


def stored_entries(entries: dict[int, dict[str, Entry]]) -> dict[str, Any]:
    return {
        str(team_id): {
            problem: {
                "submission_id": entry.submission_id,
                "score": entry.score,
                "sol_fraction": entry.sol_fraction,
                "submitted_at": entry.submitted_at.isoformat(),
            }
            for problem, entry in problems.items()
        }
        for team_id, problems in entries.items()
    }


def final_entries(session: Session, competition: Competition) -> dict[int, dict[str, Entry]] | None:
    """The published judging's entries: the final standings' (None: not published)."""
    published = [
        j for j in repository.judgings(session, competition.id) if j.status == Stored.PUBLISHED
    ]
    if not published or published[-1].entries is None:
        return None
    return {
        int(team_id): {
            problem: Entry(
                submission_id=int(fields["submission_id"]),
                score=float(fields["score"]),
                sol_fraction=fields["sol_fraction"],
                submitted_at=datetime.fromisoformat(fields["submitted_at"]),
            )
            for problem, fields in problems.items()
        }
        for team_id, problems in published[-1].entries.items()
    }
