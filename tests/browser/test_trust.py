"""What a competitor must be able to trust, in a real browser: a session that logging out
ends, private code that no error text gives away, a log-in limit no one else can lock them
out with, an error message that points at their own line, API docs that need no internet
and a problem bundle that grades locally as it is."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, Route, expect

from rig.processes import REPO_ROOT, kerneljudge
from tests.browser.site import (
    Site,
    add_user_with_password,
    api_submit,
    api_verdict,
    log_in,
    log_out,
    sign_up,
    submit_by_form,
    wait_for_verdict,
)

# A kernel that fails on its own line: the traceback quotes it, and so would stdout.
RAISING = """import torch

def custom_kernel(data):
    a, b, out = data
    print("about to call secret_tensor_trick")
    return secret_tensor_trick(a, b, out)
"""
SYNTAX_ERROR = """import torch

def custom_kernel(data)
    a, b, out = data
    return secret_fused_add(a, b, out=out)
"""


def test_a_cookie_replayed_after_logout_gets_the_log_in_page(
    page: Page, site: Site, browser: Browser
) -> None:
    sign_up(page, site, "hal", "hal-password")
    copied = page.context.cookies()
    assert any(cookie["name"] == "kj_session" for cookie in copied), copied

    # Another browser holding a copy of the cookie is signed in while the session lasts...
    thief = browser.new_context()
    thief.add_cookies(copied)  # type: ignore[arg-type]
    stolen = thief.new_page()
    stolen.goto(site.url("/submit"))
    expect(stolen.get_by_role("heading", level=1)).to_have_text("Submit a kernel")

    # ...and gets the log-in page once its owner has logged out.
    log_out(page)
    stolen.goto(site.url("/submit"))
    expect(stolen).to_have_url(site.url("/login?next=/submit"))
    expect(stolen.get_by_role("heading", level=1)).to_have_text("Log in")
    stolen.goto(site.url("/users/hal"))
    expect(stolen.get_by_role("button", name="Create token")).to_have_count(0)
    expect(stolen.get_by_role("banner").get_by_role("link", name="Log in")).to_be_visible()
    thief.close()


def test_a_failing_private_submission_shows_others_no_line_of_its_source(
    page: Page, site: Site, browser: Browser
) -> None:
    """Its traceback, its stdout and its syntax error quote the code: another competitor and
    an anonymous visitor read the verdict, in the page and through the API, and no line."""
    author_token = add_user_with_password(site.env, "ida", "ida-password", admin=False)
    other_token = add_user_with_password(site.env, "jon", "jon-password", admin=False)
    raising = api_submit(site, author_token, RAISING)
    syntax = api_submit(site, author_token, SYNTAX_ERROR)
    assert api_verdict(site, author_token, raising) == "error"
    assert api_verdict(site, author_token, syntax) == "error"
    secrets = ("secret_tensor_trick", "secret_fused_add", "custom_kernel(data)")

    anonymous = browser.new_context()
    visitor = anonymous.new_page()
    log_in(page, site, "jon", "jon-password")
    for viewer in (visitor, page):
        for submission_id in (raising, syntax):
            # The page, and the part of it that follows a grading live.
            for path in (f"/submissions/{submission_id}", f"/submissions/{submission_id}/live"):
                viewer.goto(site.url(path))
                expect(viewer.locator(".result .badge").first).to_have_text("error")
                expect(viewer.locator(".result")).to_contain_text("until the code is published")
                shown = viewer.content()
                assert not any(secret in shown for secret in secrets), (viewer, path)
                assert "submission.py" not in shown, (viewer, path)
            viewer.goto(site.url(f"/submissions/{submission_id}"))
            expect(viewer.locator("#code-hidden")).to_be_visible()
    # The API: no token is 401; another user's token reads the run as its page shows it
    # (the verdict, no code); neither answer quotes the code.
    for headers, status in (({}, 401), ({"Authorization": f"Bearer {other_token}"}, 200)):
        for submission_id in (raising, syntax):
            answer = visitor.request.get(
                site.url(f"/api/v1/submissions/{submission_id}"), headers=headers
            )
            assert answer.status == status, answer.text()
            assert not any(secret in answer.text() for secret in secrets)
            assert "submission.py" not in answer.text()
            if status == 200:
                assert answer.json()["status"] == "error" and answer.json()["code"] is None
        listed = visitor.request.get(site.url("/api/v1/submissions"), headers=headers)
        assert not any(secret in listed.text() for secret in secrets)
    anonymous.close()

    # Its author reads all of it: the lines were there to leak.
    log_out(page)
    log_in(page, site, "ida", "ida-password")
    page.goto(site.url(f"/submissions/{raising}"))
    expect(page.locator("#result pre.message")).to_contain_text("secret_tensor_trick(a, b, out)")
    page.locator("#result .logs summary").click()
    expect(page.locator("#result .logs")).to_contain_text("about to call secret_tensor_trick")
    page.goto(site.url(f"/submissions/{syntax}"))
    expect(page.locator("#result pre.message")).to_contain_text("def custom_kernel(data)")


def test_five_wrong_passwords_from_one_address_do_not_lock_the_owner_out_from_another(
    page: Page, site: Site, browser: Browser
) -> None:
    """Two browsers behind a reverse proxy on the site's host, which names each client's
    address in X-Forwarded-For (docs/web.md): the guesser's five wrong passwords make only
    the guesser wait."""
    add_user_with_password(site.env, "kim", "kim-password", admin=False)
    guessing = browser.new_context(extra_http_headers={"X-Forwarded-For": "198.51.100.23"})
    guesser = guessing.new_page()

    def attempt(password: str) -> None:
        guesser.goto(site.url("/login"))
        guesser.get_by_label("User name").fill("kim")
        guesser.get_by_label("Password").fill(password)
        guesser.get_by_role("button", name="Log in").click()

    for guess in range(5):
        attempt(f"guess-{guess}")
        expect(guesser.locator(".alert.error")).to_have_text(
            "the user name or the password is wrong"
        )
    attempt("kim-password")  # even the right password waits, from where the guesses came
    expect(guesser.locator(".alert.error")).to_contain_text("too many failed log-ins")
    expect(guesser.locator(".account .who")).to_have_count(0)

    owner = browser.new_context(extra_http_headers={"X-Forwarded-For": "203.0.113.7"}).new_page()
    log_in(owner, site, "kim", "kim-password")
    owner.goto(site.url("/submit"))
    expect(owner.get_by_role("heading", level=1)).to_have_text("Submit a kernel")
    owner.context.close()

    # The owner's log-in forgets only their own address's failures.
    attempt("kim-password")
    expect(guesser.locator(".alert.error")).to_contain_text("too many failed log-ins")
    guessing.close()


def test_a_syntax_error_starts_with_the_users_line_and_a_caret(page: Page, site: Site) -> None:
    """Read on a phone: the file and line, the line itself, the caret under the column Python
    names; no importlib or grader frames before it, and the caret still under its column
    (the message scrolls sideways instead of wrapping)."""
    sign_up(page, site, "lea", "lea-password")
    page.set_viewport_size({"width": 390, "height": 844})
    submitted = submit_by_form(page, site, "vectoradd", "test", code=SYNTAX_ERROR)
    wait_for_verdict(page, "error")
    page.goto(site.url(f"/submissions/{submitted}"))
    message = page.locator("#result pre.message")
    lines = message.inner_text().splitlines()
    assert lines[0] == "submission.py failed to load:", lines
    assert lines[1].strip() == 'File "submission.py", line 3', lines
    assert lines[2].strip() == "def custom_kernel(data)", lines
    assert lines[3].strip() == "^" and lines[4] == "SyntaxError: expected ':'", lines
    text = "\n".join(lines)
    assert "importlib" not in text and "grader" not in text and "Traceback" not in text, text
    # Python puts the caret just past "(data)", where the colon is missing.
    assert lines[3].index("^") == lines[2].index("(data)") + len("(data)"), lines

    # On the screen: the caret stands just right of ")", and nothing is cut off the page.
    caret_left, paren_right = message.evaluate(
        """(pre) => {
            const text = pre.firstChild;
            const box = (offset) => {
                const range = document.createRange();
                range.setStart(text, offset);
                range.setEnd(text, offset + 1);
                return range.getBoundingClientRect();
            };
            const paren = text.data.indexOf("(data)") + "(data".length;
            return [box(text.data.indexOf("^")).left, box(paren).right];
        }"""
    )
    assert abs(caret_left - paren_right) < 1, (caret_left, paren_right)
    box = message.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, box


def test_the_api_docs_render_with_the_network_cut_off(page: Page, site: Site) -> None:
    """Every request for anything but this site fails, as on a machine without internet:
    Swagger UI still lists the API's operations, and it asked for nothing elsewhere."""
    elsewhere: list[str] = []

    def only_this_site(route: Route) -> None:
        if route.request.url.startswith(site.base + "/"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort("internetdisconnected")

    page.context.route("**/*", only_this_site)
    page.goto(site.url("/docs"))
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("KernelJudge")
    expect(page.locator(".opblock-summary-path").first).to_be_visible()
    expect(
        page.locator(".opblock-summary-path", has_text="/api/v1/submissions").first
    ).to_be_visible()
    page.locator(".opblock-summary", has_text="/api/v1/problems/{name}/bundle").first.click()
    expect(page.locator(".opblock-body").first).to_be_visible()
    assert elsewhere == [], f"/docs asked for other sites: {elsewhere}"


def test_a_downloaded_bundle_grades_with_kerneljudge_grade_as_it_is(
    page: Page, site: Site, tmp_path: Path
) -> None:
    page.goto(site.url("/problems/vectoradd"))
    with page.expect_download() as downloading:
        page.get_by_role("link", name="Download the problem bundle").click()
    download = downloading.value
    assert download.suggested_filename == "vectoradd.zip"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    with zipfile.ZipFile(saved) as archive:
        archive.extractall(tmp_path)
    folder = tmp_path / "vectoradd"
    before = {path.name: path.read_bytes() for path in folder.iterdir()}

    env = {key: value for key, value in os.environ.items() if not key.startswith("KJ_")}
    grade = ["grade", str(folder), str(folder / "submission.py"), "--device", "cpu", "--json"]
    done = subprocess.run(
        kerneljudge(*grade),
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["status"] == "passed", report
    tests = httpx.get(site.url("/api/v1/problems/vectoradd"), timeout=10).json()["tests"]
    assert [case["params"] for case in report["cases"]] == tests
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
