"""While a competition is open, a competitor's test and benchmark runs on its problems (and
their scores) are theirs and the organizers': not on their public user page, not on the
submission's page for anyone else; ranked runs stay public, and once the competition
closes so do the others."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from sqlalchemy import update

from server.db import session_scope
from server.models import Competition, utcnow
from tests.server.competitions.rig import OPENED, add_competition, problems, ranked
from tests.server.conftest import Account
from tests.server.web_client import HTML, log_in, make_user

pytestmark = pytest.mark.anyio


async def test_runs_other_than_ranked_ones_are_private_while_the_competition_is_open(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    name, token = make_user("trier")
    trier = Account(name, token)
    (problem,) = problems(1)
    outside = problems(1)[0]  # in no competition
    competition = await add_competition(client, admin, [problem])
    now = utcnow()
    benchmark = ranked(trier, problem, 3.25e-5, now, mode="benchmark")
    test_run = ranked(trier, problem, None, now, mode="test")
    ranked_run = ranked(trier, problem, 4e-5, now)
    elsewhere = ranked(trier, outside, 5e-5, now, mode="benchmark")

    # Anyone else: neither page lists or shows the private runs.
    public_page = (await client.get(f"/users/{name}", headers=HTML)).text
    for sid in (benchmark, test_run):
        assert f'/submissions/{sid}"' not in public_page
        assert (await client.get(f"/submissions/{sid}", headers=HTML)).status_code == 404
        other = await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)
        assert other.status_code == 404
    assert "32.5 µs" not in public_page
    for sid in (ranked_run, elsewhere):
        assert f'/submissions/{sid}"' in public_page
        assert (await client.get(f"/submissions/{sid}", headers=HTML)).status_code == 200

    # The author and the organizers see them, marked private.
    mine = await client.get(f"/api/v1/submissions/{benchmark}", headers=trier.headers)
    assert mine.status_code == 200 and mine.json()["score"] == 3.25e-5
    listed = await client.get("/api/v1/submissions", headers=trier.headers)
    assert benchmark in {s["id"] for s in listed.json()["submissions"]}
    assert (
        await client.get(f"/api/v1/submissions/{benchmark}", headers=admin.headers)
    ).status_code == 200
    await log_in(browser, name)
    own_page = (await browser.get(f"/users/{name}", headers=HTML)).text
    assert f'/submissions/{benchmark}"' in own_page and "private-run" in own_page
    assert "32.5 µs" in own_page
    assert (await browser.get(f"/submissions/{benchmark}", headers=HTML)).status_code == 200

    # Closed: the runs are public again.
    with session_scope() as db:
        db.execute(
            update(Competition)
            .where(Competition.name == competition)
            .values(closes_at=utcnow() - timedelta(minutes=1), opens_at=OPENED)
        )
    public_page = (await client.get(f"/users/{name}", headers=HTML)).text
    assert f'/submissions/{benchmark}"' in public_page and "private-run" not in public_page
    assert (await client.get(f"/submissions/{benchmark}", headers=HTML)).status_code == 200
