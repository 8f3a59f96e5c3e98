"""A problem's baselines on a single-machine install: an organizer asks for them, the
worker's own task times the reference eager and under torch.compile in leaderboard mode (the
real harness and sandbox, on the CPU), the results step records them, and the leaderboard
(API, page, CLI) shows them as marked rows beside the entries, with each ranked score's
speedup over them; a compile that cannot work says why. A ranked report from a GPU machine
with no baseline asks for one by itself."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pytest
from rich.console import Console
from sqlalchemy import select
from typer.testing import CliRunner

from grader.report import Fingerprint
from server.cli import app as cli
from server.client import show
from server.db import session_scope
from server.models import Baseline, OutboxMessage, Submission
from server.problems import baselines, repository
from server.settings import get_settings
from server.submissions import reports
from server.submissions import service as submissions
from server.worker import gpu, recorders
from tests.server.conftest import PASSED_REPORT, Account, add_submission
from tests.server.problems.test_problem_lifecycle import delivered_by, ranked, record_round
from tests.server.problems.test_problems_api import TASK, upload, vectoradd_zip
from tests.server.users.test_audit_log import audit_entries
from tests.server.web.test_web_pages import new_problem

pytestmark = pytest.mark.anyio

# vectoradd's reference on a host whose C++ compiler torch.compile's CPU backend cannot
# find: the eager baseline times, the compiled one fails at its first call.
NO_COMPILER_REFERENCE = (
    (TASK / "reference.py")
    .read_text()
    .replace(
        "import torch\n",
        "import torch\nimport torch._inductor.config\n\n"
        'torch._inductor.config.cpp.cxx = ("/nonexistent/c++",)\n',
        1,
    )
)


def tiny_zip(folder: str) -> bytes:
    """vectoradd with one small test case and one small CPU benchmark case."""
    return vectoradd_zip(
        folder,
        tests=[{"size": 8, "seed": 1}],
        cpu_benchmarks=[{"size": 16, "seed": 2}],
        reference=NO_COMPILER_REFERENCE,
    )


def time_waiting_baselines(name: str) -> None:
    """Each waiting baseline of the problem timed by the worker's task, then recorded."""
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        rows = session.scalars(
            select(Baseline).where(Baseline.problem_id == problem.id, Baseline.status == "queued")
        ).all()
        sent = [baselines.message(session, row.id, get_settings()) for row in rows]
    for result in delivered_by(gpu.time_problem_baselines, sent):
        recorders.record_baselines({**result, "worker": "test"})


