"""The leaderboard as clients and visitors see it: pages of entries with global ranks, the
caller's own entry, ETags that change exactly when the board does, and the pages showing
the board, your rank and the chart."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update

from grader.problem import load_problem
from server import anonymous
from server.db import get_engine, session_scope
from server.leaderboards import service, upkeep
from server.models import Problem, Submission, utcnow
from server.problems.service import upsert_problem
from server.users.repository import get_user_by_name
from server.worker import recorders
from tests.server.conftest import PASSED_REPORT
from tests.server.rows import added_submission
from tests.server.web_client import HTML, log_in, make_user

pytestmark = pytest.mark.anyio

START = utcnow() - timedelta(days=1)


def new_problem(name: str) -> None:
    with session_scope() as session:
        upsert_problem(session, load_problem("vectoradd"), name)


def ranked(user: str, problem: str, score: float, minute: int, **fields: object) -> int:
    """A passed leaderboard-mode submission recorded as the results step records one."""
    with session_scope() as session:
        owner = get_user_by_name(session, user)
        record = session.scalar(select(Problem).where(Problem.name == problem))
        assert owner is not None and record is not None
        values: dict[str, object] = {
            "user_id": owner.id,
            "problem_id": record.id,
            "problem_version": record.version,
            "code": "# kernel",
            "code_sha256": "0" * 64,
            "mode": "leaderboard",
            "gpu_type": "cpu",
            "status": "passed",
            "score": score,
            "sol_fraction": 0.5,
            "flags": [],
            "created_at": START + timedelta(minutes=minute),
        }
        submission = Submission(**{**values, **fields})
        session.add(submission)
        session.flush()
        upkeep.submission_changed(session, submission)
        return submission.id


def moderate(submission_id: int, **fields: object) -> None:
    with session_scope() as session:
        submission = session.get(Submission, submission_id)
        assert submission is not None
        for name, value in fields.items():
            setattr(submission, name, value)
        upkeep.submission_changed(session, submission)


def five_competitors(problem: str) -> list[tuple[str, str, int]]:
    """(name, token, submission id) best first: scores 1 to 5 ms."""
    new_problem(problem)
    competitors = []
    for place in range(5):
        name, token = make_user("lb")
        competitors.append((name, token, ranked(name, problem, (place + 1) * 1e-3, place)))
    return competitors


async def test_pages_of_entries_with_global_ranks_and_your_own(client: httpx.AsyncClient) -> None:
    competitors = five_competitors("paged")
    url = "/api/v1/leaderboards/paged"

    page = (await client.get(url, params={"limit": 2, "offset": 2})).json()
    assert page["total"] == 5 and page["limit"] == 2 and page["offset"] == 2
    assert [(e["rank"], e["user"]) for e in page["entries"]] == [
        (3, competitors[2][0]),
        (4, competitors[3][0]),
    ]
    assert page["you"] is None
    everyone = (await client.get(url)).json()
    assert [e["submission_id"] for e in everyone["entries"]] == [c[2] for c in competitors]
    assert (await client.get(url, params={"offset": 9})).json()["entries"] == []

    # Your own entry comes with any page, with its rank on the whole board.
    name, token, sid = competitors[4]
    mine = (
        await client.get(url, params={"limit": 1}, headers={"Authorization": f"Bearer {token}"})
    ).json()
    assert [e["rank"] for e in mine["entries"]] == [1]
    assert mine["you"]["rank"] == 5 and mine["you"]["user"] == name
    assert mine["you"]["submission_id"] == sid and mine["you"]["sol_fraction"] == 0.5
    _, outsider = make_user("lb")
    theirs = await client.get(url, headers={"Authorization": f"Bearer {outsider}"})
    assert theirs.json()["you"] is None

    for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "many"}):
        refused = await client.get(url, params=bad)
        assert refused.status_code == 422, bad
        assert refused.json()["error"] == "invalid_request"


async def test_etag_holds_until_the_board_changes(client: httpx.AsyncClient) -> None:
    competitors = five_competitors("tagged")
    url = "/api/v1/leaderboards/tagged"
    first = await client.get(url)
    tag = first.headers["etag"]
    assert first.headers["cache-control"] == "no-cache"
    again = await client.get(url, headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == tag
    listed = await client.get(url, headers={"If-None-Match": f'"other", W/{tag}'})
    assert listed.status_code == 304
    assert (await client.get(url, headers={"If-None-Match": "*"})).status_code == 304

    # Another page, or a caller with an entry, is another response.
    assert (await client.get(url, params={"limit": 2})).headers["etag"] != tag
    token = competitors[0][1]
    own = await client.get(url, headers={"If-None-Match": tag, "Authorization": f"Bearer {token}"})
    assert own.status_code == 200 and own.json()["you"]["rank"] == 1

    # A report that does not change the board keeps the tag; one that does changes it.
    ranked(competitors[0][0], "tagged", 9e-3, 10)
    assert (await client.get(url, headers={"If-None-Match": tag})).status_code == 304
    name, _ = make_user("lb")
    ranked(name, "tagged", 2.5e-3, 11)
    changed = await client.get(url, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert [e["user"] for e in changed.json()["entries"]][2] == name

    # So does moderation: hiding the leader's entry.
    tag = changed.headers["etag"]
    moderate(competitors[0][2], is_hidden=True)
    hidden = await client.get(url, headers={"If-None-Match": tag})
    assert hidden.status_code == 200 and hidden.json()["entries"][0]["user"] == competitors[1][0]


async def test_an_archived_leaderboard_starts_the_live_one_afresh(
    client: httpx.AsyncClient,
) -> None:
    competitors = five_competitors("archived")
    url = "/api/v1/leaderboards/archived"
    tag = (await client.get(url)).headers["etag"]
    with session_scope() as session:
        problem = session.scalar(select(Problem).where(Problem.name == "archived"))
        assert problem is not None
        problem.version = problem.leaderboard_from_version = 2
    live = await client.get(url, headers={"If-None-Match": tag})
    assert live.status_code == 200
    assert live.json()["entries"] == [] and live.json()["from_version"] == 2
    old = (await client.get(url, params={"version": 1})).json()
    assert [e["user"] for e in old["entries"]] == [c[0] for c in competitors]
    assert (await client.get(url, params={"version": 3})).status_code == 404


async def test_the_schema_tells_of_pages_and_etags(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    operation = schema["paths"]["/api/v1/leaderboards/{problem}"]["get"]
    parameters = {p["name"] for p in operation["parameters"]}
    assert {"limit", "offset", "If-None-Match", "gpu", "version"} <= parameters
    assert {"200", "304", "404", "422"} <= set(operation["responses"])
    assert "ETag" in operation["responses"]["200"]["headers"]
    board = schema["components"]["schemas"]["Leaderboard"]["properties"]
    assert {"total", "you", "entries", "limit", "offset"} <= set(board)


async def test_the_pages_show_the_board_your_rank_and_the_chart(
    browser: httpx.AsyncClient,
) -> None:
    competitors = five_competitors("shown")
    name = competitors[3][0]
    await log_in(browser, name)
    page = await browser.get("/problems/shown", headers=HTML)
    assert page.status_code == 200
    for other, _, other_sid in competitors:
        assert f"/submissions/{other_sid}" in page.text and other in page.text
    assert 'id="your-rank"' in page.text
    assert "Your rank on cpu: <strong>4</strong> of 5" in page.text

    board = await browser.get("/leaderboards/shown", headers=HTML)
    assert board.text.count('<circle class="dot"') == 1  # the first is the best throughout
    assert "Your rank on cpu: <strong>4</strong> of 5" in board.text
    # The leader's entry hidden: the next one leads, and the chart has its own record.
    moderate(competitors[0][2], is_hidden=True)
    board = await browser.get("/leaderboards/shown", headers=HTML)
    assert f"/submissions/{competitors[0][2]}" not in board.text
    assert board.text.count('<circle class="dot"') == 1
    assert f"<title>{competitors[1][0]}: 2 ms at" in board.text
    assert "Your rank on cpu: <strong>3</strong> of 4" in board.text

    home = await browser.get("/", headers=HTML)
    assert f'href="/users/{competitors[1][0]}">{competitors[1][0]}</a>' in home.text


async def test_a_score_too_short_to_rank_finely_is_marked(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    """A score whose report says its calls are too short to rank finer than a few percent
    (short_calls) is marked in the API and on the page, with what the mark means; the
    others are not."""
    new_problem("short")
    (fine, _), (short, _) = make_user("lb"), make_user("lb")
    ranked(fine, "short", 1e-3, 0)
    marked = ranked(short, "short", 2e-5, 1, short_calls=True)
    entries = (await client.get("/api/v1/leaderboards/short")).json()["entries"]
    assert [(e["user"], e["short_calls"]) for e in entries] == [(short, True), (fine, False)]
    board = (await browser.get("/leaderboards/short", headers=HTML)).text
    assert board.count('class="short-calls"') == 1
    row = board[board.index(f"/submissions/{marked}") :]
    assert row.index('class="short-calls"') < row.index("</tr>")
    assert "cannot rank finer than that" in board


def graded(user: str, problem: str, report: dict[str, object]) -> int:
    """A new leaderboard-mode submission of ``user``'s once the results step recorded the
    worker's ``report`` of it; its id."""
    with session_scope() as session:
        owner = get_user_by_name(session, user)
        record = session.scalar(select(Problem).where(Problem.name == problem))
        assert owner is not None and record is not None
        sid = added_submission(session, owner, record, mode="leaderboard").id
    report = {**report, "problem": problem}
    recorders.record_report({"submission_id": sid, "worker": "host:1", "report": report})
    return sid


