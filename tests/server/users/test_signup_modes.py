"""How people sign up, as `KJ_SIGNUP` says: open (unchanged), invite (a code from the
organizers, each use counted), verified (an address proved by a mailed link before the
account may submit) and closed (the organizers add accounts)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.app import create_app
from server.audit import service as audit
from server.db import session_scope
from server.errors import BadRequest
from server.models import AuditEntry, EmailVerification, Invite, User, utcnow
from server.settings import get_settings
from server.users import invites
from server.users.repository import get_user_by_name
from server.users.service import issue_token
from tests.server.competitions.conftest import url as url
from tests.server.migrating import at_revision
from tests.server.users.test_password_mail import Inbox
from tests.server.users.test_password_mail import inbox as inbox
from tests.server.web_client import HTML, PASSWORD, field_error, post_form, sign_in

pytestmark = pytest.mark.anyio

SetMode = Callable[..., None]
CODE = "def custom_kernel(data):\n    return data\n# {}\n"


@pytest.fixture
def signup_mode(monkeypatch: pytest.MonkeyPatch) -> Iterator[SetMode]:
    """Set `KJ_SIGNUP` (and other settings, by name) for this test."""

    def choose(mode: str, **more: str) -> None:
        monkeypatch.setenv("KJ_SIGNUP", mode)
        for name, value in more.items():
            monkeypatch.setenv(f"KJ_{name.upper()}", value)
        get_settings.cache_clear()

    yield choose
    monkeypatch.delenv("KJ_SIGNUP", raising=False)
    monkeypatch.delenv("KJ_SIGNUP_OPEN", raising=False)
    monkeypatch.delenv("KJ_SIGNUP_EMAIL_DOMAINS", raising=False)
    get_settings.cache_clear()


async def sign_up(browser: httpx.AsyncClient, name: str, **fields: str) -> httpx.Response:
    data = {"name": name, "password": PASSWORD, "password_again": PASSWORD, **fields}
    return await post_form(browser, "/signup", data, from_page="/signup")


def another_browser() -> httpx.AsyncClient:
    """A second visitor, with cookies of its own."""
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app()), base_url="http://test"
    )


def new_invite(**options: int | str | None) -> str:
    with session_scope() as session:
        return invites.create(session, None, **options).code  # type: ignore[arg-type]


def user_named(name: str) -> User | None:
    with session_scope() as session:
        return get_user_by_name(session, name)


async def test_open_sign_up_asks_for_no_code_or_address(
    browser: httpx.AsyncClient, signup_mode: SetMode
) -> None:
    signup_mode("open")
    form = (await browser.get("/signup", headers=HTML)).text
    assert 'name="invite"' not in form and 'name="email"' not in form
    assert (await sign_up(browser, "opensignup")).status_code == 303
    user = user_named("opensignup")
    assert user is not None and user.is_verified and user.invite_id is None


@pytest.mark.parametrize("settings", [{"mode": "closed"}, {"mode": "open", "signup_open": "false"}])
async def test_closed_sign_up_says_so_and_refuses(
    browser: httpx.AsyncClient, signup_mode: SetMode, settings: dict[str, str]
) -> None:
    more = dict(settings)
    signup_mode(more.pop("mode"), **more)
    page = await browser.get("/signup", headers=HTML)
    assert page.status_code == 200 and 'id="signup-closed"' in page.text
    assert 'name="password"' not in page.text
    # The page has no form; a form sent anyway is refused.
    data = {"name": "closedsignup", "password": PASSWORD, "password_again": PASSWORD}
    refused = await post_form(browser, "/signup", data, from_page="/login")
    assert refused.status_code == 422 and "sign-up is closed on this site" in refused.text
    assert user_named("closedsignup") is None


async def test_invite_sign_up_needs_a_working_code(
    browser: httpx.AsyncClient, signup_mode: SetMode
) -> None:
    signup_mode("invite")
    form = (await browser.get("/signup?invite=ABCD-EFGH", headers=HTML)).text
    assert 'name="invite"' in form and 'value="ABCD-EFGH"' in form
    missing = await sign_up(browser, "invitee0")
    assert missing.status_code == 422 and "needs an invite code" in field_error(missing, "invite")
    unknown = await sign_up(browser, "invitee0", invite="NOPE-NOPE-NOPE")
    assert "no such invite code" in field_error(unknown, "invite")

    code = new_invite(uses=2, note="lab")
    # A refused name takes no use of the code.
    taken = await sign_up(browser, "bad name!", invite=code)
    assert taken.status_code == 422 and field_error(taken, "name")
    assert (await sign_up(browser, "invitee1", invite=code.lower())).status_code == 303
    other = another_browser()
    async with other:
        assert (await sign_up(other, "invitee2", invite=f" {code} ")).status_code == 303
    third = another_browser()
    async with third:
        used_up = await sign_up(third, "invitee3", invite=code)
        assert used_up.status_code == 422
        assert "this invite code is used up" in field_error(used_up, "invite")
        assert 'value="invitee3"' in used_up.text  # what was typed stays
    assert user_named("invitee3") is None
    with session_scope() as session:
        invite = invites.get(session, code)
        assert (invite.uses, invite.max_uses) == (2, 2)
        user = get_user_by_name(session, "invitee1")
        assert user is not None and user.invite_id == invite.id

    revoked = new_invite()
    expired = new_invite(expires_days=1)
    with session_scope() as session:
        invites.revoke(session, None, revoked)
        session.execute(
            update(Invite)
            .where(Invite.code == expired)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    for code, why in ((revoked, "revoked"), (expired, "expired")):
        async with another_browser() as c:
            refused = await sign_up(c, "invitee4", invite=code)
            assert f"this invite code is {why}" in field_error(refused, "invite")


def test_two_sign_ups_racing_for_the_last_use_one_has_it(url: str) -> None:
    """The first holds the code's last use uncommitted while the second asks: the second
    waits, then is told the code is used up."""
    with at_revision(url, "head") as (_, engine):
        with Session(engine) as db:
            code = invites.create(db, None, uses=1).code
            db.commit()
        first_took = threading.Event()
        outcomes: dict[str, str] = {}

        def first() -> None:
            with Session(engine) as db:
                invites.take_use(db, code)
                first_took.set()
                threading.Event().wait(0.5)
                db.commit()
                outcomes["first"] = "took"

        def second() -> None:
            first_took.wait(10)
            with Session(engine) as db:
                try:
                    invites.take_use(db, code)
                    db.commit()
                    outcomes["second"] = "took"
                except BadRequest as exc:
                    outcomes["second"] = exc.detail

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert outcomes["first"] == "took"
        assert outcomes["second"].startswith("this invite code is used up")
        with Session(engine) as db:
            assert db.scalar(select(Invite.uses).where(Invite.code == code)) == 1


async def test_organizers_make_list_and_revoke_codes_on_the_admin_page(
    browser: httpx.AsyncClient, signup_mode: SetMode
) -> None:
    signup_mode("invite")
    await sign_in(browser, "inviter", admin=True)
    bad = await post_form(
        browser, "/admin/invites", {"uses": "0", "note": ""}, from_page="/admin/invites"
    )
    assert bad.status_code == 422 and "an invite serves 1 to" in bad.text
    made = await post_form(
        browser,
        "/admin/invites",
        {"uses": "3", "expires_days": "7", "note": "course 101"},
        from_page="/admin/invites",
    )
    assert made.status_code == 303
    with session_scope() as session:
        invite = session.scalar(select(Invite).where(Invite.note == "course 101"))
        assert invite is not None and invite.max_uses == 3 and invite.expires_at is not None
        code = invite.code
    listed = (await browser.get("/admin/invites", headers=HTML)).text
    assert f"Invite code {code} created." in listed and "0 of 3" in listed
    async with another_browser() as new:
        assert (await sign_up(new, "bycode", invite=code)).status_code == 303
    users_page = (await browser.get("/admin/users", headers=HTML)).text
    assert re.search(rf'<a href="/users/bycode">bycode</a>.*?{code}', users_page, re.S)
    revoked = await post_form(
        browser, f"/admin/invites/{code}/revoke", {}, from_page="/admin/invites"
    )
    assert revoked.status_code == 303
    assert "revoked" in (await browser.get("/admin/invites", headers=HTML)).text
    with session_scope() as session:
        actions = session.scalars(
            select(AuditEntry.action).where(AuditEntry.target == code).order_by(AuditEntry.id)
        ).all()
        assert actions == ["invite.create", "invite.revoke"]

    async with another_browser() as other:
        await sign_in(other, "notorganizer")
        assert (await other.get("/admin/invites", headers=HTML)).status_code == 403


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "server.cli", "invite", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_invite_commands_create_list_and_revoke(database: None) -> None:
    made = cli("create", "--uses", "5", "--expires-days", "30", "--note", "from the cli")
    assert made.returncode == 0, made.stderr
    code = made.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}", code)
    assert "5 sign-ups, for 30 days" in made.stderr
    listed = cli("list")
    assert listed.returncode == 0
    (line,) = [line for line in listed.stdout.splitlines() if line.startswith(code)]
    assert "0/5 used" in line and "usable" in line and "from the cli" in line
    assert cli("revoke", code.lower()).stdout.strip() == f"invite {code} revoked"
    assert "revoked" in next(line for line in cli("list").stdout.splitlines() if code in line)
    missing = cli("revoke", "NOPE-NOPE-NOPE")
    assert missing.returncode == 1 and "no invite code" in missing.stderr
    wrong = cli("create", "--uses", "0")
    assert wrong.returncode == 1 and "an invite serves 1 to" in wrong.stderr
    with session_scope() as session:
        entry = session.scalar(
            select(AuditEntry).where(
                AuditEntry.action == "invite.create", AuditEntry.target == code
            )
        )
        assert entry is not None and entry.actor_name == audit.CLI_ACTOR


def mailed_link(inbox: Inbox) -> str:
    body = str(inbox.messages[-1].get_payload(decode=True), "utf-8")
    found = re.search(r"http://test(/verify/[\w-]+)", body)
    assert found, body
    return found.group(1)


async def submit(browser: httpx.AsyncClient, name: str, marker: int) -> httpx.Response:
    with session_scope() as session:
        user = get_user_by_name(session, name)
        assert user is not None
        token = issue_token(session, user)
    return await browser.post(
        "/api/v1/submissions",
        json={"problem": "vectoradd", "code": CODE.format(marker), "mode": "test"},
        headers={"Authorization": f"Bearer {token}"},
    )


async def test_verified_sign_up_mails_a_link_that_lets_the_account_submit(
    browser: httpx.AsyncClient, inbox: Inbox, signup_mode: SetMode
) -> None:
    signup_mode("verified", signup_email_domains="uni.example")
    form = (await browser.get("/signup", headers=HTML)).text
    assert 'name="email"' in form and "Addresses at uni.example only." in form
    missing = await sign_up(browser, "verifyme")
    assert "needs your email address" in field_error(missing, "email")
    bad = await sign_up(browser, "verifyme", email="not an address")
    assert "is not an email address" in field_error(bad, "email")
    elsewhere = await sign_up(browser, "verifyme", email="me@gmail.example")
    assert "addresses at uni.example only" in field_error(elsewhere, "email")
    assert user_named("verifyme") is None and not inbox.messages

    done = await sign_up(browser, "verifyme", email="me@cs.uni.example")
    assert done.status_code == 303 and done.headers["location"] == "/users/verifyme#email"
    (mail,) = inbox.messages
    assert mail["To"] == "me@cs.uni.example"
    page = (await browser.get("/users/verifyme", headers=HTML)).text
    assert "A link is on its way to me@cs.uni.example" in page and 'id="unverified"' in page

    refused = await submit(browser, "verifyme", 1)
    assert refused.status_code == 403
    assert "verify your email address before submitting" in refused.json()["detail"]
    assert 'id="unverified"' in (await browser.get("/submit", headers=HTML)).text
    on_the_web = await post_form(
        browser,
        "/submit",
        {"problem": "vectoradd", "code": CODE.format(2), "mode": "test"},
        from_page="/submit",
    )
    assert on_the_web.status_code == 422  # the form shows why, above it
    assert "verify your email address before submitting" in on_the_web.text

    link = mailed_link(inbox)
    async with another_browser() as other:
        verified = await other.get(link, headers=HTML)  # from another browser: no log-in needed
    assert verified.status_code == 200 and "me@cs.uni.example is verified" in verified.text
    again = await browser.get(link, headers=HTML)
    assert again.status_code == 410 and "was used" in again.text
    assert 'id="unverified"' not in (await browser.get("/users/verifyme", headers=HTML)).text
    assert (await submit(browser, "verifyme", 3)).status_code == 202
    with session_scope() as session:
        assert audit.happened(session, "user.verify", "user", "verifyme")


async def test_a_new_link_can_be_mailed_and_old_or_late_ones_fail(
    browser: httpx.AsyncClient, inbox: Inbox, signup_mode: SetMode
) -> None:
    signup_mode("verified")
    assert (await sign_up(browser, "resender", email="r@example.org")).status_code == 303
    first = mailed_link(inbox)
    page = "/users/resender"
    soon = await post_form(browser, "/account/verify", {}, from_page=page)
    assert soon.status_code == 303
    assert "A link was mailed a moment ago" in (await browser.get(page, headers=HTML)).text
    assert len(inbox.messages) == 1

    def mailed_earlier() -> None:
        with session_scope() as session:
            session.execute(
                update(EmailVerification).values(created_at=utcnow() - timedelta(minutes=10))
            )

    mailed_earlier()
    resent = await post_form(browser, "/account/verify", {}, from_page=page)
    assert resent.status_code == 303
    assert (
        "A new link is on its way to r@example.org" in (await browser.get(page, headers=HTML)).text
    )
    second = mailed_link(inbox)
    assert second != first
    assert (await browser.get(first, headers=HTML)).status_code == 410  # replaced
    with session_scope() as session:
        session.execute(
            update(EmailVerification)
            .where(EmailVerification.ended_at.is_(None))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    late = await browser.get(second, headers=HTML)
    assert late.status_code == 410 and "has run out" in late.text
    assert (await browser.get("/verify/not-a-key", headers=HTML)).status_code == 410
    user = user_named("resender")
    assert user is not None and not user.is_verified

    # An address outside the allowed domains cannot be swapped in while unverified.
    mailed_earlier()
    signup_mode("verified", signup_email_domains="example.org")
    swapped = await post_form(
        browser, "/account/email", {"email": "r@elsewhere.example"}, from_page=page
    )
    assert swapped.status_code == 422 and "addresses at example.org only" in swapped.text
    third = await post_form(browser, "/account/verify", {}, from_page=page)
    assert third.status_code == 303
    assert (await browser.get(mailed_link(inbox), headers=HTML)).status_code == 200


def test_verified_sign_up_needs_mail(monkeypatch: pytest.MonkeyPatch) -> None:
    from server.settings import Settings

    monkeypatch.delenv("KJ_SMTP_HOST", raising=False)
    with pytest.raises(ValueError, match="set KJ_SMTP_HOST"):
        Settings(signup="verified")