async def test_baselines_timed_by_the_worker_are_marked_rows_with_each_score_s_speedup(
    client: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    await upload(client, admin, tiny_zip("baseadd"), "p.zip")
    record_round("baseadd")
    refused = await client.post("/api/v1/problems/baseadd/baselines", headers=alice.headers)
    assert refused.status_code == 403
    asked = await client.post("/api/v1/problems/baseadd/baselines", headers=admin.headers)
    assert asked.status_code == 202, asked.text
    assert asked.json()["gpu_types"] == ["cpu"]
    time_waiting_baselines("baseadd")

    board = (await client.get("/api/v1/leaderboards/baseadd?gpu=cpu")).json()
    eager, compiled = board["baselines"]
    assert eager["kind"] == "eager" and eager["score"] > 0 and eager["why_not"] is None
    assert compiled["kind"] == "compile" and compiled["score"] is None
    assert "C++ compiler" in compiled["why_not"], compiled["why_not"]

    # A competitor twice as fast as the reference: speedup 2 over eager, none over compile.
    sid = ranked(alice.token, "baseadd", eager["score"] / 2)
    board = (await client.get("/api/v1/leaderboards/baseadd?gpu=cpu")).json()
    assert board["total"] == 1 and [e["user"] for e in board["entries"]] == [alice.name]
    (entry,) = board["entries"]
    assert entry["rank"] == 1
    assert entry["speedup"]["eager"] == pytest.approx(2.0)
    assert entry["speedup"]["compile"] is None
    body = (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).json()
    assert body["speedup"] == entry["speedup"]
    result = (await client.get(f"/submissions/{sid}")).text
    assert "2.00× eager" in result and "× torch.compile" not in result

    page = (await client.get("/problems/baseadd?gpu=cpu")).text
    assert 'data-baseline="eager"' in page and 'data-baseline="compile"' in page
    assert "2.00× eager" in page
    assert "no score: " in page and "C++ compiler" in page

    out = Console(file=io.StringIO(), width=240)
    show.leaderboard(out, board)
    printed = out.file.getvalue()  # type: ignore[attr-defined]
    assert "reference (eager)" in printed and "2.00×" in printed
    assert "reference (torch.compile) has no score:" in printed
    out = Console(file=io.StringIO(), width=240)
    show.report(out, body)
    printed = out.file.getvalue()  # type: ignore[attr-defined]
    assert "speedup: 2.00× over the reference as given" in printed
    assert "over torch.compile" not in printed


def gpu_report(machine: str) -> dict[str, Any]:
    fingerprint = Fingerprint(device_name=machine, torch="2.9", driver="580", cuda="12.9")
    return {**PASSED_REPORT, "device": "cuda", "fingerprint": fingerprint.__dict__}


def waiting_baselines(queue: str) -> list[Baseline]:
    with session_scope() as session:
        rows = list(
            session.scalars(
                select(Baseline).where(Baseline.gpu_type == queue, Baseline.status == "queued")
            )
        )
        jobs = session.scalars(
            select(OutboxMessage.subject_id).where(
                OutboxMessage.job == "baseline",
                OutboxMessage.queue == queue,
                OutboxMessage.done_at.is_(None),
            )
        ).all()
        assert sorted(jobs) == sorted(row.id for row in rows)
        session.expunge_all()
        return rows


def recorded(user: Account, gpu_type: str, report: dict[str, Any]) -> None:
    sid = add_submission(user.name, mode="leaderboard")
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.gpu_type = gpu_type
        submissions.record_report(session, sid, reports.parse(report), "h:1.0")


async def test_a_ranked_report_from_a_gpu_machine_without_baselines_asks_for_them_once(
    database: None, alice: Account
) -> None:
    recorded(alice, "h900", gpu_report("H900"))
    (first,) = waiting_baselines("h900")
    # While it waits, more ranked reports ask for nothing more.
    recorded(alice, "h900", gpu_report("H900"))
    assert [row.id for row in waiting_baselines("h900")] == [first.id]
    report = baselines.parse_report(
        {
            "problem": "vectoradd",
            "device": "cuda",
            "eager": {**PASSED_REPORT, "score": 4e-3},
            "compile": {**PASSED_REPORT, "score": 1e-3},
            "fingerprint": gpu_report("H900")["fingerprint"],
        }
    )
    with session_scope() as session:
        assert baselines.record(session, first.id, report, "h:1.0")
        assert not baselines.record(session, first.id, report, "h:1.0")  # once
    recorded(alice, "h900", gpu_report("H900"))
    assert waiting_baselines("h900") == []
    # Another machine of the type has none of its own yet.
    recorded(alice, "h900", gpu_report("H900 with another driver"))
    (second,) = waiting_baselines("h900")
    # A grader that failed on the worker leaves nothing timed: the next ranked report from
    # that machine asks again.
    recorders.record_baselines(
        {"baseline_id": second.id, "report": {"failed": "the grader failed"}, "worker": "h:1"}
    )
    assert waiting_baselines("h900") == []
    recorded(alice, "h900", gpu_report("H900 with another driver"))
    assert len(waiting_baselines("h900")) == 1
    # The CPU's are timed only when an organizer asks (minutes of a shared worker).
    recorded(alice, "cpu", {**PASSED_REPORT, "fingerprint": gpu_report("cpu")["fingerprint"]})
    assert waiting_baselines("cpu") == []


async def test_an_organizer_asks_for_baselines_on_the_command_line(
    client: httpx.AsyncClient, admin: Account
) -> None:
    new_problem("clibase")
    with session_scope() as session:
        problem = repository.get_problem(session, "clibase")
        assert problem is not None
        problem_id = problem.id

    def waiting() -> list[int]:
        return [row.id for row in waiting_baselines("cpu") if row.problem_id == problem_id]

    result = CliRunner().invoke(cli, ["problem", "baseline", "clibase", "--gpu", "cpu"])
    assert result.exit_code == 0, result.output
    assert "baselines of 'clibase' queued for the cpu queue(s)" in result.output
    first = waiting()
    assert len(first) == 1
    entries = await audit_entries(client, admin, target="clibase")
    assert [(e["actor"], e["action"]) for e in entries] == [("cli", "problem.baseline")]
    # Asked again while it waits: still the one request.
    assert CliRunner().invoke(cli, ["problem", "baseline", "clibase"]).exit_code == 0
    assert waiting() == first
    refused = CliRunner().invoke(cli, ["problem", "baseline", "clibase", "--gpu", "h900"])
    assert refused.exit_code == 1 and "is not offered on 'h900'" in refused.output
