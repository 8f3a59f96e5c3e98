"""After a test pass, the result page leads on: "Run it in leaderboard mode" makes the ranked
run of the same code, whose page shows its rank; on a desktop and on a phone, where the page
stays within the screen."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from tests.browser.site import VECTORADD, Site, sign_up, submit_by_form, wait_for_verdict
from tests.browser.test_phone import PHONE, page_fits

DESKTOP = {"width": 1280, "height": 900}


def test_a_test_pass_leads_to_the_ranked_run_and_its_rank(page: Page, site: Site) -> None:
    sign_up(page, site, "nestor", "nestor-password")
    code = (VECTORADD / "pytorch.py").read_text()
    for viewport in (DESKTOP, PHONE):
        page.set_viewport_size(viewport)
        tested = submit_by_form(page, site, "vectoradd", "test", code=code)
        wait_for_verdict(page, "passed")
        page_fits(page, f"/submissions/{tested}")
        expect(page.get_by_role("link", name="Edit and resubmit")).to_be_visible()

        page.get_by_role("button", name="Run it in leaderboard mode").click()
        page.wait_for_url(re.compile(rf"/submissions/(?!{tested}$)\d+$"))
        ranked = int(page.url.rsplit("/", 1)[1])
        expect(page.locator(".page-head .chip").first).to_have_text("leaderboard")
        wait_for_verdict(page, "passed")
        standing = page.locator("#standing")
        expect(standing).to_contain_text(re.compile(r"rank \d+ of \d+ on vectoradd \(cpu\)"))
        expect(standing).to_contain_text("your best before:")
        expect(standing).to_contain_text("leader:")
        page_fits(page, f"/submissions/{ranked}")
        # The ranked run's code is the test run's.
        expect(page.locator("pre.code code")).to_contain_text("def custom_kernel")
