"""Regenerate docs/screenshots/*.png: a real server with a few competitors and graded
submissions, every page photographed by chromium. Run with ``make screenshots``. The site
sends its password-reset mail to an SMTP server of this script's own, so the mailed link
is followed as a user would."""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from email import message_from_bytes
from functools import partial
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from playwright.sync_api import Page, ViewportSize, expect, sync_playwright

from rig.processes import free_port
from tests.browser.site import (
    SLOW_ADD,
    VECTORADD,
    Site,
    add_user_with_password,
    api_submit,
    api_verdict,
    launch,
    log_in,
    log_in_as_organizer,
    log_out,
    renamed_problem_archive,
    running_site,
    submit_by_form,
    wait_for_verdict,
)

DESKTOP: ViewportSize = {"width": 1280, "height": 860}
PHONE: ViewportSize = {"width": 390, "height": 844}

# Kernels of clearly different speed (the same addition done 8 and 3 times), so the
# leaderboard and its chart have an order worth showing even on a busy CPU.
REPEATED = """import torch

def custom_kernel(data):
    a, b, out = data
    for _ in range({times}):
        torch.add(a, b, out=out)
    return out
"""


def wait_all(site: Site, token_by_id: dict[int, str]) -> None:
    for submission_id, token in token_by_id.items():
        api_verdict(site, token, submission_id, timeout_s=600)


def shoot(page: Page, out: Path, name: str) -> None:
    page.wait_for_load_state("networkidle")
    # A page opened at an anchor is scrolled; its sticky header would land mid-picture.
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)
    print(f"wrote {out / name}.png")


def visit(page: Page, site: Site, out: Path, path: str, name: str) -> None:
    """Open one of the site's pages and photograph it."""
    page.goto(site.url(path))
    shoot(page, out, name)


# A syntax error, as a competitor's phone shows its message: their line, with a caret.
SYNTAX_ERROR = """import torch

def custom_kernel(data)
    a, b, out = data
    return torch.add(a, b, out=out)
"""
# The submission ids of the runs shown on their own pages.
SHOWN: dict[str, int] = {}
# While a submission grades, its page says which case of how many runs.
PROGRESS_LINE = re.compile(r"^Running: case \d+ of \d+")
# The password-reset link the site mailed, opened later on a phone.
MAILED: list[str] = []


class Inbox:
    """The site's outgoing mail: each message's text."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = message_from_bytes(envelope.content)
        self.texts.append(str(message.get_payload(decode=True), "utf-8"))
        return "250 OK"


@contextmanager
def catching_mail() -> Iterator[tuple[Inbox, dict[str, str]]]:
    """An SMTP server on a free port, and the site's settings that send mail to it."""
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield (
            inbox,
            {
                "smtp_host": "127.0.0.1",
                "smtp_port": str(port),
                "smtp_starttls": "false",
                "smtp_from": "judge@example.org",
            },
        )
    finally:
        controller.stop()


