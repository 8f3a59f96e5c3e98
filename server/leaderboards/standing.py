"""Where a ranked run stands on its problem's board, for its submission page and the API:
its author's rank, their best before it, the leader. The board is the one the leaderboard
page shows, read as that page reads it: a reader who may not see the board sees no standing."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.client.figures import Standing
from server.errors import BadRequest, NotFound
from server.leaderboards import repository, service
from server.models import Submission, User
from server.settings import Settings


def standing_of(
    session: Session, settings: Settings, submission: Submission, viewer: User | None
) -> Standing | None:
    """None for a run the board does not rank, and where ``viewer`` may not read the board
    (its problem hidden from them, its device type no longer offered). The board is the live
    one, or for a run on a version before the live board's, that version's archived one."""
    if not repository.is_ranked(submission):
        return None
    try:
        problem = service.readable_problem(session, submission.problem.name, viewer)
        gpu_type = service.choose_gpu(problem, settings, submission.gpu_type)
    except (NotFound, BadRequest):
        return None
    archived = submission.problem_version < problem.leaderboard_from_version
    version = submission.problem_version if archived else None
    board = service.shown(session, problem, gpu_type, version, viewer)
    mine = board.entry_of(submission.user)
    leader = board.entries[0] if board.entries else None
    assert submission.score is not None  # a ranked run has one
    return Standing(
        problem=problem.name,
        gpu=gpu_type,
        submission_id=submission.id,
        score=submission.score,
        rank=mine.rank if mine is not None else None,
        entries=board.total,
        best_submission_id=mine.submission_id if mine is not None else None,
        previous_best=repository.best_before(
            session, submission, service.versions_ranked(problem, version)
        ),
        leader=leader.user if leader is not None else None,
        leader_score=leader.score if leader is not None else None,
        version=version,
    )
