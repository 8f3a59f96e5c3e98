"""The results step: a report is recorded once, however often it arrives."""

from __future__ import annotations

from sqlalchemy import select

from server.db import session_scope
from server.models import LeaderboardEntry, Submission
from server.submissions import reports, service
from server.worker import recorders
from tests.server.conftest import PASSED_REPORT as REPORT
from tests.server.conftest import Account, add_submission


def new_submission(alice: Account) -> int:
    return add_submission(alice.name, mode="leaderboard")


def test_duplicate_reports_are_recorded_once(alice: Account) -> None:
    sid = new_submission(alice)
    with session_scope() as db:
        service.mark_running(db, sid, "host:1")
    with session_scope() as db:
        assert service.record_report(db, sid, reports.parse(REPORT), "host:1")
    second = {**REPORT, "status": "failed", "score": None, "message": "different"}
    with session_scope() as db:
        assert not service.record_report(db, sid, reports.parse(second), "host:2")
        service.mark_running(db, sid, "host:3")  # a late "started" must not reopen it
    with session_scope() as db:
        stored = db.get(Submission, sid)
        assert stored is not None
        assert (stored.status, stored.score, stored.message) == (
            "passed",
            0.002,
            "all cases passed",
        )
        assert stored.started_at is not None and stored.finished_at is not None
        # The first report whole, per-case times included: what its pages and the API show.
        assert stored.report == reports.parse(REPORT).to_dict()


def record(sid: int, report: dict[str, object]) -> None:
    """As the results step records what a worker sent."""
    recorders.record_report({"submission_id": sid, "worker": "host:1", "report": report})


def recorded(account: Account, report: dict[str, object]) -> Submission:
    """A new submission of `account`'s as stored once the results step recorded `report`."""
    sid = new_submission(account)
    record(sid, report)
    with session_scope() as db:
        stored = db.get(Submission, sid)
        assert stored is not None
        db.expunge(stored)
        return stored


def test_invalid_status_from_a_worker_becomes_error(alice: Account) -> None:
    stored = recorded(alice, {**REPORT, "status": "awesome"})
    assert stored.status == "error" and stored.score is None
    assert "invalid report" in stored.message and "status" in stored.message


def test_a_report_that_is_still_running_is_no_verdict(alice: Account) -> None:
    stored = recorded(alice, {**REPORT, "status": "running"})
    assert stored.status == "error"


def test_score_only_kept_for_passed(alice: Account) -> None:
    stored = recorded(alice, {**REPORT, "status": "failed"})
    assert stored.status == "failed" and stored.score is None


def test_a_short_calls_score_is_marked_on_the_board(alice: Account) -> None:
    """A GPU report whose score cannot rank finer than a few percent (grader/report.py's
    short_calls) is kept so, and its leaderboard entry carries the mark; a failed one
    never does."""
    short = {**REPORT, "device": "cuda", "short_calls": True}
    stored = recorded(alice, short)
    assert stored.status == "passed" and stored.short_calls
    with session_scope() as db:
        entry = db.scalar(
            select(LeaderboardEntry).where(LeaderboardEntry.user_id == stored.user_id)
        )
        assert entry is not None and entry.submission_id == stored.id and entry.short_calls
    assert not recorded(alice, {**short, "status": "failed"}).short_calls
    assert not recorded(alice, REPORT).short_calls


def test_a_score_graded_on_fewer_ranks_is_marked_on_the_board(alice: Account) -> None:
    """A report whose cases ran on fewer ranks than the problem asks for (its `ranks.scaled`
    flag) is kept so, and its leaderboard entry carries the mark; a failed one never does."""
    flag = "ranks: graded at 2 where a case asks for 4 (this worker offers world sizes 2)"
    scaled = {**REPORT, "flags": [flag]}
    stored = recorded(alice, scaled)
    assert stored.status == "passed" and stored.ranks_scaled and stored.flags == [flag]
    with session_scope() as db:
        entry = db.scalar(
            select(LeaderboardEntry).where(LeaderboardEntry.user_id == stored.user_id)
        )
        assert entry is not None and entry.submission_id == stored.id and entry.ranks_scaled
    assert not recorded(alice, {**scaled, "status": "failed"}).ranks_scaled
    assert not recorded(alice, REPORT).ranks_scaled
