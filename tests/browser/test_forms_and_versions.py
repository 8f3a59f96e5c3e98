"""Forms in a real browser that a reload cannot repeat and that change only what they show,
and a live problem that stays up for competitors while a new version is validated."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.browser.site import (
    Site,
    log_in_as_organizer,
    renamed_problem_archive,
    sign_up,
)

VALIDATION_TIMEOUT_S = 240


def test_reloading_the_token_page_mints_no_second_token(page: Page, site: Site) -> None:
    sign_up(page, site, "tess", "tess-password")
    page.goto(site.url("/users/tess"))
    page.get_by_placeholder("Label, e.g. laptop").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").inner_text().strip()
    assert token.startswith("kj_")
    expect(page.locator("table.tokens tbody tr")).to_have_count(1)
    page.reload()
    expect(page.locator("#new-token")).to_have_count(0)
    expect(page.locator("table.tokens tbody tr")).to_have_count(1)
    assert token not in page.content()


def test_saving_a_deadline_keeps_the_gpu_types(page: Page, site: Site) -> None:
    """vectorsum lists h200 and cpu; this site grades on cpu alone, so the form shows cpu
    only, and saving a deadline must leave h200 listed (as the audit log shows)."""
    log_in_as_organizer(page, site)
    page.goto(site.url("/admin/problems"))
    row = page.locator("#p-vectorsum")
    expect(row).to_contain_text("Also listed, kept as they are: h200")
    page.get_by_label("Deadline of vectorsum (UTC)").fill("2099-01-02T03:04")
    page.get_by_role("button", name="Save vectorsum").click()
    expect(page.locator("#notice")).to_have_text("Saved the settings of vectorsum.")
    expect(row).to_contain_text("Also listed, kept as they are: h200")
    page.reload()
    expect(page.locator("#notice")).to_have_count(0)  # said once

    page.goto(site.url("/admin/audit"))
    latest = page.locator("tr", has_text="problem.settings").first
    expect(latest).to_contain_text("2099-01-02T03:04")
    expect(latest).not_to_contain_text("gpu_types")


def served(site: Site, name: str) -> tuple[int, str]:
    """What a competitor gets now: the page and the API must both answer."""
    shown = httpx.get(site.url(f"/problems/{name}"), headers={"Accept": "text/html"}, timeout=10)
    assert shown.status_code == 200, shown.status_code
    api = httpx.get(site.url(f"/api/v1/problems/{name}"), timeout=10)
    assert api.status_code == 200, api.text
    return int(api.json()["version"]), str(api.json()["description"])


def follow_until(site: Site, name: str, done: Callable[[Page], bool], page: Page) -> list[int]:
    """The versions a competitor sees, read every half second until ``done(page)``; every
    read must succeed."""
    seen: list[int] = []
    deadline = time.monotonic() + VALIDATION_TIMEOUT_S
    while time.monotonic() < deadline:
        seen.append(served(site, name)[0])
        if done(page):
            return seen
        time.sleep(0.5)
    raise AssertionError(f"{name}: the round did not end; saw versions {seen}")


def round_passed(page: Page) -> bool:
    page.reload()
    row = page.locator("#p-kept-up")
    return row.locator(".staged").count() == 0 and "queued" not in row.inner_text()


def test_a_live_problem_keeps_serving_while_it_is_validated_again(
    page: Page, site: Site, tmp_path: Path
) -> None:
    first = tmp_path / "first.tar.gz"
    first.write_bytes(renamed_problem_archive("vectoradd", "kept-up"))
    log_in_as_organizer(page, site)
    page.goto(site.url("/admin/problems"))
    page.get_by_label("Archive").set_input_files(first)
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#notice")).to_contain_text("kept-up added")
    status = page.locator("#p-kept-up [data-status]")
    deadline = time.monotonic() + VALIDATION_TIMEOUT_S
    while status.get_attribute("data-status") == "validating" and time.monotonic() < deadline:
        time.sleep(1)
        page.reload()
    expect(status).to_have_attribute("data-status", "live")
    assert served(site, "kept-up")[0] == 1

    # A new version: version 1 serves until version 2 passes, then version 2 does.
    second = tmp_path / "second.tar.gz"
    second.write_bytes(renamed_problem_archive("vectoradd", "kept-up", "Now with a second line."))
    page.get_by_label("Archive").set_input_files(second)
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#notice")).to_contain_text(
        "version 2 is being validated; version 1 stays live until it passes"
    )
    seen = follow_until(site, "kept-up", round_passed, page)
    assert seen[0] == 1 and seen == sorted(seen), seen
    version, description = served(site, "kept-up")
    assert version == 2 and "Now with a second line." in description
    expect(status).to_have_attribute("data-status", "live")

    # "Validate again": it asks first, and competitors keep version 2 throughout.
    page.get_by_role("button", name="Validate kept-up again").click()
    assert any("Competitors keep version 2" in asked for asked in page.confirmations)
    expect(page.locator("#notice")).to_contain_text("Validating kept-up version 2 again")
    assert set(follow_until(site, "kept-up", round_passed, page)) == {2}
    expect(page.locator("#p-kept-up .validation-report summary")).to_contain_text("passed")
