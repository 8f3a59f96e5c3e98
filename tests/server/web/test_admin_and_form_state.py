"""What a page offers as things stand: the submit form leaves leaderboard mode out for a
problem that does not take it now (its deadline passed, its start not come), saying why, and
offers it where it is taken; the admin problems page's row polls its validation state while
a device's report is awaited, and the state it polls says when to stop."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import httpx
import pytest

from server.models import utcnow
from tests.server.conftest import Account
from tests.server.problems.test_problem_lifecycle import record_round
from tests.server.problems.test_problems_api import problem_zip, upload
from tests.server.web.test_web_pages import new_problem
from tests.server.web_client import HTML, sign_in

pytestmark = pytest.mark.anyio

LEADERBOARD_INPUT = re.compile(r'<input type="radio" id="mode-leaderboard"[^>]*>')
LEADERBOARD_LABEL = re.compile(r'<label for="mode-leaderboard"[^>]*>')


def closed_reasons(form: httpx.Response) -> dict[str, str]:
    found = re.search(r"data-leaderboard-closed='([^']*)'", form.text)
    assert found, "the form names no problem's reason"
    return dict(json.loads(found.group(1).replace("&#34;", '"')))


def leaderboard_offered(form: httpx.Response) -> bool:
    choice = LEADERBOARD_INPUT.search(form.text)
    label = LEADERBOARD_LABEL.search(form.text)
    assert choice and label, "the mode control lost its leaderboard choice"
    left_out = "disabled" in choice.group(0) and "hidden" in choice.group(0)
    assert left_out == ("hidden" in label.group(0))
    return not left_out


async def test_the_submit_form_leaves_out_leaderboard_mode_where_it_is_refused(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("form-closed", deadline=utcnow() - timedelta(hours=1))
    new_problem("form-open", deadline=utcnow() + timedelta(days=1))
    new_problem("form-later", starts_at=utcnow() + timedelta(days=1))
    await sign_in(browser, "moder", admin=True)  # an admin also sees a problem not yet open

    closed = await browser.get("/submit?problem=form-closed", headers=HTML)
    assert closed.status_code == 200
    assert not leaderboard_offered(closed)
    reason = re.search(r'<p class="hint" id="leaderboard-closed"[^>]*>([^<]*)</p>', closed.text)
    assert reason and reason.group(1).startswith("No leaderboard mode: the competition on")
    assert "closed at" in reason.group(
        1
    ) and "test and benchmark runs are still open" in reason.group(1)
    assert 'id="mode-test" name="mode" value="test" checked' in closed.text

    later = await browser.get("/submit?problem=form-later", headers=HTML)
    assert not leaderboard_offered(later)
    assert "opens at" in later.text

    opened = await browser.get("/submit?problem=form-open", headers=HTML)
    assert leaderboard_offered(opened)
    assert re.search(r'id="leaderboard-closed"[^>]*hidden', opened.text)

    # The form knows each problem's reason, for site.js to follow the problem chosen.
    reasons = closed_reasons(opened)
    assert "closed at" in reasons["form-closed"] and "opens at" in reasons["form-later"]
    assert "form-open" not in reasons

    # A ranked run of a closed problem, asked for anyway, is refused with the reason once.
    shown = await browser.get("/submit?problem=form-closed", headers=HTML)
    token = re.search(r'name="csrf_token" value="([^"]+)"', shown.text)
    assert token
    refused = await browser.post(
        "/submit",
        data={
            "csrf_token": token.group(1),
            "problem": "form-closed",
            "mode": "leaderboard",
            "code": "def custom_kernel(data):\n    return data\n",
        },
        headers=HTML,
    )
    assert refused.status_code == 422
    error = re.search(r'<p class="field-error" id="mode-error"[^>]*>([^<]*)</p>', refused.text)
    assert error and "the competition on &#39;form-closed&#39; closed at" in error.group(1)
    assert '<p class="hint" id="leaderboard-closed" aria-live="polite" hidden></p>' in refused.text
    assert not leaderboard_offered(refused)


async def test_a_rows_validation_state_is_polled_until_its_round_ends(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    await upload(client, admin, problem_zip("polled"), "p.zip")
    await sign_in(browser, "watcher", admin=True)
    page = await browser.get("/admin/problems", headers=HTML)
    row = page.text.split('<tr id="p-polled"', 1)[1].split(">", 1)[0]
    assert 'data-live-url="/admin/problems/polled/state"' in row

    waiting = await browser.get("/admin/problems/polled/state", headers=HTML)
    assert waiting.status_code == 200
    assert 'data-live="true"' in waiting.text
    assert 'data-status="validating"' in waiting.text and ": queued" in waiting.text
    assert 'data-live-part="version"' in waiting.text
    assert 'data-live-part="validation"' in waiting.text

    record_round("polled")
    done = await browser.get("/admin/problems/polled/state", headers=HTML)
    assert 'data-live="false"' in done.text and 'data-status="live"' in done.text
    assert ": passed" in done.text
    page = await browser.get("/admin/problems", headers=HTML)
    row = page.text.split('<tr id="p-polled"', 1)[1].split(">", 1)[0]
    assert "data-live-url" not in row

    # Only organizers read it.
    await sign_in(browser, "curious")
    refused = await browser.get("/admin/problems/polled/state", headers=HTML)
    assert refused.status_code in (403, 404)
