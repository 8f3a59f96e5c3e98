"""Forms that a reload cannot repeat, and organizer forms that change only what they show and
say so: a new token shown once after a redirect; a deadline saved without touching the
device types; a live problem validated again (or given a new version) that competitors keep
reading and submitting to until the new version passes."""

from __future__ import annotations

import base64
import json

import httpx
import pytest
from sqlalchemy import select

from server.db import session_scope
from server.models import ApiToken, Problem, Submission
from server.problems import repository, validation
from server.settings import get_settings
from server.submissions import payloads
from server.users.repository import get_user_by_name
from server.web.sessions import SESSION_COOKIE
from tests.server.conftest import Account
from tests.server.problems.test_problem_lifecycle import CODE, record_round
from tests.server.problems.test_problems_api import problem_zip, upload
from tests.server.rows import added_submission
from tests.server.users.test_audit_log import audit_entries
from tests.server.web.test_web_pages import new_problem
from tests.server.web_client import HTML, csrf_from, make_user, post_form, sign_in

pytestmark = pytest.mark.anyio


def cookie_contents(client: httpx.AsyncClient) -> str:
    """What the signed session cookie carries (its first part is plain base64 JSON)."""
    value = client.cookies.get(SESSION_COOKIE) or ""
    payload = value.split(".", 1)[0]
    return base64.b64decode(payload + "=" * (-len(payload) % 4)).decode()


async def test_reloading_the_token_page_mints_no_second_token(
    browser: httpx.AsyncClient,
) -> None:
    name = await sign_in(browser)
    created = await post_form(
        browser, "/account/tokens", {"label": "laptop", "scope": "read"}, from_page=f"/users/{name}"
    )
    assert created.status_code == 303 and created.headers["location"].startswith(f"/users/{name}")
    shown = await browser.get(created.headers["location"], headers=HTML)
    token = shown.text.split('id="new-token" class="token">', 1)[1].split("<", 1)[0]
    assert token.startswith("kj_")
    # Kept for that one page on the server, never in the cookie.
    assert token not in cookie_contents(browser)

    reloaded = await browser.get(created.headers["location"], headers=HTML)
    assert 'id="new-token"' not in reloaded.text and token not in reloaded.text
    with session_scope() as session:
        user = get_user_by_name(session, name)
        assert user is not None
        tokens = session.scalars(select(ApiToken).where(ApiToken.user_id == user.id)).all()
        assert [t.label for t in tokens].count("laptop") == 1


async def test_an_upload_answers_with_a_redirect_and_says_what_it_did(
    browser: httpx.AsyncClient,
) -> None:
    await sign_in(browser, "uploader", admin=True)
    shown = await browser.get("/admin/problems", headers=HTML)
    uploaded = await browser.post(
        "/admin/problems",
        data={"csrf_token": csrf_from(shown)},
        files={"archive": ("p.zip", problem_zip("redirected"))},
        headers=HTML,
    )
    assert uploaded.status_code == 303
    after = await browser.get(uploaded.headers["location"], headers=HTML)
    assert 'id="notice"' in after.text
    assert "Problem redirected added; it goes live once validated." in after.text
    again = await browser.get("/admin/problems", headers=HTML)
    assert 'id="notice"' not in again.text  # said once


async def test_saving_a_deadline_keeps_the_gpu_types_and_says_saved(
    browser: httpx.AsyncClient,
) -> None:
    """This service grades on cpu only; the problem also lists h200 (for another install).
    The form shows only cpu, so saving it must leave h200 listed."""
    new_problem("keeps", gpu_types=["h200", "cpu"], code_public_after_deadline=True)
    await sign_in(browser, "keeper", admin=True)
    page = await browser.get("/admin/problems", headers=HTML)
    row = page.text.split('id="p-keeps"', 1)[1].split("</tr>", 1)[0]
    assert "Also listed, kept as they are: h200" in row
    # What the browser sends for this row's form, with the deadline filled in.
    fields = {
        "csrf_token": csrf_from(page),
        "is_public": ["off", "on"],
        "starts_at": "",
        "deadline": "2030-01-02T03:04",
        "code_public_after_deadline": ["off", "on"],
        "gpu_types_listed": "1",
        "gpu_types": "cpu",
    }
    saved = await browser.post("/admin/problems/keeps", data=fields, headers=HTML)
    assert saved.status_code == 303
    after = await browser.get(saved.headers["location"], headers=HTML)
    assert "Saved the settings of keeps." in after.text

    # A form carrying fewer fields changes only those.
    fewer = await post_form(
        browser,
        "/admin/problems/keeps",
        {"starts_at": "2029-01-01T00:00"},
        from_page="/admin/problems",
    )
    assert fewer.status_code == 303
    with session_scope() as session:
        problem = repository.get_problem(session, "keeps")
        assert problem is not None
        assert problem.gpu_types == ["h200", "cpu"]
        assert problem.deadline is not None and problem.deadline.year == 2030
        assert problem.starts_at is not None and problem.starts_at.year == 2029
        assert problem.is_public and problem.code_public_after_deadline
        assert problem.validation_attempt == 0  # nothing changed that needs validating


