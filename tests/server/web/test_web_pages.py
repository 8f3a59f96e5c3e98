"""The pages' rules: who sees a submission's code, what leaves the leaderboard, deadlines,
the submit form's errors, API tokens, error pages and safe problem text."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from grader.problem import load_problem
from server.app import create_app
from server.db import session_scope
from server.leaderboards import upkeep
from server.models import Problem, Submission, utcnow
from server.problems.service import upsert_problem
from server.submissions.service import TERMINAL
from server.users.repository import get_user_by_name
from server.users.service import authenticate
from tests.server.web_client import (
    HTML,
    csrf_from,
    log_in,
    make_user,
    moderate,
    post_form,
    sign_in,
    submit_form,
)

pytestmark = pytest.mark.anyio

CODE = """import torch

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
# marker-{}
"""


def new_problem(name: str, **settings: object) -> None:
    """A copy of vectoradd under another name, so deadlines set here touch no other test."""
    with session_scope() as session:
        problem = upsert_problem(session, load_problem("vectoradd"), name)
        for key, value in settings.items():
            setattr(problem, key, value)


def graded(
    user_token: str, problem: str, marker: str, *, score: float = 1e-4, mode: str = "leaderboard"
) -> int:
    """A submission as the API stores it, with a passed report written straight to the DB."""
    with session_scope() as session:
        user = authenticate(session, user_token)
        record = session.scalar(select(Problem).where(Problem.name == problem))
        assert record is not None
        submission = Submission(
            user_id=user.id,
            problem_id=record.id,
            problem_version=record.version,
            code=CODE.format(marker),
            code_sha256="0" * 64,
            mode=mode,
            gpu_type="cpu",
            status="passed",
            score=score,
            flags=[],
            report={
                "status": "passed",
                "cases": [
                    {
                        "kind": "benchmark",
                        "params": {"size": 256},
                        "status": "passed",
                        "time": {"median_s": score, "cv": 0.01, "samples": 10},
                        "roofline": {"sol_fraction": 0.5},
                    }
                ],
                "stdout": f"stdout-{marker}",
                "stderr": "",
            },
            started_at=utcnow(),
            finished_at=utcnow(),
        )
        session.add(submission)
        session.flush()
        upkeep.submission_changed(session, submission)
        return submission.id


async def test_code_is_for_its_author_until_the_organizers_publish_it(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("privacy")
    author, token = make_user()
    other, _ = make_user()
    sid = graded(token, "privacy", "secret-sauce")

    anonymous = await browser.get(f"/submissions/{sid}", headers=HTML)
    assert anonymous.status_code == 200
    assert "passed" in anonymous.text
    assert "secret-sauce" not in anonymous.text
    await log_in(browser, other)
    assert "secret-sauce" not in (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert "secret-sauce" not in (await browser.get(f"/submissions/{sid}/live")).text

    # A passed deadline alone publishes nothing; the organizers' choice does.
    with session_scope() as session:
        problem = session.scalar(select(Problem).where(Problem.name == "privacy"))
        assert problem is not None
        problem.deadline = utcnow() - timedelta(minutes=1)
    assert "secret-sauce" not in (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    with session_scope() as session:
        problem = session.scalar(select(Problem).where(Problem.name == "privacy"))
        assert problem is not None
        problem.code_public_after_deadline = True
    published = await browser.get(f"/submissions/{sid}", headers=HTML)
    assert "marker-secret-sauce" in published.text

    await post_form(browser, "/logout", {}, from_page="/")
    await log_in(browser, author)
    own = await browser.get(f"/submissions/{sid}", headers=HTML)
    assert "marker-secret-sauce" in own.text
    # A ranked run's output stays the organizers' (it could carry the ranked inputs).
    assert "stdout-secret-sauce" not in own.text and "withheld" in own.text

    tested = graded(token, "privacy", "debugging", mode="test")
    assert "stdout-debugging" in (await browser.get(f"/submissions/{tested}", headers=HTML)).text


async def test_a_failing_private_submission_shows_others_no_line_of_its_source(
    browser: httpx.AsyncClient,
) -> None:
    """An error's traceback and a screening finding quote the code; stdout may print it.
    Until the code is published only its author and organizers read them; anyone else sees
    the verdict and a summary."""
    new_problem("private-errors")
    author, token = make_user()
    other, _ = make_user()
    secret = "secret_tensor_trick(a, b)"
    traceback = f'File "submission.py", line 4, in custom_kernel\n    return {secret}\nNameError'
    reports = {
        "error": ("error", f"custom_kernel raised:\n{traceback}", [f"screening: line 4: {secret}"]),
        "rejected": (
            "rejected",
            f"static screening rejected this submission:\nline 4: {secret}",
            [],
        ),
        "failed": ("failed", "1 of 1 cases failed", []),
    }
    ids = {}
    for name, (status, message, flags) in reports.items():
        sid = graded(token, "private-errors", name, mode="test")
        with session_scope() as session:
            submission = session.get(Submission, sid)
            assert submission is not None
            submission.status, submission.message, submission.flags = status, message, flags
            report = dict(submission.report or {})
            report["stdout"] = f"printed {secret}"
            report["cases"] = [
                {"kind": "test", "params": {"size": 8}, "status": status, "message": traceback}
            ]
            submission.report = report
        ids[name] = sid
    for viewer in (None, other):
        if viewer is not None:
            await log_in(browser, viewer)
        for name, sid in ids.items():
            for url in (f"/submissions/{sid}", f"/submissions/{sid}/live"):
                page = (await browser.get(url, headers=HTML)).text
                assert secret not in page and "submission.py" not in page, (viewer, name, url)
                assert "until the code is published" in page
        await post_form(browser, "/logout", {}, from_page="/") if viewer is not None else None
    await log_in(browser, author)
    own = (await browser.get(f"/submissions/{ids['error']}", headers=HTML)).text
    assert secret in own and "screening: line 4" in own


async def test_code_public_after_a_deadline_that_has_not_come(
    browser: httpx.AsyncClient,
) -> None:
    new_problem("future", deadline=utcnow() + timedelta(days=1), code_public_after_deadline=True)
    _, token = make_user()
    sid = graded(token, "future", "not-yet")
    assert "not-yet" not in (await browser.get(f"/submissions/{sid}", headers=HTML)).text


async def test_hidden_and_hacked_submissions_leave_the_leaderboard(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("moderated")
    first, first_token = make_user()
    second, second_token = make_user()
    fast = graded(first_token, "moderated", "fast", score=1e-5)
    graded(second_token, "moderated", "slow", score=2e-5)

    async def board() -> list[tuple[str, int]]:
        entries = (await client.get("/api/v1/leaderboards/moderated")).json()["entries"]
        return [(entry["user"], entry["submission_id"]) for entry in entries]

    assert (await board())[0] == (first, fast)
    admin = await sign_in(browser, "boss", admin=True)
    for action in ("hide", "hack"):
        await moderate(browser, "submissions", fast, action, "reads the expected output")
        assert [user for user, _ in await board()] == [second], action
        page = await browser.get("/leaderboards/moderated", headers=HTML)
        assert f"/submissions/{fast}" not in page.text
        undo = "unhide" if action == "hide" else "unhack"
        await moderate(browser, "submissions", fast, undo)
        assert (await board())[0] == (first, fast)

    # A hidden submission is not shown to other competitors at all.
    await moderate(browser, "submissions", fast, "hide", "copied")
    await post_form(browser, "/logout", {}, from_page="/")
    assert (await browser.get(f"/submissions/{fast}", headers=HTML)).status_code == 404

    # A banned user leaves it too.
    await log_in(browser, admin)
    with session_scope() as session:
        banned = get_user_by_name(session, second)
        assert banned is not None
        banned_id = banned.id
    await moderate(browser, "users", banned_id, "ban", "a second account")
    assert await board() == []


async def test_admin_re_runs_a_submission(browser: httpx.AsyncClient) -> None:
    new_problem("rerun")
    _, token = make_user()
    sid = graded(token, "rerun", "again")
    await sign_in(browser, "boss", admin=True)
    response = await moderate(browser, "submissions", sid, "rerun")
    assert response.status_code == 303
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        assert submission.status == "queued" and submission.score is None
        assert submission.report is None
        assert submission.status not in TERMINAL


async def test_leaderboard_mode_closes_at_the_deadline(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("closed", deadline=utcnow() - timedelta(hours=1))
    name, token = make_user()
    headers = {"Authorization": f"Bearer {token}"}
    ranked = await client.post(
        "/api/v1/submissions",
        json={"problem": "closed", "code": CODE.format(1), "mode": "leaderboard"},
        headers=headers,
    )
    assert ranked.status_code == 409
    assert "closed" in ranked.json()["detail"]
    tested = await client.post(
        "/api/v1/submissions",
        json={"problem": "closed", "code": CODE.format(2), "mode": "test"},
        headers=headers,
    )
    assert tested.status_code == 202
    await log_in(browser, name)
    form = await submit_form(
        browser, {"problem": "closed", "mode": "leaderboard", "code": CODE.format(3)}
    )
    assert form.status_code == 422
    assert 'id="mode-error"' in form.text and "closed" in form.text


async def test_submit_form_shows_each_error_next_to_its_field(
    browser: httpx.AsyncClient,
) -> None:
    await sign_in(browser)
    bad = await submit_form(browser, {"problem": "no-such-problem", "mode": "fast", "code": ""})
    assert bad.status_code == 422
    for field in ("problem", "mode", "code"):
        assert f'id="{field}-error"' in bad.text, field
    gpu = await submit_form(
        browser, {"problem": "vectoradd", "mode": "test", "gpu": "tpu", "code": CODE.format(4)}
    )
    assert 'id="gpu-error"' in gpu.text and "unknown GPU type" in gpu.text
    # The pasted code stays in the form.
    assert "marker-4" in gpu.text
    good = await submit_form(
        browser, {"problem": "vectoradd", "mode": "test", "code": CODE.format(5)}
    )
    assert good.status_code == 303
    page = await browser.get(good.headers["location"], headers=HTML)
    assert "queued" in page.text and "data-live-url" in page.text


async def test_a_file_and_pasted_code_together_are_refused(browser: httpx.AsyncClient) -> None:
    """Which one was meant? Neither is chosen silently."""
    await sign_in(browser)
    token = csrf_from(await browser.get("/submit", headers=HTML))
    both = await browser.post(
        "/submit",
        data={"problem": "vectoradd", "mode": "test", "code": CODE.format(6), "csrf_token": token},
        files={"file": ("kernel.py", CODE.format(7).encode(), "text/x-python")},
        headers=HTML,
    )
    assert both.status_code == 422
    assert 'id="code-error"' in both.text and "not both" in both.text
    with session_scope() as session:
        assert (
            session.scalar(select(Submission).where(Submission.code.contains("marker-7"))) is None
        )


async def test_tokens_are_shown_once_and_can_be_revoked(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    name = await sign_in(browser)
    created = await post_form(
        browser, "/account/tokens", {"label": "ci", "scope": "read"}, from_page=f"/users/{name}"
    )
    assert created.status_code == 303
    shown = await browser.get(created.headers["location"], headers=HTML)
    token = shown.text.split('id="new-token" class="token">', 1)[1].split("<", 1)[0]
    assert token.startswith("kj_")
    again = await browser.get(f"/users/{name}", headers=HTML)
    assert token not in again.text and token[:10] in again.text
    headers = {"Authorization": f"Bearer {token}"}
    assert (await client.get("/api/v1/problems/vectoradd", headers=headers)).status_code == 200
    token_id = again.text.split("/account/tokens/", 1)[1].split("/", 1)[0]
    await post_form(browser, f"/account/tokens/{token_id}/revoke", {}, from_page=f"/users/{name}")
    refused = await client.post(
        "/api/v1/submissions",
        json={"problem": "vectoradd", "code": CODE.format(6)},
        headers=headers,
    )
    assert refused.status_code == 401
    # Someone else's token cannot be revoked by id.
    other, _ = make_user()
    await post_form(browser, "/logout", {}, from_page="/")
    await log_in(browser, other)
    foreign = await post_form(
        browser, f"/account/tokens/{token_id}/revoke", {}, from_page=f"/users/{other}"
    )
    assert foreign.status_code == 404


async def test_error_pages_for_browsers_json_for_the_api(browser: httpx.AsyncClient) -> None:
    page = await browser.get("/no/such/page", headers=HTML)
    assert page.status_code == 404
    assert page.headers["content-type"].startswith("text/html")
    assert "Page not found" in page.text
    api = await browser.get("/api/v1/problems/nothing-here", headers=HTML)
    assert api.status_code == 404 and api.json()["error"] == "not_found"
    plain = await browser.get("/no/such/page")
    assert plain.json()["error"] == "not_found"


async def test_pages_answer_500_with_a_page_not_a_trace(
    database: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.web import pages

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(pages.leaderboards, "competitor_counts", broken)
    transport = httpx.ASGITransport(app=create_app(), raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        page = await http.get("/", headers=HTML)
    assert page.status_code == 500
    assert "Something went wrong on our side" in page.text
    assert "a bug" not in page.text


async def test_problem_text_cannot_inject_markup(browser: httpx.AsyncClient) -> None:
    new_problem(
        "injected",
        description="# Title\n\n<script>alert(1)</script> [link](javascript:alert(2)) **bold**",
    )
    page = await browser.get("/problems/injected", headers=HTML)
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text
    assert "&lt;script&gt;" in page.text
    assert 'href="javascript:' not in page.text
    assert "<strong>bold</strong>" in page.text


async def test_every_page_renders(browser: httpx.AsyncClient) -> None:
    new_problem("rendered")
    name, token = make_user()
    sid = graded(token, "rendered", "pages")
    await log_in(browser, name)
    for path in (
        "/",
        "/problems/rendered",
        "/problems/rendered?gpu=cpu",
        "/leaderboards/rendered",
        "/submit",
        "/submit?problem=rendered",
        f"/submissions/{sid}",
        f"/users/{name}",
        "/login",
        "/signup",
    ):
        response = await browser.get(path, headers=HTML)
        assert response.status_code == 200, path
    template = await browser.get("/problems/rendered/template")
    assert "custom_kernel" in template.text
    assert "attachment" in template.headers["content-disposition"]
    board = await browser.get("/leaderboards/rendered", headers=HTML)
    assert "<svg" in board.text and "50.0%" in board.text


async def test_posting_the_submit_form_twice_makes_one_submission(
    browser: httpx.AsyncClient,
) -> None:
    """A double click, or the browser sending the form again, is the same submission."""
    await sign_in(browser)
    shown = await browser.get("/submit", headers=HTML)
    key = re.search(r'name="idempotency_key" value="([0-9a-f]+)"', shown.text)
    assert key, "the form carries no idempotency key"
    fields = {
        "csrf_token": csrf_from(shown),
        "idempotency_key": key.group(1),
        "problem": "vectoradd",
        "mode": "test",
        "code": CODE.format("twice"),
    }
    first = await browser.post("/submit", data=fields, headers=HTML)
    again = await browser.post("/submit", data=fields, headers=HTML)
    assert first.status_code == again.status_code == 303
    assert first.headers["location"] == again.headers["location"]
    another = await browser.get("/submit", headers=HTML)
    assert key.group(1) not in another.text  # a new form is a new submission


async def test_a_copy_kept_for_anonymous_readers_is_never_shown_to_a_signed_in_one(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    new_problem("crowded")
    name, _ = make_user()
    anonymous = await client.get("/problems/crowded", headers=HTML)
    assert anonymous.status_code == 200
    assert "set-cookie" not in anonymous.headers  # nothing per visitor in it
    assert (await client.get("/problems/crowded", headers=HTML)).text == anonymous.text
    await log_in(browser, name)
    signed_in = await browser.get("/problems/crowded", headers=HTML)
    assert f">{name}</a>" in signed_in.text and "Log out" in signed_in.text
    assert f">{name}</a>" not in anonymous.text


async def test_the_api_docs_need_no_internet(client: httpx.AsyncClient) -> None:
    """/docs loads Swagger UI from this server (the swagger-ui-py package), not a CDN."""
    docs = await client.get("/docs")
    assert docs.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert sources and all(source.startswith("/") for source in sources), sources
    for source in sources:
        asset = await client.get(source)
        assert asset.status_code == 200 and asset.content, source


async def test_every_response_says_what_a_page_may_do(client: httpx.AsyncClient) -> None:
    """Only the site's own scripts run, nothing loads from elsewhere, no other site frames
    a page: on pages (a stored anonymous copy included), the API and static files."""
    for path, headers in (
        ("/problems", HTML),
        ("/problems", HTML),  # the second read is served from the anonymous copy
        ("/api/v1/problems", {}),
        ("/static/site.js", {}),
        ("/no-such-page", HTML),
    ):
        response = await client.get(path, headers=headers)
        policy = response.headers.get("content-security-policy", "")
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
        assert directives["script-src"] == "'self'", (path, policy)
        assert directives["default-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
        assert response.headers["x-frame-options"] == "DENY"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"


async def test_a_profile_is_shown_to_its_author_alone(browser: httpx.AsyncClient) -> None:
    """Profile mode's table names the submission's own kernels: its author reads it, per
    call, with why there is no Nsight Compute profile; another user and the API without
    the author's token do not."""
    new_problem("profiled")
    author, token = make_user()
    other, _ = make_user()
    sid = graded(token, "profiled", "profile", mode="profile", score=1e-4)
    kernel = "my_secret_fused_add_kernel"
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.score = None
        report = dict(submission.report or {})
        report["cases"] = [
            {
                "kind": "benchmark",
                "params": {"size": 256},
                "status": "passed",
                "time": None,
                "profile": {
                    "tool": "torch.profiler",
                    "why_not_ncu": "a CPU worker: Nsight Compute profiles CUDA kernels only",
                    "calls": 3,
                    "wall_us_per_call": 90.0,
                    "rows": [
                        {
                            "name": kernel,
                            "device_type": "CPU",
                            "count": 3,
                            "self_us": 150.0,
                            "total_us": 180.0,
                            "self_device_us": 0.0,
                            "device_us": 0.0,
                        }
                    ],
                },
            }
        ]
        submission.report = report
    await log_in(browser, author)
    own = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert kernel in own and "Nsight Compute profiles CUDA kernels only" in own
    # 150 µs of self time over 3 calls: 50 µs a call.
    assert ">50 µs<" in own and ">60 µs<" in own
    api = await browser.get(
        f"/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}
    )
    assert api.json()["cases"][0]["profile"]["rows"][0]["name"] == kernel
    await post_form(browser, "/logout", {}, from_page="/")
    await log_in(browser, other)
    assert kernel not in (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert kernel not in (await browser.get(f"/api/v1/submissions/{sid}")).text


async def test_an_errors_message_keeps_its_lines_and_its_caret(
    browser: httpx.AsyncClient,
) -> None:
    """A syntax error reads as Python printed it: its line, then the caret under the
    column, not squashed into one paragraph."""
    new_problem("caret")
    author, token = make_user()
    sid = graded(token, "caret", "syntax", mode="test")
    message = (
        'submission.py failed to load:\n  File "submission.py", line 3\n'
        "    def custom_kernel(data)\n                           ^\nSyntaxError: expected ':'"
    )
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.status, submission.message, submission.score = "error", message, None
        submission.report = {"status": "error", "message": message, "cases": []}
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    shown = re.search(r'<pre class="message verdict-text">(.*?)</pre>', page, re.S)
    assert shown is not None, page
    assert shown.group(1).replace("&#39;", "'").replace("&#34;", '"') == message
