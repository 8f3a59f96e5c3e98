"""A finished submission says where it stands and what to do next: a ranked run's rank, its
author's best before it and the leader, alike on the page, in the API and from `kerneljudge`;
its author's runs from it (the same code in a mode further on, where the problem takes it,
or edited in the submit form); another reader sees the rank alone."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from server.app import create_app
from server.client import commands
from server.db import session_scope
from server.models import Problem, Submission, utcnow
from server.submissions import reports
from server.submissions import service as submissions
from tests.server.conftest import PASSED_REPORT
from tests.server.web.test_web_and_cli_agree import cli_status, run_cli
from tests.server.web.test_web_pages import CODE, graded, new_problem
from tests.server.web_client import HTML, log_in, make_user, post_form

pytestmark = pytest.mark.anyio


def text_of(page: httpx.Response) -> str:
    """A page's words, tags dropped, spaces squeezed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.text)).split())


async def standing(client: httpx.AsyncClient, token: str, sid: int) -> dict[str, Any] | None:
    response = await client.get(
        f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 200, response.text
    found: dict[str, Any] | None = response.json()["standing"]
    return found


async def test_a_first_a_better_and_a_worse_ranked_run(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    new_problem("bested")
    rival, rival_token = make_user("rival")
    author, token = make_user("author")
    graded(rival_token, "bested", "rival", score=1e-4)
    await log_in(browser, author)

    async def page_of(sid: int) -> str:
        return text_of(await browser.get(f"/submissions/{sid}", headers=HTML))

    first = graded(token, "bested", "first", score=2e-4)
    assert await standing(client, token, first) == {
        "problem": "bested",
        "gpu": "cpu",
        "rank": 2,
        "entries": 2,
        "best_submission_id": first,
        "previous_best": None,
        "beats_previous_best": False,
        "leader": rival,
        "leader_score": 1e-4,
        "version": None,
    }
    # The page says the same, in the words `kerneljudge status` uses.
    assert (
        f"rank 2 of 2 on bested (cpu); your best before: none, this is your first ranked "
        f"run; leader: {rival}, 100 µs" in await page_of(first)
    )

    better = graded(token, "bested", "better", score=5e-5)
    said = await standing(client, token, better)
    assert said is not None
    assert (said["rank"], said["entries"], said["best_submission_id"]) == (1, 2, better)
    assert said["previous_best"] == 2e-4 and said["beats_previous_best"] is True
    assert (said["leader"], said["leader_score"]) == (author, 5e-5)
    page = await page_of(better)
    assert (
        f"beats your best rank 1 of 2 on bested (cpu); your best before: 200 µs, beaten by "
        f"150 µs (75.0%); leader: {author}, 50 µs" in page
    )

    worse = graded(token, "bested", "worse", score=1e-4)
    said = await standing(client, token, worse)
    assert said is not None
    assert (said["rank"], said["best_submission_id"]) == (1, better)
    assert said["previous_best"] == 5e-5 and said["beats_previous_best"] is False
    page = await page_of(worse)
    assert "beats your best" not in page
    assert (
        f"rank 1 of 2 on bested (cpu) by your best run, submission {better}; your best "
        f"before: 50 µs, not beaten; leader: {author}, 50 µs" in page
    )
    # A ranked run offers no further mode, only editing.
    assert "Run it in" not in page and "Edit and resubmit" in page
    # A test run has no standing.
    tested = graded(token, "bested", "tested", mode="test")
    assert await standing(client, token, tested) is None


async def test_a_test_pass_offers_the_ranked_run_and_it_is_made(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("onward")
    author, token = make_user()
    tested = graded(token, "onward", "onward", mode="test")
    await log_in(browser, author)
    page = await browser.get(f"/submissions/{tested}", headers=HTML)
    assert "Run it in benchmark mode" in page.text and "Run it in leaderboard mode" in page.text
    response = await post_form(
        browser,
        f"/submissions/{tested}/resubmit",
        {"mode": "leaderboard", "idempotency_key": "onward-1"},
        from_page=f"/submissions/{tested}",
    )
    assert response.status_code == 303
    made = int(response.headers["location"].rsplit("/", 1)[1])
    with session_scope() as session:
        ranked = session.get(Submission, made)
        assert ranked is not None
        assert (ranked.mode, ranked.problem.name, ranked.gpu_type) == (
            "leaderboard",
            "onward",
            "cpu",
        )
        assert ranked.code == CODE.format("onward") and ranked.status == "queued"


async def test_a_closed_problem_offers_no_leaderboard_run(browser: httpx.AsyncClient) -> None:
    new_problem("closed-next", deadline=utcnow() - timedelta(hours=1))
    author, token = make_user()
    tested = graded(token, "closed-next", "late", mode="test")
    await log_in(browser, author)
    page = await browser.get(f"/submissions/{tested}", headers=HTML)
    assert "Run it in benchmark mode" in page.text
    assert "Run it in leaderboard mode" not in page.text
    assert 'id="leaderboard-closed"' in page.text and "closed at" in page.text
    # Asked for anyway, it is refused, the submit form keeping the code and saying why.
    refused = await post_form(
        browser,
        f"/submissions/{tested}/resubmit",
        {"mode": "leaderboard"},
        from_page=f"/submissions/{tested}",
    )
    assert refused.status_code == 409 and "closed at" in refused.text
    assert html.escape(CODE.format("late"), quote=False) in refused.text
    # Editing a ranked run of a closed problem starts from test mode.
    ranked = graded(token, "closed-next", "ranked-late")
    form = await browser.get(f"/submit?edit={ranked}", headers=HTML)
    assert 'id="mode-test" name="mode" value="test" checked' in form.text


async def test_edit_and_resubmit_fills_the_form(browser: httpx.AsyncClient) -> None:
    new_problem("edited")
    author, token = make_user()
    sid = graded(token, "edited", "mine", mode="benchmark")
    await log_in(browser, author)
    form = await browser.get(f"/submit?edit={sid}", headers=HTML)
    assert form.status_code == 200
    assert html.escape(CODE.format("mine"), quote=False) in form.text
    assert '<option value="edited" selected>' in form.text
    assert 'id="mode-benchmark" name="mode" value="benchmark" checked' in form.text
    # Someone else's code, not published, is not theirs to start from.
    _, other_token = make_user()
    theirs = graded(other_token, "edited", "theirs", mode="test")
    assert (await browser.get(f"/submit?edit={theirs}", headers=HTML)).status_code == 404


async def test_another_reader_sees_the_rank_alone(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("watched")
    _, token = make_user()
    reader, _ = make_user()
    ranked = graded(token, "watched", "watched", score=3e-4)
    tested = graded(token, "watched", "watched-test", mode="test")
    await log_in(browser, reader)
    page = await browser.get(f"/submissions/{ranked}", headers=HTML)
    said = text_of(page)
    assert "Where it stands" in said and "rank 1 of 1 on watched (cpu)" in said
    assert "your best" not in said and "Run it in" not in said and "Edit and resubmit" not in said
    page = await browser.get(f"/submissions/{tested}", headers=HTML)
    assert 'id="next-step"' not in page.text
    # Nor may they make a run of it.
    refused = await post_form(
        browser,
        f"/submissions/{tested}/resubmit",
        {"mode": "leaderboard"},
        from_page=f"/submissions/{tested}",
    )
    assert refused.status_code == 404
    # Anonymous readers read the rank too.
    anonymous = await client.get(f"/submissions/{ranked}", headers=HTML)
    assert "rank 1 of 1 on watched (cpu)" in text_of(anonymous)


async def test_no_standing_where_the_board_is_hidden(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("hushed")
    author, token = make_user()
    ranked = graded(token, "hushed", "hushed")
    with session_scope() as session:
        problem = session.query(Problem).filter_by(name="hushed").one()
        problem.is_public = False
    # Its leaderboard page is hidden from its author as from everyone: so is its rank.
    assert (await client.get("/leaderboards/hushed", headers=HTML)).status_code == 404
    assert await standing(client, token, ranked) is None
    await log_in(browser, author)
    page = await browser.get(f"/submissions/{ranked}", headers=HTML)
    assert page.status_code == 200 and 'id="standing"' not in page.text


def test_status_and_submit_print_the_rank(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    new_problem("ranked-cli")
    rival, rival_token = make_user("rival")
    _, token = make_user()
    graded(rival_token, "ranked-cli", "rival", score=1e-3)
    first = graded(token, "ranked-cli", "first", score=2e-3)
    app = create_app()
    line = (
        f"rank 2 of 2 on ranked-cli (cpu); your best before: none, this is your first ranked "
        f"run; leader: {rival}, 1 ms"
    )
    assert line in " ".join(cli_status(monkeypatch, app, token, first).split())
    done = run_cli(monkeypatch, app, token, ["status", str(first), "--json"])
    assert done.exit_code == 0
    said = json.loads(done.stdout)["standing"]
    assert (said["rank"], said["entries"], said["leader"]) == (2, 2, rival)

    # `submit --mode leaderboard` prints it once the verdict comes (the worker's report
    # recorded here as the results step records it).
    real_follow = commands.follow

    def graded_then_followed(api: Any, submission_id: int, progress: Any) -> dict[str, Any]:
        report = reports.parse({**PASSED_REPORT, "problem": "ranked-cli", "score": 5e-4})
        with session_scope() as session:
            assert submissions.record_report(session, submission_id, report, "cpu-worker")
        return real_follow(api, submission_id, progress)

    monkeypatch.setattr(commands, "follow", graded_then_followed)
    source = tmp_path / "submission.py"
    source.write_text(CODE.format("second"))
    args = ["submit", str(source), "--problem", "ranked-cli", "--mode", "leaderboard"]
    done = run_cli(monkeypatch, app, token, args)
    assert done.exit_code == 0, done.output
    assert (
        "rank 1 of 2 on ranked-cli (cpu); your best before: 2 ms, beaten by 1.5 ms (75.0%); "
        "leader: " in " ".join(done.output.split())
    )


async def test_the_openapi_schema_shows_the_standing(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    field = schemas["SubmissionOut"]["properties"]["standing"]
    assert {"$ref": "#/components/schemas/StandingOut"} in field["anyOf"]
    assert set(schemas["StandingOut"]["properties"]) == {
        "problem",
        "gpu",
        "rank",
        "entries",
        "best_submission_id",
        "previous_best",
        "beats_previous_best",
        "leader",
        "leader_score",
        "version",
    }


async def test_a_run_on_an_archived_version_stands_on_that_versions_board(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("standing-archived")
    author, token = make_user()
    ranked = graded(token, "standing-archived", "old", score=2e-4)
    with session_scope() as session:  # an update started a new leaderboard from version 2
        problem = session.query(Problem).filter_by(name="standing-archived").one()
        problem.version, problem.leaderboard_from_version = 2, 2
    said = await standing(client, token, ranked)
    assert said is not None and (said["version"], said["rank"], said["entries"]) == (1, 1, 1)
    await log_in(browser, author)
    page = await browser.get(f"/submissions/{ranked}", headers=HTML)
    assert "rank 1 of 1 on standing-archived (cpu), version 1&#39;s leaderboard" in page.text
    assert 'href="/leaderboards/standing-archived?gpu=cpu&amp;version=1"' in page.text
