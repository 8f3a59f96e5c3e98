"""Watching a grading in a real browser: while a slow kernel's test cases run, the page says
which case of how many is running and for how long, with no internal slot name, and then
gives the verdict without reloading; on a phone too."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.site import SLOW_ADD, Site, sign_up, submit_by_form, wait_for_verdict
from tests.browser.test_phone import PHONE, page_fits


def test_a_running_submission_shows_its_case_of_cases_and_running_time(
    page: Page, site: Site
) -> None:
    sign_up(page, site, "grace", "grace-password")
    submit_by_form(page, site, "vectoradd", "test", code=SLOW_ADD)
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    # The site's one worker may still be starting (or busy with another test's grading).
    wait_for_verdict(page, "running", timeout_s=120)
    running = page.locator("#progress")
    # The whole line: the case and the time, nothing else (no worker slot).
    expect(running).to_have_text(
        re.compile(r"^Running: case [1-5] of 5 \(test\): size=\d+ seed=\d+ · \d+ s$"),
        timeout=30_000,
    )
    expect(page.locator("#worker")).to_have_count(0)  # an organizer's detail
    # On a phone, the same line, on a page no wider than the screen.
    page.set_viewport_size(PHONE)
    expect(running).to_be_in_viewport()
    expect(running).to_contain_text("Running: case")
    page_fits(page, "a running submission's page")

    wait_for_verdict(page, "passed", timeout_s=120)
    expect(page.locator("#progress")).to_have_count(0)
    expect(page.locator(".cases-table tbody tr")).to_have_count(5)
    assert navigations == [], f"the page reloaded: {navigations}"
