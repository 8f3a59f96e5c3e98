"""Finding your way: My submissions, reached from the header, narrowed by its filters, each
row leading to its result, and fitting a phone (390 × 844); dark mode by the reader's system
setting."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.site import VECTORADD, Site, sign_up, submit_by_form
from tests.browser.test_phone import PHONE


def test_my_submissions_on_a_desktop_and_a_phone(page: Page, site: Site) -> None:
    sign_up(page, site, "mira", "mira-password")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="My submissions").click()
    page.wait_for_url(re.compile(r"/submissions/mine$"))
    expect(page.get_by_role("heading", name="No submissions yet")).to_be_visible()

    code = (VECTORADD / "pytorch.py").read_text()
    tested = submit_by_form(page, site, "vectoradd", "test", code=code)
    benchmarked = submit_by_form(page, site, "vectoradd", "benchmark", code=code)

    page.goto(site.url("/submissions/mine"))
    rows = page.locator("table.my-submissions tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("benchmark")
    page.get_by_label("Mode").select_option("test")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"mode=test"))
    expect(rows).to_have_count(1)
    page.get_by_role("link", name=f"Submission {tested}", exact=True).click()
    page.wait_for_url(re.compile(rf"/submissions/{tested}$"))

    page.set_viewport_size(PHONE)
    for path in ("/submissions/mine", "/submissions/mine?mode=benchmark"):
        page.goto(site.url(path))
        expect(page.locator(f'a[href="/submissions/{benchmarked}"]').first).to_be_visible()
        widths = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
        assert widths[0] <= widths[1], (path, widths)


def luminance(css_color: str) -> float:
    """The relative luminance (0 black, 1 white) of an ``rgb(...)`` colour."""
    red, green, blue = (int(part) / 255 for part in re.findall(r"\d+", css_color)[:3])

    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.03928 else ((channel + 0.055) / 1.055) ** 2.4

    return 0.2126 * linear(red) + 0.7152 * linear(green) + 0.0722 * linear(blue)


def contrast(first: str, second: str) -> float:
    lighter, darker = sorted((luminance(first), luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_dark_mode_follows_the_system_setting(browser: Any, site: Site) -> None:
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(site.url("/problems/vectoradd"))
        colours = page.evaluate(
            """() => {
                const style = (selector, property) =>
                    getComputedStyle(document.querySelector(selector))[property];
                return {
                    page: style("body", "backgroundColor"),
                    text: style("body", "color"),
                    surface: style(".table-wrap", "backgroundColor"),
                    link: style("main a:not(.button)", "color"),
                    muted: style(".muted", "color"),
                };
            }"""
        )
        assert luminance(colours["page"]) < 0.05, colours
        assert luminance(colours["surface"]) < 0.05, colours
        for role in ("text", "link", "muted"):
            assert contrast(colours[role], colours["surface"]) >= 4.5, (role, colours)
    finally:
        context.close()
