"""The admin problems page in a real browser, on a desktop and on a phone: an uploaded
problem's row goes from validating to live without a reload; the row a save changed lands in
view below the header, with the "Saved" notice on screen; the submit form leaves leaderboard
mode out for a closed problem, saying why, and follows the problem chosen; the header's
links fit a phone."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.site import (
    Site,
    log_in_as_organizer,
    renamed_problem_archive,
    sign_up,
)
from tests.browser.test_forms_and_versions import VALIDATION_TIMEOUT_S
from tests.browser.test_phone import PHONE, page_fits

DESKTOP = {"width": 1280, "height": 900}
VIEWPORTS = {"desktop": DESKTOP, "phone": PHONE}


def in_view_below_header(page: Page, selector: str) -> None:
    """The element's top is on screen and not under the header (sticky on a desktop), with
    room below it (a row near the page's end cannot be scrolled up to the header)."""
    top, header = page.evaluate(
        """(selector) => {
            const header = document.querySelector(".topbar");
            const sticky = getComputedStyle(header).position === "sticky";
            return [document.querySelector(selector).getBoundingClientRect().top,
                    sticky ? header.getBoundingClientRect().bottom : 0];
        }""",
        selector,
    )
    height = page.viewport_size["height"]  # type: ignore[index]
    assert header <= top < height * 0.75, (selector, top, header)


def notice_on_screen(page: Page, text: str) -> None:
    notice = page.locator("#notice")
    expect(notice).to_contain_text(text)
    expect(notice).to_be_in_viewport(ratio=1)


@pytest.mark.parametrize("device", VIEWPORTS)
def test_an_admin_row_updates_itself_and_a_save_lands_in_view(
    page: Page, site: Site, tmp_path: Path, device: str
) -> None:
    page.set_viewport_size(VIEWPORTS[device])  # type: ignore[arg-type]
    name = f"polled-{device}"
    archive = tmp_path / "problem.tar.gz"
    archive.write_bytes(renamed_problem_archive("vectoradd", name))
    log_in_as_organizer(page, site)
    page.goto(site.url("/admin/problems"))
    page.get_by_label("Archive").set_input_files(archive)
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(f"**/admin/problems#p-{name}")
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))

    # Waiting for its worker: the row says so, and asks for its state until the round ends.
    status = page.locator(f"#p-{name} [data-status]")
    expect(status).to_have_attribute("data-status", "validating")
    expect(page.locator(f"#p-{name}")).to_have_attribute(
        "data-live-url", f"/admin/problems/{name}/state"
    )
    notice_on_screen(page, f"Problem {name} added; it goes live once validated.")
    in_view_below_header(page, f"#p-{name}")
    expect(status).to_have_attribute("data-status", "live", timeout=VALIDATION_TIMEOUT_S * 1000)
    expect(page.locator(f"#p-{name} .validation-report summary")).to_contain_text("passed")
    expect(page.locator(f"#p-{name}")).not_to_have_attribute(
        "data-live-url", f"/admin/problems/{name}/state"
    )
    assert navigations == [], f"the page reloaded: {navigations}"

    # A save: the row it changed below the header, the notice on screen.
    row = page.locator(f"#p-{name}")
    row.locator("input[name=deadline]").fill("2026-01-02T03:04")
    row.get_by_role("button", name=f"Save {name}").click()
    page.wait_for_url(f"**/admin/problems#p-{name}")
    notice_on_screen(page, f"Saved the settings of {name}.")
    in_view_below_header(page, f"#p-{name}")
    expect(row.locator("input[name=deadline]")).to_have_value("2026-01-02T03:04")

    # Its deadline passed: the submit form offers no leaderboard mode for it, and says why.
    page.goto(site.url(f"/submit?problem={name}"))
    ranked = page.locator("label[for=mode-leaderboard]")
    reason = page.locator("#leaderboard-closed")
    expect(ranked).to_be_hidden()
    expect(page.locator("#mode-leaderboard")).to_be_disabled()
    expect(reason).to_be_visible()
    expect(reason).to_contain_text(f"No leaderboard mode: the competition on '{name}' closed at")
    expect(page.locator("#mode-test")).to_be_checked()
    page_fits(page, f"/submit?problem={name}")
    # Another problem: leaderboard mode again; and back.
    page.get_by_label("Problem").select_option("vectoradd")
    expect(ranked).to_be_visible()
    expect(reason).to_be_hidden()
    ranked.click()
    expect(page.locator("#mode-leaderboard")).to_be_checked()
    page.get_by_label("Problem").select_option(name)
    expect(ranked).to_be_hidden()
    expect(reason).to_be_visible()
    expect(page.locator("#mode-test")).to_be_checked()


def header_fits(page: Page) -> None:
    widths = page.evaluate(
        """() => [document.documentElement.scrollWidth, window.innerWidth,
                  document.querySelector(".nav").scrollWidth,
                  document.querySelector(".nav").clientWidth]"""
    )
    assert widths[0] <= widths[1] and widths[2] <= widths[3], widths
    for link in ("My submissions", "Submit", "Problems", "Competitions"):
        expect(
            page.get_by_role("navigation", name="Main").get_by_role("link", name=link)
        ).to_be_in_viewport(ratio=1)
    expect(page.locator(".account .who")).to_be_in_viewport(ratio=1)


def test_the_header_fits_a_phone_and_is_reached_by_keyboard(page: Page, site: Site) -> None:
    page.set_viewport_size(PHONE)  # type: ignore[arg-type]
    # A long name, as long as sign-up takes, and the organizer's extra link.
    long_name = "maximiliana-" + "x" * 40
    sign_up(page, site, long_name, "maximiliana-password")
    for path in ("/", "/submissions/mine", f"/users/{long_name}"):
        page.goto(site.url(path))
        page_fits(page, path)
        header_fits(page)
    # Keyboard: Tab from the top reaches My submissions, and Enter follows it.
    page.goto(site.url("/"))
    for _ in range(10):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "My submissions":
            break
    else:
        raise AssertionError("Tab never reached My submissions")
    page.keyboard.press("Enter")
    page.wait_for_url("**/submissions/mine")

    page.context.clear_cookies()
    log_in_as_organizer(page, site)
    for path in ("/", "/admin/problems"):
        page.goto(site.url(path))
        page_fits(page, path)
        header_fits(page)
        expect(
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Admin")
        ).to_be_in_viewport(ratio=1)
