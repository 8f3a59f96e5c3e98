"""A token's submissions take turns before they reach the database (server/turns.py): while
one is being made, the same token's next waits on the event loop, holding no thread, so the
token's reads and other users' submissions go on."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from server import turns
from server.submissions import service
from tests.server.conftest import make_account
from tests.server.submissions.test_submissions_api import HONEST

pytestmark = pytest.mark.anyio


async def test_a_tokens_second_submission_waits_its_turn_and_nothing_else_does(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ada, bob = make_account(), make_account()
    first_inside, release = threading.Event(), threading.Event()
    inside: list[str] = []
    real = service.create_submission

    def slow_for_the_first(session: Any, settings: Any, user: Any, **kwargs: Any) -> Any:
        inside.append(user.name)
        if len(inside) == 1:
            first_inside.set()
            assert release.wait(30), "the test never let the first submission finish"
        return real(session, settings, user, **kwargs)

    monkeypatch.setattr(service, "create_submission", slow_for_the_first)

    def post(account: Any, note: str) -> Any:
        body = {"problem": "vectoradd", "code": f"{HONEST}\n# {note}\n", "mode": "test"}
        return client.post("/api/v1/submissions", json=body, headers=account.headers)

    first = asyncio.ensure_future(post(ada, "first"))
    await asyncio.to_thread(first_inside.wait, 30)
    second = asyncio.ensure_future(post(ada, "second"))
    await asyncio.sleep(0.3)
    assert inside == [ada.name]  # the second is not in yet
    assert len(turns.SUBMISSIONS) == 1

    # Meanwhile the same token reads, and another user submits.
    listed = await client.get("/api/v1/submissions", headers=ada.headers)
    assert listed.status_code == 200
    other = await post(bob, "bob's")
    assert other.status_code == 202, other.text
    assert inside == [ada.name, bob.name]

    release.set()
    answers = await asyncio.gather(first, second)
    assert [a.status_code for a in answers] == [202, 202]
    assert len({a.json()["id"] for a in answers}) == 2
    assert inside == [ada.name, bob.name, ada.name]
    assert len(turns.SUBMISSIONS) == 0  # nothing kept once nobody waits
