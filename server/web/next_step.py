"""What a finished submission's page offers next: where a ranked run stands, for everyone who
may read its board; and for its author, the runs to make from it: the same code in a mode
further on (where the problem takes it), or the code edited in the submit form."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from grader.report import TERMINAL_STATUSES, Mode, Status
from server.client.figures import Standing
from server.leaderboards.standing import standing_of
from server.models import Submission, User
from server.settings import Settings
from server.submissions import service as submissions

# After a passing run, the modes offered for the same code: the next rung, then the ranked one.
FURTHER: dict[str, tuple[Mode, ...]] = {
    Mode.TEST: (Mode.BENCHMARK, Mode.LEADERBOARD),
    Mode.BENCHMARK: (Mode.LEADERBOARD,),
}


@dataclass(frozen=True)
class NextStep:
    standing: Standing | None
    own: bool  # the reader is its author: the runs below are offered
    modes: tuple[Mode, ...]  # the same code again in these modes
    closed: str  # why leaderboard mode is not among them where it would be ("": it is)


def next_step(
    session: Session, settings: Settings, submission: Submission, viewer: User | None
) -> NextStep | None:
    """None while it grades, and for a reader who is not its author where no standing is
    shown to them."""
    if submission.status not in TERMINAL_STATUSES:
        return None
    standing = standing_of(session, settings, submission, viewer)
    own = viewer is not None and viewer.id == submission.user_id
    if not own:
        return None if standing is None else NextStep(standing, False, (), "")
    modes: tuple[Mode, ...] = ()
    closed = None
    if submission.status == Status.PASSED:
        modes = FURTHER.get(submission.mode, ())
        if Mode.LEADERBOARD in modes:
            closed = submissions.leaderboard_closed(session, submission.problem)
            if closed is not None:
                modes = tuple(mode for mode in modes if mode != Mode.LEADERBOARD)
    return NextStep(standing, True, modes, closed or "")
