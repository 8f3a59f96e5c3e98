"""A problem's baselines (grader/baselines.py: its reference eager and under torch.compile,
graded in leaderboard mode like a submission) per version, device type and worker machine
(table ``baselines``), and the speedup over them of every ranked score.

Asked for in one place, ``request``: by an organizer (``kerneljudge problem baseline NAME``,
``POST /api/v1/problems/{name}/baselines``), and by the results step when it records a
ranked report on a GPU device type from a machine its problem version has no baseline of.
One request per problem version and device type waits at a time; it goes to that type's
queue through the outbox like a validation, and whichever worker takes it times it on its
own machine. The CPU device type is timed only when an organizer asks: there both gradings
take minutes of a worker that the install's competitors share.

A score's baseline is the newest timed on its problem version and device type; its
``speedup`` is that baseline's score over this one's (above 1 is faster), per kind, null
where there is no baseline or that kind has no score."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from grader.baselines import BaselineReport, machine_key, score_of, why_not
from grader.report import Mode, Report, plain_dict
from server.leaderboards import repository as boards
from server.models import Baseline, Problem, Submission, utcnow
from server.outbox import jobs
from server.problems import repository, versions
from server.problems.loaded import loaded, problem_files
from server.settings import Settings

log = logging.getLogger(__name__)

# Device types whose ranked reports do not ask for a baseline by themselves.
ASKED_ONLY_ON = frozenset({"cpu"})


class BaselineStatus(StrEnum):
    QUEUED = "queued"  # waits for a worker's report
    TIMED = "timed"  # both kinds graded (each with a score or the reason it has none)


@dataclass(frozen=True)
class Speedup:
    """A score's speedup over its baselines: the baseline's score over this one's."""

    eager: float | None = None
    compile: float | None = None

    @classmethod
    def of(cls, score: float | None, baseline: Baseline | None) -> Speedup:
        if baseline is None or score is None or score <= 0:
            return cls()
        return cls(
            eager=baseline.eager_s / score if baseline.eager_s else None,
            compile=baseline.compile_s / score if baseline.compile_s else None,
        )


def request(
    session: Session, problem: Problem, gpu_types: Iterable[str], version: int | None = None
) -> list[Baseline]:
    """Ask for the baselines of the problem's version (its live one by default) on these
    device types, each sent once the caller commits; a device type that already has one
    waiting is left as it is. Returns the requests made."""
    version = problem.version if version is None else version
    waiting = set(
        session.scalars(
            select(Baseline.gpu_type).where(
                Baseline.problem_id == problem.id,
                Baseline.problem_version == version,
                Baseline.status == BaselineStatus.QUEUED,
            )
        )
    )
    made = []
    for gpu_type in sorted(set(gpu_types) - waiting):
        row = Baseline(
            problem_id=problem.id,
            problem_version=version,
            gpu_type=gpu_type,
            status=BaselineStatus.QUEUED,
        )
        session.add(row)
        session.flush()
        jobs.enqueue(session, jobs.Job.BASELINE, row.id, queue=gpu_type)
        made.append(row)
    return made


def wanted_after(
    session: Session, problem: Problem, version: int, gpu_type: str, report: Report
) -> None:
    """After a ranked report is recorded: ask for the baselines of its problem version on
    its device type when the machine that graded it has none there yet. The caller holds
    the problem's row (the leaderboard's upkeep locks it), so two reports recorded at once
    ask once."""
    if report.mode != Mode.LEADERBOARD or gpu_type in ASKED_ONLY_ON:
        return
    machine = machine_key(report.fingerprint)
    timed = session.scalar(
        select(Baseline.id).where(
            Baseline.problem_id == problem.id,
            Baseline.problem_version == version,
            Baseline.gpu_type == gpu_type,
            Baseline.machine == machine,
        )
    )
    if timed is None:
        request(session, problem, [gpu_type], version)


