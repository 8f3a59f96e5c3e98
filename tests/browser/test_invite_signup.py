"""Signing up with an invite code on desktop, on a site of its own whose sign-up asks for
one (`KJ_SIGNUP=invite`): the code lets one person in; the next is told, under the field,
that it is used up; the organizer sees the use and who signed up with it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from rig.processes import REPO_ROOT, kerneljudge
from tests.browser.conftest import require_browser

PASSWORD = "invited-password"


@pytest.fixture(scope="module")
def invite_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    require_browser()
    from tests.browser.site import running_site

    with running_site(tmp_path_factory.mktemp("invite") / "var", signup="invite") as running:
        yield running


def new_code(site: Any) -> str:
    done = subprocess.run(
        kerneljudge("invite", "create", "--uses", "1", "--note", "browser test"),
        env=site.env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def fill_sign_up(page: Any, site: Any, code: str, name: str) -> None:
    page.goto(site.url("/signup"))
    page.get_by_label("Invite code").fill(code)
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_label("Password again").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()


def test_an_invite_code_lets_one_person_sign_up(browser: Any, invite_site: Any) -> None:
    from playwright.sync_api import expect

    from tests.browser.site import log_in_as_organizer

    code = new_code(invite_site)
    first = browser.new_context(viewport={"width": 1280, "height": 900})
    page = first.new_page()
    fill_sign_up(page, invite_site, code.lower(), "invited")
    expect(page.locator(".account .who")).to_have_text("invited")
    first.close()

    second = browser.new_context(viewport={"width": 1280, "height": 900})
    page = second.new_page()
    fill_sign_up(page, invite_site, code, "latecomer")
    error = page.locator("#invite-error")
    expect(error).to_contain_text("this invite code is used up")
    expect(page.get_by_label("Invite code")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_label("User name")).to_have_value("latecomer")
    second.close()

    organizer = browser.new_context(viewport={"width": 1280, "height": 900})
    page = organizer.new_page()
    log_in_as_organizer(page, invite_site)
    page.goto(invite_site.url("/admin/invites"))
    row = page.locator(".admin-invites tr", has_text=code)
    expect(row).to_contain_text("1 of 1")
    expect(row).to_contain_text("used up")
    page.goto(invite_site.url("/admin/users"))
    expect(page.locator("tr", has_text="invited")).to_contain_text(code)
    organizer.close()
