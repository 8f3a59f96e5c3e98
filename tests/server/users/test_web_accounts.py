"""Account rules of the web pages: CSRF on every form, the session cookie's flags, the log-in
limit shared by every API process, banned users, the secret key, admin-only pages."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from server.app import create_app
from server.db import session_scope
from server.settings import InsecureSettings, Settings, get_settings
from server.users.repository import get_user_by_name
from server.users.service import moderate_user
from server.web.sessions import secret_key
from tests.server.conftest import changed_settings
from tests.server.web_client import HTML, csrf_from, log_in, make_user, post_form, sign_in

pytestmark = pytest.mark.anyio


async def test_forms_without_the_sessions_csrf_token_are_refused(
    browser: httpx.AsyncClient,
) -> None:
    name, _ = make_user()
    missing = await browser.post("/login", data={"name": name, "password": "x"}, headers=HTML)
    assert missing.status_code == 403
    assert "expired" in missing.text
    await browser.get("/login", headers=HTML)  # the session now has a token
    forged = await browser.post(
        "/login", data={"name": name, "password": "x", "csrf_token": "forged"}, headers=HTML
    )
    assert forged.status_code == 403
    # Another visitor's token does not fit this session either.
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as other:
        theirs = csrf_from(await other.get("/login", headers=HTML))
    cross = await browser.post(
        "/login", data={"name": name, "password": "x", "csrf_token": theirs}, headers=HTML
    )
    assert cross.status_code == 403
    assert (await log_in(browser, name)).status_code == 303


async def test_every_post_route_checks_csrf(browser: httpx.AsyncClient) -> None:
    admin = await sign_in(browser, "boss", admin=True)
    for path in (
        "/logout",
        "/signup",
        "/submit",
        "/account/tokens",
        "/account/tokens/1/revoke",
        "/admin/problems",
        "/admin/problems/vectoradd",
        "/admin/submissions/1",
        "/admin/users/1",
        "/admin/users/1/reset-link",
        "/reset/some-key",
        "/forgot",
        "/account/email",
        "/account/password",
        "/account/delete",
        "/account/verify",
        "/admin/invites",
        "/admin/invites/SOME-CODE/revoke",
    ):
        response = await browser.post(path, data={"csrf_token": "wrong"}, headers=HTML)
        assert response.status_code == 403, path
    # Still signed in: the refused log-out did nothing.
    assert f">{admin}</a>" in (await browser.get("/", headers=HTML)).text


async def test_session_cookie_flags(browser: httpx.AsyncClient) -> None:
    name, _ = make_user()
    cookie = (await log_in(browser, name)).headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=lax" in cookie and "secure" not in cookie
    assert "path=/" in cookie

    with changed_settings(https="true"):
        transport = httpx.ASGITransport(app=create_app())
        async with httpx.AsyncClient(transport=transport, base_url="https://test") as secure:
            page = await secure.get("/login", headers=HTML)
    assert "secure" in page.headers["set-cookie"].lower()


async def test_api_ignores_the_session_cookie(browser: httpx.AsyncClient) -> None:
    await sign_in(browser)
    response = await browser.post(
        "/api/v1/submissions", json={"problem": "vectoradd", "code": "x = 1"}
    )
    assert response.status_code == 401
    assert "set-cookie" not in (await browser.get("/api/v1/problems")).headers


async def test_failed_log_ins_slow_the_guesser_across_api_processes_not_the_owner(
    database: None,
) -> None:
    name, _ = make_user()
    limit = get_settings().login_max_failures
    apps = [create_app(), create_app()]  # two API processes sharing one database
    for attempt in range(limit):
        transport = httpx.ASGITransport(app=apps[attempt % 2])
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            wrong = await log_in(client, name, "not-the-password")
            assert wrong.status_code == 401
            assert "wrong" in wrong.text
    transport = httpx.ASGITransport(app=apps[0])
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        # Even the right password waits now, from where the wrong ones came.
        limited = await log_in(client, name)
    assert limited.status_code == 429
    assert "too many failed log-ins" in limited.text
    # The owner, elsewhere, is not locked out by someone else's guesses.
    elsewhere = httpx.ASGITransport(app=apps[1], client=("203.0.113.7", 40000))
    async with httpx.AsyncClient(transport=elsewhere, base_url="http://test") as client:
        owner = await log_in(client, name)
        assert owner.status_code in (302, 303), owner.text
    # Their log-in forgets only their own address's failures: the guesser still waits.
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        assert (await log_in(client, name)).status_code == 429


async def test_a_successful_log_in_forgets_earlier_failures(browser: httpx.AsyncClient) -> None:
    name, _ = make_user()
    for _ in range(get_settings().login_max_failures - 1):
        assert (await log_in(browser, name, "nope-nope-nope")).status_code == 401
    assert (await log_in(browser, name)).status_code == 303
    await post_form(browser, "/logout", {}, from_page="/")
    assert (await log_in(browser, name, "nope-nope-nope")).status_code == 401
    assert (await log_in(browser, name)).status_code == 303


async def test_banned_users_cannot_log_in_submit_or_use_tokens(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    name, token = make_user()
    assert (await log_in(browser, name)).status_code == 303
    with session_scope() as session:
        user = get_user_by_name(session, name)
        assert user is not None
        user.is_banned = True

    # The open session ends, the log-in is refused, and the token too.
    assert (await browser.get("/submit", headers=HTML)).status_code == 303
    refused = await log_in(browser, name)
    assert refused.status_code == 403
    assert "banned" in refused.text
    api = await client.post(
        "/api/v1/submissions",
        json={"problem": "vectoradd", "code": "def custom_kernel(data):\n    return data\n"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert api.status_code == 403
    assert api.json()["error"] == "forbidden"


async def sign_up(browser: httpx.AsyncClient, name: str, password: str) -> httpx.Response:
    """The sign-up form, sent with the password typed twice."""
    data = {"name": name, "password": password, "password_again": password}
    return await post_form(browser, "/signup", data, from_page="/signup")


async def test_sign_up_logs_in_and_checks_its_fields(browser: httpx.AsyncClient) -> None:
    short = await sign_up(browser, "newcomer", "short")
    assert short.status_code == 422
    assert 'id="password-error"' in short.text
    taken_name, _ = make_user()
    taken = await sign_up(browser, taken_name, "long-enough-1")
    assert taken.status_code == 422
    assert 'id="name-error"' in taken.text and "already exists" in taken.text
    # Names are one whatever their case: ADA is ada's name, for signing up and logging in.
    shouted = await sign_up(browser, taken_name.upper(), "long-enough-1")
    assert shouted.status_code == 422 and "whatever their case" in shouted.text
    with session_scope() as session:
        found = get_user_by_name(session, taken_name.upper())
        assert found is not None and found.name == taken_name
    # Everything wrong is said at once: the name, the password and the second copy of it.
    data = {"name": taken_name, "password": "short", "password_again": "shorter"}
    many = await post_form(browser, "/signup", data, from_page="/signup")
    assert many.status_code == 422
    for field in ("name", "password", "password_again"):
        assert f'id="{field}-error"' in many.text, field
    done = await sign_up(browser, "newcomer", "long-enough-1")
    assert done.status_code == 303
    home = (await browser.get("/", headers=HTML)).text
    assert ">newcomer</a>" in home
    assert "Welcome, newcomer!" in home and "test mode" in home
    with session_scope() as session:
        user = get_user_by_name(session, "newcomer")
        assert user is not None and user.password_hash is not None
        assert user.password_hash.startswith("$argon2id$")


async def test_log_in_redirects_only_within_the_site(browser: httpx.AsyncClient) -> None:
    name, _ = make_user()
    token = csrf_from(await browser.get("/login", headers=HTML))
    response = await browser.post(
        "/login",
        data={
            "name": name,
            "password": "correct-horse-battery",
            "csrf_token": token,
            "next": "//evil.example/",
        },
        headers=HTML,
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/"


async def test_admin_pages_need_an_admin(browser: httpx.AsyncClient) -> None:
    for path in ("/admin/problems", "/admin/submissions", "/admin/users"):
        anonymous = await browser.get(path, headers=HTML)
        assert anonymous.status_code == 303
        assert anonymous.headers["location"] == f"/login?next={path}"
    await sign_in(browser)
    for path in ("/admin/problems", "/admin/submissions", "/admin/users"):
        forbidden = await browser.get(path, headers=HTML)
        assert forbidden.status_code == 403
        assert "organizers" in forbidden.text
    await post_form(browser, "/logout", {}, from_page="/")
    await sign_in(browser, "boss", admin=True)
    for path in ("/admin/problems", "/admin/submissions", "/admin/users"):
        assert (await browser.get(path, headers=HTML)).status_code == 200


def test_production_refuses_to_run_without_a_secret_key(tmp_path: Path) -> None:
    with pytest.raises(InsecureSettings, match="set KJ_SECRET_KEY"):
        secret_key(Settings(environment="production", data_dir=tmp_path))
    with pytest.raises(InsecureSettings, match="at least 32 characters"):
        secret_key(Settings(environment="production", data_dir=tmp_path, secret_key="short"))
    strong = "k" * 40
    assert secret_key(Settings(environment="production", secret_key=strong)) == strong


def test_development_generates_one_secret_key_and_keeps_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    first = secret_key(settings)
    assert len(first) >= 40
    assert secret_key(Settings(data_dir=tmp_path)) == first
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600


async def test_cli_makes_an_admin_who_can_log_in(browser: httpx.AsyncClient) -> None:
    from typer.testing import CliRunner

    from server.cli import app

    runner = CliRunner()
    added = runner.invoke(
        app, ["user", "add", "first-admin", "--admin", "--password-stdin"], input="first-pass-1\n"
    )
    assert added.exit_code == 0, added.output
    assert added.stdout.strip().splitlines()[-1].startswith("kj_")
    assert (await log_in(browser, "first-admin", "first-pass-1")).status_code == 303
    assert (await browser.get("/admin/users", headers=HTML)).status_code == 200

    changed = runner.invoke(app, ["user", "password", "first-admin"], input="second-pass-2\n")
    assert changed.exit_code == 0, changed.output
    # A new password signs the user out of every browser.
    assert not await signed_in(browser)
    assert (await log_in(browser, "first-admin", "first-pass-1")).status_code == 401
    assert (await log_in(browser, "first-admin", "second-pass-2")).status_code == 303


def replay(cookie: str) -> httpx.AsyncClient:
    """Another browser holding a copy of a session cookie."""
    transport = httpx.ASGITransport(app=create_app())
    return httpx.AsyncClient(
        transport=transport, base_url="http://test", cookies={"kj_session": cookie}
    )


async def signed_in(client: httpx.AsyncClient) -> bool:
    """Whether /submit opens for this browser (it sends anyone else to the log-in page)."""
    response = await client.get("/submit", headers=HTML)
    return response.status_code == 200 and "Submit a kernel" in response.text


async def test_logging_out_ends_the_session_a_copied_cookie_carried(
    browser: httpx.AsyncClient,
) -> None:
    await sign_in(browser)
    cookie = browser.cookies["kj_session"]
    async with replay(cookie) as thief:
        assert await signed_in(thief)
        await post_form(browser, "/logout", {}, from_page="/")
        assert not await signed_in(browser)
        assert not await signed_in(thief)  # the old cookie opens nothing any more
        answer = await thief.post(
            "/account/tokens", data={"label": "stolen", "csrf_token": "x"}, headers=HTML
        )
        assert answer.status_code in (302, 303, 401, 403)


async def test_log_out_everywhere_signs_out_every_browser(database: None) -> None:
    name, _ = make_user()
    first, second = replay(""), replay("")
    async with first, second:
        first.cookies.clear()
        second.cookies.clear()
        await log_in(first, name)
        await log_in(second, name)
        assert await signed_in(first) and await signed_in(second)
        ended = await post_form(first, "/account/sessions/end", {}, from_page=f"/users/{name}")
        assert ended.status_code in (302, 303) and ended.headers["location"].endswith("/login")
        assert not await signed_in(first) and not await signed_in(second)
        await log_in(second, name)  # logging in again starts a new session
        assert await signed_in(second)


async def test_a_ban_ends_the_users_sessions(
    browser: httpx.AsyncClient, client: httpx.AsyncClient
) -> None:
    admin_name, _ = make_user("admin", admin=True)
    name = await sign_in(browser)
    assert await signed_in(browser)
    with session_scope() as session:
        admin = get_user_by_name(session, admin_name)
        user = get_user_by_name(session, name)
        assert admin is not None and user is not None
        moderate_user(session, admin, user.id, "ban", "spam")
        moderate_user(session, admin, user.id, "unban")
    assert not await signed_in(browser)  # unbanned, but the session ended with the ban
