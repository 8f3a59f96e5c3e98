"""A competitor's whole visit in a real browser: sign up, submit by form, watch the grading
live, find the leaderboard row, use an API token with the REST API, log out."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import Page, expect

from tests.browser.site import (
    PROBLEMS_DIR,
    VECTORADD,
    Site,
    log_out,
    sign_up,
    submit_by_form,
    wait_for_verdict,
)


def test_sign_up_submit_watch_rank_token_and_log_out(page: Page, site: Site) -> None:
    sign_up(page, site, "ada", "ada-password")

    # A form error lands next to its field, and nothing is queued.
    page.goto(site.url("/submit?problem=vectoradd"))
    page.get_by_label("Code editor").click()  # it starts from the template: clear it
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#code-error")).to_contain_text("the code is empty")
    expect(page.get_by_label("Code editor")).to_have_attribute("aria-invalid", "true")

    # Test mode by pasting the code; the status changes without the page reloading.
    submission_id = submit_by_form(
        page, site, "vectoradd", "test", code=(VECTORADD / "pytorch.py").read_text()
    )
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    expect(page.locator("#result .badge")).to_have_text(re.compile("queued|running|passed"))
    wait_for_verdict(page, "passed")
    assert navigations == [], f"the page reloaded: {navigations}"
    cases = page.locator(".cases-table tbody tr")
    expect(cases).to_have_count(5)
    expect(cases.first).to_contain_text("passed")
    expect(page.locator("pre.code").last).to_contain_text("def custom_kernel")

    # Leaderboard mode by uploading the file; its row appears on the leaderboard.
    ranked_id = submit_by_form(
        page, site, "vectoradd", "leaderboard", file=VECTORADD / "pytorch.py"
    )
    wait_for_verdict(page, "passed")
    expect(page.locator(".score .value").first).to_contain_text("s")
    page.goto(site.url("/leaderboards/vectoradd?gpu=cpu"))
    row = page.locator(".leaderboard tbody tr", has_text="ada")
    expect(row).to_have_count(1)
    expect(row.locator(f"a[href='/submissions/{ranked_id}']")).to_be_visible()
    expect(page.locator(".chart svg circle")).not_to_have_count(0)

    # An API token: shown once, works with the REST API, and stops working when revoked.
    page.get_by_role("link", name="ada").first.click()
    page.get_by_placeholder("Label, e.g. laptop").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    token = page.locator("#new-token").inner_text().strip()
    assert token.startswith("kj_")
    api = httpx.get(
        site.url(f"/api/v1/submissions/{submission_id}"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert api.status_code == 200, api.text
    assert api.json()["user"] == "ada" and api.json()["status"] == "passed"
    page.goto(site.url("/users/ada"))
    expect(page.locator("#new-token")).to_have_count(0)
    page.get_by_role("button", name="Revoke token").first.click()
    expect(page.locator("tr.revoked")).to_have_count(1)
    assert any("Revoke token" in asked for asked in page.confirmations)  # it asked first
    refused = httpx.get(
        site.url(f"/api/v1/submissions/{submission_id}"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    assert refused.status_code == 401

    log_out(page)
    page.goto(site.url("/submit"))
    expect(page).to_have_url(site.url("/login?next=/submit"))


def test_the_api_docs_run_under_the_sites_content_policy(page: Page, site: Site) -> None:
    """The site lets only its own scripts run, and /docs (Swagger UI, started by an inline
    script the policy names by its hash) still lists the API's operations."""
    response = page.goto(site.url("/docs"))
    assert response is not None
    policy = response.headers["content-security-policy"]
    assert "script-src 'self' 'sha256-" in policy and "unsafe-inline" not in policy.split(";")[1]
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    expect(page.get_by_text("/api/v1/submissions").first).to_be_visible()


def test_the_submit_page_edits_python_with_its_problems_template(page: Page, site: Site) -> None:
    """The code field is an editor: the chosen problem's template to start from, Python
    highlighted, Tab moving the focus through it and never changing the code, Ctrl+]
    indenting, and what it holds is what the form posts; on a phone too."""
    sign_up(page, site, "editor-eve", "editor-eve-password")  # eve enters the whole competition
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(site.url("/submit"))
    page.locator("#problem").select_option("vectoradd")
    editor = page.get_by_label("Code editor")
    template = (PROBLEMS_DIR / "vectoradd" / "submission.py").read_text()
    expect(page.locator("#code")).to_have_value(template)
    expect(editor).to_contain_text("def custom_kernel")
    box = page.locator(".code-editor").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box

    # A keyword is drawn in another colour than the names around it.
    keyword = editor.locator("span", has_text=re.compile(r"^def$")).first
    colours = keyword.evaluate(
        "k => [getComputedStyle(k).color, getComputedStyle(k.closest('.cm-line')).color]"
    )
    assert colours[0] != colours[1], colours

    # Tab passes through the editor as through any field: into it and out again, from the
    # file field to the Submit button, the template unchanged.
    page.get_by_label("Upload a file").focus()
    page.keyboard.press("Tab")
    expect(editor).to_be_focused()
    page.keyboard.press("Tab")
    expect(editor).not_to_be_focused()
    expect(page.get_by_role("button", name="Submit", exact=True)).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(editor).to_be_focused()
    expect(page.locator("#code")).to_have_value(template)
    expect(page.locator("#code-keys")).to_contain_text("Ctrl")

    # Ctrl+] indents the line (four spaces), as the page says; the editor keeps the focus.
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.type("x = 1")
    page.keyboard.press("Control+BracketRight")
    expect(page.locator("#code")).to_have_value("    x = 1")
    expect(editor).to_be_focused()
    # A long line keeps its tokens whole: the editor scrolls sideways instead of wrapping.
    page.keyboard.press("Control+a")
    long_line = "def f(x: int) -> int: return x" + " + x" * 40
    page.keyboard.type(long_line)
    widths = page.evaluate(
        """() => {
            const scroller = document.querySelector(".code-editor .cm-scroller");
            return [document.querySelectorAll(".code-editor .cm-line").length,
                    scroller.scrollWidth > scroller.clientWidth,
                    document.documentElement.scrollWidth, window.innerWidth];
        }"""
    )
    assert widths[0] == 1 and widths[1] and widths[2] <= widths[3], widths
    page.keyboard.press("Control+a")
    page.keyboard.type("x = 1")
    page.keyboard.press("Control+BracketRight")

    # Choosing another problem does not throw away code of one's own.
    page.locator("#problem").select_option("vectorsum")
    expect(page.locator("#code")).to_have_value("    x = 1")

    code = (VECTORADD / "pytorch.py").read_text()
    submitted = submit_by_form(page, site, "vectoradd", "test", code=code)
    page.goto(site.url(f"/submissions/{submitted}"))
    expect(page.locator("pre.code").last).to_contain_text("def custom_kernel")
    shown = page.locator("pre.code").last.inner_text()
    assert shown.strip() == code.strip(), shown
