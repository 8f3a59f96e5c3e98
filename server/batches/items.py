"""A batch item as a batch's body shows it, and as its callback carries it: its verdict and
the reward fields (error class, speedups over the baselines, coded flags)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from grader.report import Mode, Status, error_class, flag_codes
from server.batches.schemas import BatchItemOut
from server.models import Baseline, Submission
from server.problems import baselines
from server.problems.schemas import SpeedupOut

# The newest baselines of each (problem, device type), read once for the items that share it.
Newest = dict[tuple[int, str], dict[int, Baseline]]


def speedup(session: Session, item: Submission, newest: Newest) -> SpeedupOut:
    if item.mode != Mode.LEADERBOARD or item.score is None:
        return SpeedupOut()
    place = (item.problem_id, item.gpu_type)
    if place not in newest:
        newest[place] = baselines.newest(session, *place)
    found = baselines.Speedup.of(item.score, newest[place].get(item.problem_version))
    return SpeedupOut(eager=found.eager, compile=found.compile)


def item_out(session: Session, item: Submission, newest: Newest) -> BatchItemOut:
    flags = list(item.flags or [])
    return BatchItemOut(
        key=item.batch_key or "",
        submission_id=item.id,
        status=Status(item.status),
        score=item.score,
        speedup=speedup(session, item, newest),
        error_class=error_class(item.status, item.message, flags),
        flags=flags,
        flag_codes=flag_codes(flags),
    )
