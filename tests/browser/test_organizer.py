"""Organizers and privacy in a real browser: an admin adds a problem by uploading an archive;
another competitor cannot read someone's code before the deadline."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, expect

from tests.browser.site import (
    VECTORADD,
    Site,
    add_user_with_password,
    api_submit,
    log_in,
    log_in_as_organizer,
    renamed_problem_archive,
    sign_up,
)


def test_admin_adds_a_problem_by_upload(page: Page, site: Site, tmp_path: Path) -> None:
    archive = tmp_path / "doubled.tar.gz"
    archive.write_bytes(renamed_problem_archive("vectoradd", "vectoradd_doubled"))
    log_in_as_organizer(page, site)
    page.get_by_role("link", name="Admin").click()
    page.get_by_label("Archive").set_input_files(archive)
    page.get_by_role("button", name="Upload").click()
    expect(page.locator(".alert.success")).to_contain_text("vectoradd_doubled added")
    # The site's own worker validates it; the admin page shows the outcome once reloaded.
    status = page.locator("#p-vectoradd_doubled [data-status]")
    deadline = time.monotonic() + 180
    while status.get_attribute("data-status") == "validating" and time.monotonic() < deadline:
        time.sleep(1)
        page.reload()
    expect(status).to_have_attribute("data-status", "live")

    page.goto(site.url("/"))
    page.get_by_role("link", name="vectoradd_doubled").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("vectoradd_doubled")
    expect(page.locator(".prose")).to_contain_text("float16 vector addition")
    listed = httpx.get(site.url("/api/v1/problems"), timeout=10).json()
    assert "vectoradd_doubled" in {problem["name"] for problem in listed}


def test_competitors_cannot_read_each_others_code(page: Page, site: Site) -> None:
    token = add_user_with_password(site.env, "bea", "bea-password", admin=False)
    code = (VECTORADD / "pytorch.py").read_text() + "\n# bea's secret trick\n"
    submission_id = api_submit(site, token, code)

    sign_up(page, site, "cyd", "cyd-password")
    page.goto(site.url(f"/submissions/{submission_id}"))
    expect(page.locator("#code-hidden")).to_be_visible()
    assert "secret trick" not in page.content()
    # Nor through the REST API, which reads no session cookie.
    api = page.request.get(site.url(f"/api/v1/submissions/{submission_id}"))
    assert api.status == 401 and "secret trick" not in api.text()
    page.goto(site.url("/"))
    log_in(page, site, "bea", "bea-password")
    page.goto(site.url(f"/submissions/{submission_id}"))
    expect(page.locator("pre.code").last).to_contain_text("secret trick")


def test_destructive_actions_ask_first(page: Page, site: Site) -> None:
    """Ban, make admin, hide, mark hacked, re-run, validate again, revoke, log out everywhere
    each ask before they act (site.js; the fixture answers yes)."""
    add_user_with_password(site.env, "dee", "dee-password", admin=False)
    log_in_as_organizer(page, site)
    page.goto(site.url("/admin/users"))
    page.get_by_label("Reason for dee").fill("a second account")
    page.get_by_role("button", name="Ban dee").click()
    expect(page.get_by_role("button", name="Unban dee")).to_be_visible()
    dee_row = page.locator("tr").filter(has=page.get_by_role("button", name="Unban dee"))
    expect(dee_row.locator(".banned-reason")).to_have_text("a second account")
    assert any(asked.startswith("Ban dee?") for asked in page.confirmations), page.confirmations


def test_a_forgotten_password_is_reset_through_an_organizers_link(
    page: Page, site: Site, browser: Browser
) -> None:
    """The organizer makes a link on the admin page (it asks first, and shows it once); the
    user opens it in a browser of their own, sets a new password and logs in with it; the
    link then says it was used."""
    add_user_with_password(site.env, "fay", "fay-old-password", admin=False)
    log_in_as_organizer(page, site)
    page.goto(site.url("/admin/users"))
    page.get_by_role("button", name="Password link for fay").click()
    assert any(asked.startswith("Make a one-time link") for asked in page.confirmations)
    link = page.locator("#reset-link").inner_text()
    assert link.startswith(site.url("/reset/")), link

    own = browser.new_context().new_page()
    own.goto(link)
    expect(own.get_by_role("heading", level=1)).to_have_text("Set a new password")
    own.get_by_label("New password", exact=True).fill("fay-new-password")
    own.get_by_label("New password again").fill("fay-new-password")
    own.get_by_role("button", name="Set the password").click()
    expect(own.locator(".alert.success")).to_contain_text("Your new password is set")
    log_in(own, site, "fay", "fay-new-password")
    own.goto(link)
    expect(own.locator(".alert.error")).to_contain_text("ask an organizer for a new one")
    own.context.close()
