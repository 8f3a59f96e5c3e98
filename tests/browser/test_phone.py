"""The main pages on a phone (390 × 844): nothing wider than the screen, so no page scrolls
sideways; a result's case table reads in place, every figure on screen; the chart's labels
large enough to read."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.site import VECTORADD, Site, sign_up, submit_by_form, wait_for_verdict

PHONE = {"width": 390, "height": 844}


def page_fits(page: Page, path: str) -> None:
    overflow = page.evaluate(
        """() => {
            const width = window.innerWidth;
            const wide = [...document.querySelectorAll("body *")].filter((element) => {
                if (element.closest(".table-wrap, .cm-scroller, pre, .tabs")) return false;
                const box = element.getBoundingClientRect();
                return box.width > 0 && box.right > width + 0.5;
            }).map((element) => element.tagName + "." + element.className).slice(0, 5);
            return [document.documentElement.scrollWidth, width, wide];
        }"""
    )
    assert overflow[0] <= overflow[1] and not overflow[2], (path, overflow)


def test_the_main_pages_fit_a_phone(page: Page, site: Site) -> None:
    sign_up(page, site, "phoebe", "phoebe-password")
    code = (VECTORADD / "pytorch.py").read_text()
    benchmark = submit_by_form(page, site, "vectoradd", "benchmark", code=code)
    wait_for_verdict(page, "passed")
    ranked = submit_by_form(page, site, "vectoradd", "leaderboard", code=code)
    wait_for_verdict(page, "passed")
    page.set_viewport_size(PHONE)

    paths = [
        "/",
        "/problems/vectoradd",
        "/submit?problem=vectoradd",
        f"/submissions/{benchmark}",
        f"/submissions/{ranked}",
        "/leaderboards/vectoradd",
        "/users/phoebe",
        "/competitions",
    ]
    for path in paths:
        page.goto(site.url(path))
        page_fits(page, path)

    # Every cell of the benchmark run's case table lies on the screen: no column waits
    # off to the right of its box.
    page.goto(site.url(f"/submissions/{benchmark}"))
    cells = page.locator(".cases-table td")
    expect(cells.first).to_be_visible()
    boxes = page.evaluate(
        """() => [...document.querySelectorAll(".cases-table td")].map((cell) => {
            const box = cell.getBoundingClientRect();
            return [cell.dataset.label, box.left, box.right];
        })"""
    )
    assert any(label == "Median" for label, _, _ in boxes), boxes
    assert all(left >= 0 and right <= PHONE["width"] for _, left, right in boxes), boxes
    wrap = page.locator(".cases-table").evaluate(
        "t => [t.closest('.table-wrap').scrollWidth, t.closest('.table-wrap').clientWidth]"
    )
    assert wrap[0] <= wrap[1], wrap

    # The chart's labels read at 9 px or more.
    page.goto(site.url("/leaderboards/vectoradd"))
    sizes = page.evaluate(
        """() => [...document.querySelectorAll(".chart .tick")]
            .map((tick) => tick.getBoundingClientRect().height)"""
    )
    assert sizes and min(sizes) >= 9, sizes

    # Signed out: the forms to sign in and up.
    page.context.clear_cookies()
    for path in ("/login", "/signup"):
        page.goto(site.url(path))
        page_fits(page, path)
