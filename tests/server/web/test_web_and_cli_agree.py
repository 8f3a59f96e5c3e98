"""The submission page and `kerneljudge status` read a result alike: the same times, the
same speed-of-light percentages and the same warnings (server/client/figures.py), and a
failed run's cases each listed once."""

from __future__ import annotations

import html
import re
from typing import Any

import anyio
import httpx
import pytest
import typer
from typer.testing import CliRunner, Result

from server.app import create_app
from server.client import commands
from server.client.api import Api
from server.db import session_scope
from server.models import Submission
from tests.server.conftest import Account
from tests.server.web.test_web_judgement import benchmarked, timed_case, with_cases
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML


class AppTransport(httpx.BaseTransport):
    """The app in this process behind the CLI's synchronous client."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def answer() -> httpx.Response:
            response = await httpx.ASGITransport(app=self.app).handle_async_request(request)
            content = await response.aread()
            return httpx.Response(response.status_code, headers=response.headers, content=content)

        return anyio.run(answer)


def run_cli(monkeypatch: pytest.MonkeyPatch, app: Any, token: str, args: list[str]) -> Result:
    """`kerneljudge ARGS`, the CLI talking to the app in this process."""
    transport = AppTransport(app)
    monkeypatch.setattr(commands, "api", lambda login: Api(login, transport=transport))
    monkeypatch.setenv("KJ_URL", "http://testserver")
    monkeypatch.setenv("KJ_TOKEN", token)
    monkeypatch.setenv("COLUMNS", "400")
    cli = typer.Typer()
    commands.register(cli)
    return CliRunner().invoke(cli, args)


def cli_status(monkeypatch: pytest.MonkeyPatch, app: Any, token: str, sid: int) -> str:
    """`kerneljudge status SID`'s output."""
    return run_cli(monkeypatch, app, token, ["status", str(sid)]).output


def page_text(app: Any, sid: int) -> str:
    with httpx.Client(transport=AppTransport(app), base_url="http://test") as http:
        page = http.get(f"/submissions/{sid}", headers=HTML).text
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_the_page_and_the_cli_say_the_same(alice: Account, monkeypatch: pytest.MonkeyPatch) -> None:
    new_problem("agree")
    sid = benchmarked(
        alice.token,
        "agree",
        "fast",
        timed_case(2.0312e-5, 0.02, 0.03, 1.712),
        timed_case(1.23456e-3, 0.34, 0.4, 0.5),
    )
    with session_scope() as session:  # graded on a CPU worker, as its GPU type says
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.report = {**(submission.report or {}), "device": "cpu"}
    app = create_app()
    page = page_text(app, sid)
    out = " ".join(cli_status(monkeypatch, app, alice.token, sid).split())
    for said in (
        "20.3 µs",
        "1.23 ms",
        "171.2%",
        "50.0%",
        "The machine was noisy while this ran",
        "up to 34%, on benchmark 1",
        "Faster than the speed of light",
        "above 100% on benchmark 0 (171%)",
        "compare benchmark-mode times with benchmark-mode times",
        "submit again before you trust a small gain or loss",
    ):
        assert said in page, said
        assert said in out, said
    assert "1.71" not in out.replace("171.2%", "")


def test_a_failed_runs_cases_are_listed_once(
    alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_problem("failing-cases")
    sid = graded(alice.token, "failing-cases", "bad", mode="test")
    said = [f"case size={n}: 8 of 8 elements differ" for n in range(5)]
    cases: list[dict[str, Any]] = [
        {"kind": "test", "params": {"size": n}, "status": "failed", "message": said[n]}
        for n in range(5)
    ]
    with_cases(sid, cases)
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.status, submission.score = "failed", None
        submission.message = (
            "5 of 5 cases failed:\n" + "\n".join(said[:3]) + "\n(and 2 more failing cases)"
        )
    out = cli_status(monkeypatch, create_app(), alice.token, sid)
    assert "5 of 5 cases failed" in out and "more failing cases" not in out
    for line in said:
        assert out.count(line) == 1, (line, out)
    assert "size=4 (" not in out and "test 4 (size=4)" not in out
