"""Submission rate limits per user and problem: counted from the submissions table, the same
for the REST API and the submit form, 429 with Retry-After, admins exempt."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from server.app import create_app
from server.db import session_scope
from server.models import Submission, User
from server.settings import Settings, get_settings
from tests.server.conftest import Account
from tests.server.web_client import log_in, make_user, submit_form

pytestmark = pytest.mark.anyio

CODE = "def custom_kernel(data):\n    return data\n# {}\n"
LIMIT = 2
WINDOW_S = 60


@pytest.fixture
async def limited(database: None) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose app allows two submissions per user and problem a minute."""
    app = create_app()
    settings = Settings(submission_rate_limit=LIMIT, submission_rate_window_s=WINDOW_S)
    app.dependency_overrides[get_settings] = lambda: settings
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


async def submit(
    client: httpx.AsyncClient, account: Account, marker: int, problem: str = "vectoradd"
) -> httpx.Response:
    return await client.post(
        "/api/v1/submissions",
        json={"problem": problem, "code": CODE.format(marker), "mode": "test"},
        headers=account.headers,
    )


def age_submissions(ids: list[int], seconds: float) -> None:
    """Pretend these submissions were made ``seconds`` earlier than they were."""
    with session_scope() as session:
        for submission_id in ids:
            submission = session.get(Submission, submission_id)
            assert submission is not None
            session.execute(
                update(Submission)
                .where(Submission.id == submission_id)
                .values(created_at=submission.created_at - timedelta(seconds=seconds))
            )


async def test_over_the_limit_is_429_with_retry_after(
    limited: httpx.AsyncClient, alice: Account
) -> None:
    first = await submit(limited, alice, 1)
    second = await submit(limited, alice, 2)
    assert (first.status_code, second.status_code) == (202, 202)
    # The oldest counted submission leaves the window first: it decides the wait.
    age_submissions([first.json()["id"]], 50)

    refused = await submit(limited, alice, 3)
    assert refused.status_code == 429
    assert refused.json()["error"] == "too_many_requests"
    assert "vectoradd" in refused.json()["detail"]
    assert 9 <= int(refused.headers["Retry-After"]) <= 10
    # Refused submissions are not stored, so they do not lengthen the wait.
    with session_scope() as session:
        count = (
            session.query(Submission)
            .join(User, User.id == Submission.user_id)
            .filter(User.name == alice.name, Submission.code.contains("# 3"))
            .count()
        )
    assert count == 0

    # Per problem: another problem is still open to the same user.
    assert (await submit(limited, alice, 4, problem="vectorsum")).status_code == 202


async def test_the_window_slides(limited: httpx.AsyncClient, alice: Account) -> None:
    ids = [(await submit(limited, alice, n)).json()["id"] for n in range(LIMIT)]
    assert (await submit(limited, alice, 10)).status_code == 429
    age_submissions(ids[:1], WINDOW_S + 1)
    assert (await submit(limited, alice, 11)).status_code == 202
    assert (await submit(limited, alice, 12)).status_code == 429


async def test_other_users_and_admins_are_not_limited(
    limited: httpx.AsyncClient, alice: Account, admin: Account, database: None
) -> None:
    for n in range(LIMIT):
        assert (await submit(limited, alice, n)).status_code == 202
    assert (await submit(limited, alice, 99)).status_code == 429
    bob = Account(*make_user("bob"))
    assert (await submit(limited, bob, 1)).status_code == 202
    for n in range(LIMIT + 3):
        assert (await submit(limited, admin, 100 + n)).status_code == 202


async def test_the_submit_form_shows_the_limit(limited: httpx.AsyncClient) -> None:
    name, token = make_user()
    account = Account(name, token)
    for n in range(LIMIT):
        assert (await submit(limited, account, n)).status_code == 202
    await log_in(limited, name)
    form = await submit_form(
        limited, {"problem": "vectoradd", "mode": "test", "code": CODE.format("form")}
    )
    assert form.status_code == 429
    assert 'class="alert error"' in form.text and "try again in" in form.text
    assert 1 <= int(form.headers["Retry-After"]) <= WINDOW_S
    assert "# form" in form.text  # the code typed is kept for the next try


async def test_openapi_declares_the_429(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    assert "429" in schema["paths"]["/api/v1/submissions"]["post"]["responses"]


def test_the_limit_reads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KJ_SUBMISSION_RATE_LIMIT", "5")
    monkeypatch.setenv("KJ_SUBMISSION_RATE_WINDOW_S", "30")
    settings = Settings()
    assert (settings.submission_rate_limit, settings.submission_rate_window_s) == (5, 30)
