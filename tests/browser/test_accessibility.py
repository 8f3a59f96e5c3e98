"""Every page a spectator, a competitor and an organizer reach, checked by axe-core on a
desktop, on a 390 × 844 phone and in dark mode: no serious or critical violation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Browser, Page, expect

from tests.browser.site import (
    VECTORADD,
    Site,
    add_user_with_password,
    api_submit,
    api_verdict,
    log_in,
    log_in_as_organizer,
    log_out,
)

COMPETITOR, OTHER = "axel", "axelle"
MISSING = "/no-such-page"
SEVERE = ("serious", "critical")
VIEWS = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}},
    "desktop-dark": {"viewport": {"width": 1280, "height": 900}, "color_scheme": "dark"},
}


@dataclass(frozen=True)
class Visits:
    """The pages each role reaches, by path."""

    spectator: list[str]
    competitor: list[str]
    organizer: list[str]


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


@pytest.fixture(scope="module")
def visits(site: Site) -> Visits:
    """A competitor with a passed, a failed and a ranked run, entered in a competition to
    come; another competitor."""
    token = add_user_with_password(site.env, COMPETITOR, f"{COMPETITOR}-password", admin=False)
    add_user_with_password(site.env, OTHER, f"{OTHER}-password", admin=False)
    # A passed and a failed test run, and a ranked run: the leaderboard has a row.
    code = (VECTORADD / "pytorch.py").read_text()
    passed = api_submit(site, token, code)
    failed = api_submit(site, token, (VECTORADD / "wrong_zeros.py").read_text())
    ranked = api_submit(site, token, code, mode="leaderboard")
    for submission_id, verdict in ((passed, "passed"), (failed, "failed"), (ranked, "passed")):
        assert api_verdict(site, token, submission_id) == verdict

    admin_token = add_user_with_password(site.env, "axe-organizer", "axe-password", admin=True)
    # It opens tomorrow, on a problem no other browser test uses: while a competition is open,
    # the runs on its problems are private, and the other tests share this site.
    opens = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
    competition = {
        "name": "axe-sprint",
        "title": "An accessible sprint",
        "description": "One problem, **ten days**.",
        "problems": [{"name": "histogram"}],
        "gpu": "cpu",
        "opens_at": iso(opens),
        "closes_at": iso(opens + timedelta(days=10)),
        "scoring": "rank_points",
        "team_size": 2,
        "final_runs": 3,
    }
    for path, body, bearer in (
        ("/api/v1/competitions", competition, admin_token),
        ("/api/v1/competitions/axe-sprint/register", None, token),
    ):
        done = httpx.post(
            site.url(path), json=body, headers={"Authorization": f"Bearer {bearer}"}, timeout=30
        )
        assert done.status_code in (200, 201), done.text

    public = [
        "/",
        "/problems/vectoradd",
        "/leaderboards/vectoradd",
        "/competitions",
        "/competitions/axe-sprint",
        f"/users/{COMPETITOR}",
        f"/submissions/{passed}",
        f"/submissions/{failed}",
        f"/submissions/{ranked}",
        MISSING,
    ]
    return Visits(
        spectator=[*public, "/login", "/forgot", "/signup"],
        competitor=[
            *public,
            "/submit?problem=vectoradd",
            "/submissions/mine",
            f"/users/{OTHER}",
        ],
        organizer=["/admin/problems", "/admin/submissions", "/admin/users", "/admin/audit"],
    )


@pytest.fixture(params=list(VIEWS))
def view(request: pytest.FixtureRequest, browser: Browser) -> Iterator[Page]:
    """One browser context for the view, its page shared by the three roles in turn."""
    context = browser.new_context(**VIEWS[request.param])
    context.set_default_timeout(15_000)
    yield context.new_page()
    context.close()


def severe_violations(axe: Axe, page: Page) -> list[str]:
    """Each serious or critical violation: its rule, its impact and the elements it found.

    Every ``<details>`` is opened first, so its content is checked as a reader who opens it
    sees it. Closed, Chromium hides the content with ``content-visibility``, which this
    axe-core (4.4) does not know: it would measure hidden text against whatever lies
    beneath it on the page."""
    page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
    found: list[dict[str, Any]] = axe.run(page).response["violations"]
    return [
        f"{rule['id']} ({rule['impact']}): "
        + "; ".join(" ".join(node["target"]) for node in rule["nodes"])
        for rule in found
        if rule["impact"] in SEVERE
    ]


def test_no_page_has_a_serious_or_critical_violation(
    view: Page, site: Site, visits: Visits
) -> None:
    axe = Axe()
    failures: list[str] = []

    def check(role: str, paths: list[str]) -> None:
        for path in paths:
            response = view.goto(site.url(path))
            expected = 404 if path == MISSING else 200
            assert response is not None and response.status == expected, (role, path)
            failures.extend(f"{role} {path}: {line}" for line in severe_violations(axe, view))

    check("spectator", visits.spectator)
    # The last page, the sign-up form, sent wrong: it comes back with its errors.
    view.get_by_label("User name").fill(COMPETITOR)
    view.get_by_label("Password", exact=True).fill("a-long-password")
    view.get_by_label("Password again").fill("another-password")
    view.get_by_role("button", name="Sign up").click()
    expect(view.locator(".field-error").first).to_be_visible()
    failures.extend(f"spectator /signup (errors): {line}" for line in severe_violations(axe, view))

    log_in(view, site, COMPETITOR, f"{COMPETITOR}-password")
    check("competitor", visits.competitor)
    log_out(view)
    log_in_as_organizer(view, site)
    check("organizer", visits.organizer)
    assert not failures, "\n".join(failures)
