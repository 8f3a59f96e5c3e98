"""A whole competition on the embedded install, as its organizer and competitors live it:
the organizer adds it on the admin page from its file, competitors sign up
and submit through the pages (teams are formed over the REST API: no page forms them yet),
the board freezes and closes, the final judging is started, previewed and published on the
command line (no page for it yet), and the standings page shows the final results, as
rig/competition.py works them out by hand."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from rig import competition as plan_
from rig.processes import REPO_ROOT, kerneljudge
from tests.browser.site import (
    Site,
    api_verdict,
    log_in_as_organizer,
    sign_up,
    submit_by_form,
)

# Seconds: until it opens (the teams form meanwhile), open before the freeze (two
# submissions through the form), frozen before the close (one more).
OPEN_IN_S, OPEN_S, FROZEN_S = 4, 10, 8
K = 2


def organizer(site: Site, *args: str) -> subprocess.CompletedProcess[str]:
    """`kerneljudge ...` on the server's host, as its organizer runs it."""
    done = subprocess.run(
        kerneljudge(*args), env=site.env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def new_token(page: Page, site: Site, name: str) -> str:
    """An API token made on the account page, as a competitor makes one."""
    page.goto(site.url(f"/users/{name}"))
    page.get_by_placeholder("Label, e.g. laptop").fill("competition")
    page.get_by_role("button", name="Create token").click()
    return page.locator("#new-token").inner_text().strip()


def api(site: Site, token: str, path: str, body: dict[str, Any] | None = None) -> Any:
    response = httpx.post(
        site.url(path), json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def graded(site: Site, token: str, submission_id: int) -> Any:
    return httpx.get(
        site.url(f"/api/v1/submissions/{submission_id}"),
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    ).json()


def board_rows(page: Page) -> list[tuple[str, str, str]]:
    """The standings table's (rank, team, total), as shown."""
    rows = page.locator("table.standings tbody tr")
    return [
        (
            row.locator("td").nth(0).inner_text().strip(),
            row.locator("td").nth(1).inner_text().split("\n")[0].split(" you")[0].strip(),
            row.locator("td").nth(3).inner_text().strip(),
        )
        for row in rows.all()
    ]


def shown(expected: Sequence[tuple[str, float | None]]) -> list[tuple[str, str, str]]:
    """The rows as the page writes them: a team without an entry unranked, with no total."""
    return [
        (str(rank), team, f"{total:.4g}") if total is not None else ("—", team, "—")
        for rank, (team, total) in enumerate(expected, 1)
    ]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_whole_competition_from_its_file_to_the_final_standings(
    browser: Browser, site: Site
) -> None:
    began = time.monotonic()
    users = [*plan_.TEAMS["Red"], *plan_.TEAMS["Blue"], plan_.SOLO]
    pages: dict[str, Page] = {}
    tokens: dict[str, str] = {}
    for user in users:
        pages[user] = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        pages[user].context.set_default_timeout(15_000)
        sign_up(pages[user], site, user, f"{user}-password")
        tokens[user] = new_token(pages[user], site, user)

    # The organizer pastes the competition's file into the admin page.
    admin = browser.new_context().new_page()
    log_in_as_organizer(admin, site)
    plan = plan_.Plan.starting_in("spring-sprint", OPEN_IN_S, OPEN_S, FROZEN_S, final_runs=5)
    admin.goto(site.url("/admin/competitions"))
    admin.get_by_label("Competition file").fill(plan.file())
    admin.get_by_role("button", name="Add competition").click()
    expect(admin.locator(f"#c-{plan.name}")).to_contain_text("upcoming")

    base = f"/api/v1/competitions/{plan.name}"
    for team, (first, second) in plan_.TEAMS.items():
        invite = api(site, tokens[first], f"{base}/teams", {"name": team})["invite"]
        api(site, tokens[second], f"{base}/join", {"invite": invite})
    api(site, tokens[plan_.SOLO], f"{base}/register")

    def submit(user: str, problem: str) -> int:
        code = plan_.kernel(problem)
        return submit_by_form(pages[user], site, problem, "leaderboard", code=code)

    plan_.wait_until(plan.opens_at)
    submitted = {entry: submit(*entry) for entry in plan_.BEFORE_FREEZE}
    assert time.time() < plan.freeze_at.timestamp(), "the submissions came after the freeze"
    plan_.wait_until(plan.freeze_at)
    submitted |= {entry: submit(*entry) for entry in plan_.AFTER_FREEZE}
    assert time.time() < plan.closes_at.timestamp(), "the last submission came after the close"
    for (user, _), submission_id in submitted.items():
        verdict = api_verdict(site, tokens[user], submission_id)
        assert verdict == "passed", json.dumps(graded(site, tokens[user], submission_id))[:3000]
    plan_.wait_until(plan.closes_at)
    took = time.monotonic() - began

    # Frozen: everyone reads the board as of the freeze; a member sees their own row live.
    public = browser.new_context().new_page()
    public.goto(site.url(f"/competitions/{plan.name}"))
    expect(public.locator("#frozen")).to_be_visible()
    expect(public.locator("#competition-status")).to_have_text("closed")
    assert board_rows(public) == shown(plan_.FROZEN)
    cat = pages["cat"]
    cat.goto(site.url(f"/competitions/{plan.name}"))
    blue = cat.locator("table.standings tbody tr.you")
    expect(blue).to_contain_text("you, live")
    expect(blue.locator("td").nth(0)).to_have_text("1")
    expect(blue.locator("td").nth(3)).to_have_text("300")

    # The final judging, on the command line: each entry graded K times more.
    organizer(site, "competition", "judge", plan.name, "--runs", str(K))
    preview = judging_when_ready(site, plan.name)
    rows = {row["team"]: row for row in preview["rows"]}
    assert [(r["team"], r["rank_after"], r["total_after"]) for r in preview["rows"]] == [
        (team, rank, total) for rank, (team, total) in enumerate(plan_.JUDGED, 1)
    ]
    before = {team: (rank, total) for rank, (team, total) in enumerate(plan_.AT_CLOSE, 1)}
    for team, row in rows.items():
        assert (row["rank_before"], row["total_before"]) == before[team]
        assert set(row["entries"]) == plan_.JUDGED_ENTRIES[team]
        for entry in row["entries"].values():
            assert len(entry["runs"]) == K
            assert entry["statuses"] == ["passed"] * K and not entry["fails"], entry
    assert preview["graded"] == preview["total_runs"] == plan_.ENTRIES * K

    organizer(site, "competition", "publish", plan.name)
    public.goto(site.url(f"/competitions/{plan.name}"))
    expect(public.locator("#frozen")).to_have_count(0)
    assert board_rows(public) == shown(plan_.JUDGED)
    final = httpx.get(site.url(f"{base}/standings"), timeout=10).json()
    assert final["final"] and not final["frozen"]
    assert [(row["team"], row["total"]) for row in final["rows"]] == plan_.JUDGED
    for page in pages.values():
        page.context.close()
    public.context.close()
    admin.context.close()
    print(f"until the close: {took:.0f} s; in all: {time.monotonic() - began:.0f} s")


def judging_when_ready(site: Site, name: str, timeout_s: float = 480) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        body = json.loads(organizer(site, "competition", "judging", name, "--json").stdout)
        if body["status"] == "ready":
            return dict(body)
        assert time.monotonic() < deadline, body
        time.sleep(2)
