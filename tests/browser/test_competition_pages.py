"""A competition on its pages in a real browser: a competitor forms a team and copies its
invite link, a second competitor opens it (logging in first) and joins; after the close the
organizer starts the final judging on the review page and reads its preview while the run
waits. The new parts fit a phone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from playwright.sync_api import Browser, expect
from sqlalchemy import create_engine, update

from server.models import Competition
from tests.browser.site import (
    VECTORADD,
    Site,
    add_user_with_password,
    log_in,
    sign_up,
    submit_by_form,
    wait_for_verdict,
)
from tests.browser.test_phone import PHONE, page_fits

NAME = "owl-sprint"


def add_competition(site: Site, token: str) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    body = {
        "name": NAME,
        "title": "Owl sprint",
        "description": "One problem, **one day**.",
        "problems": [{"name": "vectoradd"}],
        "gpu": "cpu",
        "opens_at": (now - timedelta(hours=1)).isoformat(),
        "closes_at": (now + timedelta(days=1)).isoformat(),
        "scoring": "rank_points",
        "team_size": 3,
        "final_runs": 1,
    }
    response = httpx.post(
        site.url("/api/v1/competitions"),
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 201, response.text


def close_now(site: Site) -> None:
    """As if the close had come: written to the site's database, which no organizer can do
    once it opened."""
    database = Path(site.env["KJ_DATA_DIR"]) / "kerneljudge.sqlite3"
    engine = create_engine(f"sqlite:///{database}")
    with engine.begin() as connection:
        connection.execute(
            update(Competition)
            .where(Competition.name == NAME)
            .values(closes_at=datetime.now(UTC) - timedelta(seconds=1))
        )
    engine.dispose()


def test_a_team_is_formed_joined_by_its_link_and_judged(browser: Browser, site: Site) -> None:
    admin_token = add_user_with_password(site.env, "olga", "olga-password", admin=True)
    add_competition(site, admin_token)

    tia = browser.new_context(permissions=["clipboard-read", "clipboard-write"]).new_page()
    tia.context.set_default_timeout(15_000)
    sign_up(tia, site, "tia", "tia-password")
    tia.goto(site.url(f"/competitions/{NAME}"))
    tia.get_by_label("Form a team").fill("Night Owls")
    tia.get_by_role("button", name="Form the team").click()
    expect(tia.locator("#notice")).to_contain_text("You formed team Night Owls.")
    expect(tia.get_by_role("heading", name="Your team: Night Owls")).to_be_visible()
    tia.get_by_role("button", name="Copy").click()
    expect(tia.get_by_role("button", name="Copied")).to_be_visible()
    link = tia.evaluate("navigator.clipboard.readText()")
    assert link.startswith(site.url(f"/competitions/{NAME}/join?invite=")), link
    tia.set_viewport_size(PHONE)
    page_fits(tia, f"/competitions/{NAME} (a team's invite link)")

    # Uma opens the link signed out: she logs in first and comes back to it.
    add_user_with_password(site.env, "uma", "uma-password", admin=False)
    uma = browser.new_context(viewport=PHONE).new_page()
    uma.context.set_default_timeout(15_000)
    uma.goto(link)
    uma.get_by_label("User name").fill("uma")
    uma.get_by_label("Password").fill("uma-password")
    uma.get_by_role("button", name="Log in").click()
    expect(uma.locator("#join-invited")).to_contain_text("join team Night Owls (1 of 3 members)")
    page_fits(uma, f"/competitions/{NAME}/join (the entry forms)")
    uma.get_by_role("button", name="Join Night Owls").click()
    expect(uma.locator("#notice")).to_contain_text("You joined team Night Owls.")
    expect(uma.locator("#your-team")).to_contain_text("Members (2 of 3): tia, uma")
    uma.context.close()

    # Tia's ranked run counts for the team; then the competition closes.
    tia.set_viewport_size({"width": 1280, "height": 900})
    code = (VECTORADD / "pytorch.py").read_text()
    submit_by_form(tia, site, "vectoradd", "leaderboard", code=code)
    wait_for_verdict(tia, "passed")
    tia.context.close()
    close_now(site)

    olga = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    olga.context.set_default_timeout(15_000)
    log_in(olga, site, "olga", "olga-password")
    olga.goto(site.url(f"/competitions/{NAME}"))
    olga.get_by_role("link", name="Review: judging, disqualifying, rejudges").click()
    olga.get_by_label("Runs per entry (K)").fill("1")
    olga.get_by_role("button", name="Start the final judging").click()
    expect(olga.locator("#notice")).to_contain_text("1 run of each entry queued")
    # Publishing waits for every run (the preview's medians once graded are
    # tests/server/web/test_competition_review.py's): here the page as the run waits.
    expect(olga.locator("#judging-progress")).to_contain_text("of 1 runs graded")
    expect(olga.locator(".judging-preview tbody tr", has_text="Night Owls")).to_be_visible()
    expect(olga.get_by_role("button", name="Publish")).to_be_disabled()
    olga.set_viewport_size(PHONE)
    page_fits(olga, f"/competitions/{NAME}/review")
    olga.context.close()