def message(session: Session, baseline_id: int, settings: Settings) -> list[Any] | None:
    """The baseline job's arguments, built when it is sent: the version's files, the ranked
    limit and the problem's secret seed (a baseline is timed on ranked inputs); None once
    its report is in."""
    row = session.get(Baseline, baseline_id)
    if row is None or row.status != BaselineStatus.QUEUED:
        return None
    stored = session.get(Problem, row.problem_id)
    if stored is None:
        return None
    problem = versions.of_version(stored, row.problem_version)
    limit = loaded(problem).timeout_for(Mode.LEADERBOARD)
    payload = {
        "problem": problem_files(problem),
        "secret_seed": problem.secret_seed,
        "timeout_s": min(limit, settings.grading_timeout_s),
    }
    return [row.id, payload]


def time_limit_s(session: Session, baseline_id: int, settings: Settings) -> float:
    """How long a worker may hold a baseline (two gradings) before the sweeper counts it
    lost."""
    return 2 * settings.grading_timeout_s


jobs.register(jobs.Job.BASELINE, jobs.Messages(args=message, time_limit_s=time_limit_s))

# A baseline's report at the door, as a worker sent it.
BASELINE_REPORT: TypeAdapter[BaselineReport] = TypeAdapter(BaselineReport)


def parse_report(raw: object) -> BaselineReport | str:
    """The worker's report, or what is wrong with it."""
    try:
        return BASELINE_REPORT.validate_python(raw)
    except ValidationError as exc:
        return f"the worker returned an invalid baseline report ({exc.error_count()} errors)"


def record(session: Session, baseline_id: int, report: BaselineReport | str, worker: str) -> bool:
    """Write a worker's baselines once. A machine that already has this version's baselines
    on this device type has them replaced by the newer timing (an organizer asked again)."""
    row = session.get(Baseline, baseline_id)
    if row is None:
        log.warning("report for unknown baseline %s dropped", baseline_id)
        return False
    jobs.done(session, jobs.Job.BASELINE, baseline_id)
    repository.get_problem_by_id(session, row.problem_id, for_update=True)
    session.refresh(row)
    if row.status != BaselineStatus.QUEUED:
        log.info("baseline %s already recorded; duplicate dropped", baseline_id)
        return False
    if isinstance(report, str):
        log.warning("baseline %s from worker %s: %s", baseline_id, worker, report)
        session.delete(row)
        return False
    machine = machine_key(report.fingerprint)
    earlier = session.scalar(
        select(Baseline).where(
            Baseline.problem_id == row.problem_id,
            Baseline.problem_version == row.problem_version,
            Baseline.gpu_type == row.gpu_type,
            Baseline.machine == machine,
        )
    )
    if earlier is not None:
        session.delete(earlier)
        session.flush()
    row.status = BaselineStatus.TIMED
    row.machine = machine
    row.fingerprint = plain_dict(report.fingerprint) if report.fingerprint else None
    row.eager_s, row.eager_error = score_of(report.eager), why_not(report.eager)
    row.compile_s, row.compile_error = score_of(report.compile), why_not(report.compile)
    row.report = report.to_dict()
    row.worker = worker
    row.finished_at = utcnow()
    session.flush()
    # Boards show baselines and speedups: their cached copies are out of date.
    boards.bump_revisions(session, [row.problem_id])
    return True


def newest(session: Session, problem_id: int, gpu_type: str) -> dict[int, Baseline]:
    """The newest timed baseline of each version of the problem on this device type."""
    rows: Sequence[Baseline] = session.scalars(
        select(Baseline)
        .where(
            Baseline.problem_id == problem_id,
            Baseline.gpu_type == gpu_type,
            Baseline.status == BaselineStatus.TIMED,
        )
        .order_by(Baseline.finished_at, Baseline.id)
    ).all()
    return {row.problem_version: row for row in rows}


def speedup_of(session: Session, submission: Submission) -> Speedup:
    """A submission's speedup: a ranked score's over its version's baselines on its device
    type; none for other modes."""
    if submission.mode != Mode.LEADERBOARD or submission.score is None:
        return Speedup()
    found = newest(session, submission.problem_id, submission.gpu_type)
    return Speedup.of(submission.score, found.get(submission.problem_version))


def eager_s(session: Session, problem: Problem, gpu_type: str) -> float | None:
    """The reference's eager score on the problem's live version and this device type, as
    timed most recently; None until a worker has."""
    found = newest(session, problem.id, gpu_type).get(problem.version)
    return found.eager_s if found is not None else None