async def test_a_score_graded_on_fewer_ranks_is_marked(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    """A multi-rank score whose worker offered fewer ranks than the problem asks for (its
    report's ``ranks.scaled`` flag) is marked in the API and on the page, with what the mark
    means, so no one compares it with full-size entries unawares; the others are not."""
    new_problem("scaled")
    (full, _), (scaled, _) = make_user("lb"), make_user("lb")
    flag = "ranks: graded at 4 where a case asks for 8 (this worker offers world sizes 1, 2, 4)"
    graded(full, "scaled", PASSED_REPORT)
    marked = graded(scaled, "scaled", {**PASSED_REPORT, "score": 0.001, "flags": [flag]})
    entries = (await client.get("/api/v1/leaderboards/scaled")).json()["entries"]
    assert [(e["user"], e["ranks_scaled"]) for e in entries] == [(scaled, True), (full, False)]
    board = (await browser.get("/leaderboards/scaled", headers=HTML)).text
    assert board.count("ranks-scaled") == 1
    row = board[board.index(f"/submissions/{marked}") :]
    assert row.index("ranks-scaled") < row.index("</tr>")
    assert "graded on fewer ranks than the problem asks for" in board
    # The same marks where the board is read from the submissions themselves: the entries
    # rebuilt, and the board as it stood at a competition's freeze.
    with session_scope() as session:
        record = session.scalar(select(Problem).where(Problem.name == "scaled"))
        assert record is not None
        upkeep.rebuild(session, record)
        frozen = service.standings(session, record, "cpu", until=utcnow() + timedelta(hours=1))
        assert [(e.user, e.ranks_scaled) for e in frozen.entries] == [(scaled, True), (full, False)]
    entries = (await client.get("/api/v1/leaderboards/scaled")).json()["entries"]
    assert [(e["user"], e["ranks_scaled"]) for e in entries] == [(scaled, True), (full, False)]


async def test_another_process_s_change_shows_within_a_second(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API trusts what it read of a problem for ``PROBLEM_TTL_S``; a change committed
    by another process (written here without this process's sessions) shows after it."""
    monkeypatch.setattr(service, "PROBLEM_TTL_S", 0.15)
    monkeypatch.setattr(anonymous, "FRESH_S", 0.05)
    monkeypatch.setattr(anonymous, "STALE_S", 0.1)
    competitors = five_competitors("elsewhere")
    url = "/api/v1/leaderboards/elsewhere"
    assert (await client.get(url)).json()["total"] == 5
    with get_engine().begin() as connection:
        connection.execute(
            update(Problem).where(Problem.name == "elsewhere").values(is_public=False)
        )
    assert (await client.get(url)).status_code == 200
    await asyncio.sleep(0.35)
    assert (await client.get(url)).status_code == 404
    # A change committed in this process shows at once.
    with session_scope() as session:
        problem = session.scalar(select(Problem).where(Problem.name == "elsewhere"))
        assert problem is not None
        problem.is_public = True
    assert (await client.get(url)).json()["entries"][0]["user"] == competitors[0][0]