def mailed_link(inbox: Inbox, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while not inbox.texts:
        assert time.monotonic() < deadline, "the site mailed no link"
        time.sleep(0.2)
    found = re.search(r"http://\S+/reset/[\w-]+", inbox.texts[-1])
    assert found, inbox.texts[-1]
    return found.group(0)


def populate(site: Site) -> dict[str, str]:
    """Three competitors with ranked runs, one wrong kernel, one syntax error and one
    profile; returns their tokens."""
    tokens = {
        name: add_user_with_password(site.env, name, f"{name}-password", admin=False)
        for name in ("ada", "grace", "linus")
    }
    # One after another, each faster than the last, so the chart shows three records.
    runs = [
        ("ada", REPEATED.format(times=8), "leaderboard", ""),
        ("linus", REPEATED.format(times=3), "leaderboard", ""),
        ("grace", (VECTORADD / "pytorch.py").read_text(), "leaderboard", ""),
        ("linus", (VECTORADD / "wrong_zeros.py").read_text(), "test", "failed"),
        ("linus", SYNTAX_ERROR, "test", "syntax"),
        ("grace", (VECTORADD / "pytorch.py").read_text(), "profile", "profile"),
    ]
    pending = {}
    for name, code, mode, shown_as in runs:
        submission_id = api_submit(site, tokens[name], code, mode)
        pending[submission_id] = tokens[name]
        if shown_as:
            SHOWN[shown_as] = submission_id
    wait_all(site, pending)
    return tokens


def competitor_pages(page: Page, site: Site, out: Path) -> None:
    visit(page, site, out, "/login", "login")
    log_in(page, site, "ada", "ada-password")
    visit(page, site, out, "/", "home")
    visit(page, site, out, "/problems/vectoradd", "problem")

    page.goto(site.url("/submit?problem=vectoradd"))
    page.locator("label[for=mode-leaderboard]").click()
    shoot(page, out, "submit-editor")
    page.get_by_label("Code editor").click()  # it starts from the template: clear it
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.get_by_role("button", name="Submit", exact=True).click()
    expect(page.locator("#code-error")).to_be_visible()
    shoot(page, out, "submit-error")

    grading_and_after(page, site, out, "")
    visit(page, site, out, "/submissions/mine", "my-submissions")

    visit(page, site, out, "/leaderboards/vectoradd?gpu=cpu", "leaderboard")

    page.goto(site.url("/users/ada"))
    page.get_by_placeholder("Label, e.g. laptop").fill("laptop")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#new-token")).to_be_visible()
    shoot(page, out, "user-tokens")
    # Their own page once more: the address a reset link is mailed to, "log out everywhere".
    page.get_by_label("Email address").fill("ada@example.org")
    page.get_by_role("button", name="Save address").click()
    expect(page.locator("#notice")).to_contain_text("Password-reset mail goes to")
    shoot(page, out, "user-account")

    visit(page, site, out, "/no-such-page", "not-found")
    log_out(page)
    log_in(page, site, "grace", "grace-password")
    visit(page, site, out, f"/submissions/{SHOWN['profile']}", "submission-profile")
    log_out(page)


def grading_and_after(page: Page, site: Site, out: Path, prefix: str) -> None:
    """A slow kernel's page while it grades, its progress line showing; then a ranked run's
    page once it passed, with where it stands and the next step. ``prefix``: "phone-" or ""."""
    submit_by_form(page, site, "vectoradd", "test", code=SLOW_ADD)
    expect(page.locator("#progress")).to_have_text(PROGRESS_LINE, timeout=300_000)
    shoot(page, out, f"{prefix}submission-live")
    wait_for_verdict(page, "passed", timeout_s=300)
    ranked = submit_by_form(page, site, "vectoradd", "leaderboard", file=VECTORADD / "pytorch.py")
    SHOWN[f"{prefix}ranked"] = ranked
    wait_for_verdict(page, "passed", timeout_s=300)
    expect(page.locator("#standing")).to_be_visible()
    shoot(page, out, f"{prefix}submission-result")


def phone_competitor_pages(page: Page, site: Site, out: Path) -> None:
    """ada's pages on a phone: a grading and a ranked result, My submissions, her account."""
    log_in(page, site, "ada", "ada-password")
    grading_and_after(page, site, out, "phone-")
    visit(page, site, out, "/submissions/mine", "phone-my-submissions")
    visit(page, site, out, "/users/ada", "phone-user-account")
    log_out(page)


def organizer_pages(page: Page, site: Site, out: Path) -> None:
    log_in_as_organizer(page, site)
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "vectoradd_bf16.tar.gz"
        archive.write_bytes(renamed_problem_archive("vectoradd", "vectoradd_v2"))
        page.goto(site.url("/admin/problems"))
        page.get_by_label("Archive").set_input_files(archive)
        page.get_by_role("button", name="Upload").click()
        expect(page.locator(".alert.success")).to_be_visible()
    row = page.locator("#p-vectoradd_v2")
    row.locator("input[name=deadline]").fill("2026-12-24T18:00")
    row.get_by_role("button", name="Save vectoradd_v2").click()
    expect(page.locator("#p-vectoradd_v2 input[name=deadline]")).to_have_value("2026-12-24T18:00")
    # The screen as the save left it: the row below the header, the notice at its foot.
    expect(page.locator("#notice")).to_be_in_viewport()
    page.screenshot(path=str(out / "admin-problems-saved.png"))
    print(f"wrote {out / 'admin-problems-saved.png'}")
    # The row follows its validation to the verdict, without a reload.
    expect(row.locator("[data-status]")).to_have_attribute("data-status", "live", timeout=300_000)
    visit(page, site, out, "/admin/problems", "admin-problems")
    visit(page, site, out, "/admin/submissions", "admin-submissions")
    visit(page, site, out, "/admin/users", "admin-users")


def password_pages(page: Page, site: Site, out: Path, inbox: Inbox) -> None:
    """An organizer's one-time link for grace, followed to a new password; ada asks on
    /forgot for a link by mail (opened on a phone below)."""
    page.on("dialog", lambda dialog: dialog.accept())  # "Password link" asks first
    log_in_as_organizer(page, site)
    page.goto(site.url("/admin/users"))
    page.get_by_role("button", name="Password link for grace").click()
    link = page.locator("#reset-link").inner_text().strip()
    shoot(page, out, "admin-reset-link")
    log_out(page)
    page.goto(link)
    expect(page.get_by_role("heading", level=1)).to_have_text("Set a new password")
    shoot(page, out, "reset-form")
    page.get_by_label("New password", exact=True).fill("grace-new-password")
    page.get_by_label("New password again").fill("grace-new-password")
    page.get_by_role("button", name="Set the password").click()
    expect(page.locator(".alert.success")).to_contain_text("Your new password is set")
    shoot(page, out, "reset-done")

    page.goto(site.url("/login"))
    page.get_by_role("link", name="Get a link by mail").click()
    shoot(page, out, "forgot")
    page.get_by_label("User name").fill("ada")
    page.get_by_role("button", name="Mail me a link").click()
    expect(page.locator(".alert.success")).to_contain_text("on its way")
    shoot(page, out, "forgot-sent")
    MAILED.append(mailed_link(inbox))


def phone_pages(page: Page, site: Site, out: Path) -> None:
    visit(page, site, out, "/leaderboards/vectoradd?gpu=cpu", "phone-leaderboard")
    # The mailed link, opened where mail is read.
    page.goto(MAILED[-1])
    expect(page.get_by_label("New password", exact=True)).to_be_visible()
    shoot(page, out, "phone-reset-form")
    # A failed submission as its author reads it on a phone: the mismatch, the syntax error.
    log_in(page, site, "linus", "linus-password")
    visit(page, site, out, f"/submissions/{SHOWN['failed']}", "phone-submission-failed")
    visit(page, site, out, f"/submissions/{SHOWN['syntax']}", "phone-submission-syntax-error")
    visit(page, site, out, "/submit?problem=vectoradd", "phone-submit")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory(prefix="kj-screenshots-") as scratch,
        catching_mail() as (inbox, mail_settings),
        running_site(Path(scratch) / "var", **mail_settings) as site,
        sync_playwright() as playwright,
    ):
        populate(site)
        browser = launch(playwright)
        for viewport, shots in (
            (DESKTOP, competitor_pages),
            (DESKTOP, organizer_pages),
            (DESKTOP, partial(password_pages, inbox=inbox)),
            (PHONE, phone_pages),
            (PHONE, phone_competitor_pages),
        ):
            context = browser.new_context(viewport=viewport)
            context.set_default_timeout(30_000)
            shots(context.new_page(), site, out)
            context.close()
        browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
