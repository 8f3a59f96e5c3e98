"""Pages: the competitions, and one competition's standings (with its entries' near-clones
for organizers)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from server.competitions import clones, repository, service
from server.competitions.standings import board
from server.web.page import PageDep, render_markdown

router = APIRouter(include_in_schema=False)


@router.get("/competitions", response_class=HTMLResponse)
def competitions_page(page: PageDep) -> HTMLResponse:
    counts = repository.team_counts(page.session)
    rows = [
        {
            "competition": competition,
            "phase": service.phase(competition),
            "teams": counts.get(competition.id, 0),
        }
        for competition in service.list_competitions(page.session)
    ]
    return page.render("competitions.html", rows=rows)


@router.get("/competitions/{name}", response_class=HTMLResponse)
def competition_page(name: str, page: PageDep) -> HTMLResponse:
    competition = service.get_competition(page.session, name)
    found = board(page.session, competition, page.viewer)
    near_clones = None
    if page.viewer is not None and page.viewer.is_admin:
        _, near_clones = clones.near_clones(page.session, name, page.settings.clone_threshold)
    return page.render(
        "competition.html",
        competition=competition,
        board=found,
        near_clones=near_clones,
        clone_threshold=page.settings.clone_threshold,
        description=render_markdown(competition.description),
    )
