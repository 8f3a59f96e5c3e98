"""A competitor looks after their own account in a real browser: a new password, a
read-only API token with an expiry, and deleting the account."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.browser.site import VECTORADD, Site, log_in, log_out, sign_up


def test_change_password_make_a_read_only_token_and_delete_the_account(
    page: Page, site: Site
) -> None:
    sign_up(page, site, "hedy", "hedy-password")
    page.goto(site.url("/users/hedy"))

    # A new password: a wrong current one is refused next to its field, then it is set.
    page.get_by_label("Current password").fill("not-my-password")
    page.get_by_label("New password", exact=True).fill("hedy-new-password")
    page.get_by_label("New password again").fill("hedy-new-password")
    page.get_by_role("button", name="Change password").click()
    expect(page.locator("#current_password-error")).to_have_text("the current password is wrong")
    page.get_by_label("Current password").fill("hedy-password")
    page.get_by_label("New password", exact=True).fill("hedy-new-password")
    page.get_by_label("New password again").fill("hedy-new-password")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Password changed")).to_be_visible()
    log_out(page)
    log_in(page, site, "hedy", "hedy-new-password")

    # A read-only token that expires in 30 days: it reads, it cannot submit.
    page.goto(site.url("/users/hedy"))
    page.get_by_placeholder("Label, e.g. laptop").fill("reader")
    page.get_by_label("submit", exact=True).uncheck()
    page.get_by_label("Expires after").select_option("30")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").inner_text().strip()
    row = page.locator("tr", has_text="reader")
    expect(row.locator(".token-scopes")).to_have_text("read")
    expect(row).not_to_contain_text("never")
    headers = {"Authorization": f"Bearer {token}"}
    read = httpx.get(site.url("/api/v1/submissions"), headers=headers, timeout=10)
    assert read.status_code == 200, read.text
    code = (VECTORADD / "pytorch.py").read_text()
    sent = httpx.post(
        site.url("/api/v1/submissions"),
        json={"problem": "vectoradd", "code": code},
        headers=headers,
        timeout=10,
    )
    assert sent.status_code == 403 and "'submit' scope" in sent.json()["detail"]

    # Deleting the account: asked first, signed out, the token refused, the name gone.
    page.get_by_label("Your password, to confirm").fill("hedy-new-password")
    page.get_by_role("button", name="Delete my account").click()
    expect(page.get_by_text("Your account is deleted.")).to_be_visible()
    assert any("Delete your account" in asked for asked in page.confirmations)
    expect(page.get_by_role("banner").get_by_role("link", name="Log in")).to_be_visible()
    gone = httpx.get(site.url("/api/v1/submissions"), headers=headers, timeout=10)
    assert gone.status_code == 401
    gone_page = page.goto(site.url("/users/hedy"))
    assert gone_page is not None and gone_page.status == 404