async def test_every_organizer_form_that_saves_says_so(browser: httpx.AsyncClient) -> None:
    new_problem("told")
    author, _ = make_user()
    await sign_in(browser, "teller", admin=True)
    with session_scope() as session:
        user = get_user_by_name(session, author)
        problem = repository.get_problem(session, "told")
        assert user is not None and problem is not None
        submission = added_submission(
            session, user, problem, mode="test", code=CODE, status="passed"
        )
        sid, uid = submission.id, user.id
    for path, form, page, said in (
        (
            f"/admin/submissions/{sid}",
            {"action": "hide", "reason": "r"},
            "/admin/submissions",
            "hidden",
        ),
        (
            f"/admin/submissions/{sid}",
            {"action": "hack", "reason": "r"},
            "/admin/submissions",
            "hacked",
        ),
        (f"/admin/users/{uid}", {"action": "make_admin"}, "/admin/users", "organizer"),
        ("/admin/problems/told/validate", {}, "/admin/problems", "Validating told version 1"),
        ("/admin/problems/told", {"deadline": ""}, "/admin/problems", "Saved the settings"),
    ):
        done = await post_form(browser, path, form, from_page=page)
        assert done.status_code == 303, path
        assert said in (await browser.get(done.headers["location"], headers=HTML)).text, path


async def reachable(client: httpx.AsyncClient, competitor: Account, name: str) -> dict[str, object]:
    """The problem as a competitor finds it: its page and its API both answer."""
    page = await client.get(f"/problems/{name}", headers=HTML)
    assert page.status_code == 200, page.text
    api = await client.get(f"/api/v1/problems/{name}", headers=competitor.headers)
    assert api.status_code == 200, api.text
    body: dict[str, object] = api.json()
    return body


async def test_revalidating_keeps_the_problem_serving_and_switches_version_on_success(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, alice: Account
) -> None:
    await upload(client, admin, problem_zip("served", description="first words"), "p.zip")
    record_round("served")
    assert (await reachable(client, alice, "served"))["version"] == 1

    # "Validate again": competitors keep it throughout.
    await sign_in(browser, "revalidator", admin=True)
    again = await post_form(
        browser, "/admin/problems/served/validate", {}, from_page="/admin/problems"
    )
    assert again.status_code == 303
    assert (await reachable(client, alice, "served"))["status"] == "live"
    submitted = await client.post(
        "/api/v1/submissions",
        json={"problem": "served", "code": CODE, "mode": "test"},
        headers=alice.headers,
    )
    assert submitted.status_code == 202, submitted.text
    record_round("served")
    assert (await reachable(client, alice, "served"))["version"] == 1

    # A new version: the live one serves, and is graded, until the new one passes.
    shown = await browser.get("/admin/problems", headers=HTML)
    uploaded = await browser.post(
        "/admin/problems",
        data={"csrf_token": csrf_from(shown)},
        files={"archive": ("p.zip", problem_zip("served", description="second words"))},
        headers=HTML,
    )
    assert uploaded.status_code == 303
    admin_page = (await browser.get(uploaded.headers["location"], headers=HTML)).text
    assert "version 2 is being validated; version 1 stays live until it passes" in admin_page
    during = await reachable(client, alice, "served")
    assert during["version"] == 1 and "first words" in str(during["description"])
    assert "first words" in (await client.get("/problems/served", headers=HTML)).text
    submitted = await client.post(
        "/api/v1/submissions",
        json={"problem": "served", "code": CODE, "mode": "test"},
        headers=alice.headers,
    )
    assert submitted.status_code == 202, submitted.text
    with session_scope() as session:
        problem = repository.get_problem(session, "served")
        assert problem is not None
        (row,) = validation.current_round(session, problem)
        # The workers validate the new files, while gradings get the live ones.
        _, sent = validation.message(session, row.id, get_settings()) or (None, {})
        assert sent["problem"]["version"] == 2
        assert "second words" in json.dumps(sent["problem"]["files"])
        graded = session.get(Submission, submitted.json()["id"])
        assert graded is not None and graded.problem_version == 1
        grading = payloads.grading_payload(graded, get_settings())
        assert "first words" in json.dumps(grading["problem"]["files"])

    record_round("served")
    after = await reachable(client, alice, "served")
    assert after["version"] == 2 and "second words" in str(after["description"])
    assert after["pending_version"] is None
    assert "second words" in (await client.get("/problems/served", headers=HTML)).text

    # A new version that fails its round never replaces the live one.
    await upload(client, admin, problem_zip("served", description="third words"), "p.zip")
    record_round("served", "failed")
    kept = await reachable(client, alice, "served")
    assert kept["version"] == 2 and "second words" in str(kept["description"])
    assert kept["pending_version"] == 3
    admin_page = (await browser.get("/admin/problems", headers=HTML)).text
    assert "Version 3 failed validation; version 2 stays live" in admin_page
    entry = (await audit_entries(client, admin, action="problem.update", target="served"))[0]
    assert entry["details"]["version"] == 3 and entry["details"]["live_version"] == 2
    with session_scope() as session:
        stored = session.scalar(select(Problem).where(Problem.name == "served"))
        assert stored is not None and stored.status == "live"
