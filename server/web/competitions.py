"""Pages: the competitions, and one competition's standings (with its entries' near-clones
for organizers); entering it by form (alone, forming a team, joining one by its invite code
or link), a team's members and invite link."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from server.competitions import clones, repository, service
from server.competitions.schemas import JoinRequest, TeamCreate
from server.competitions.standings import board
from server.errors import KernelJudgeError
from server.models import Competition, Team
from server.web.page import PageDep, SignedInPage, render_markdown
from server.web.sessions import PostedForm

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
    return render_competition(page, service.get_competition(page.session, name))


def render_competition(
    page: PageDep,
    competition: Competition,
    *,
    errors: dict[str, str] | None = None,
    invited: Team | None = None,
    invite: str = "",
    team_name: str = "",
    status_code: int = 200,
) -> HTMLResponse:
    found = board(page.session, competition, page.viewer)
    near_clones = None
    if page.viewer is not None and page.viewer.is_admin:
        _, near_clones = clones.near_clones(
            page.session, competition.name, page.settings.clone_threshold
        )
    mine = service.team_of(page.session, competition, page.viewer)
    return page.render(
        "competition.html",
        status_code=status_code,
        competition=competition,
        board=found,
        near_clones=near_clones,
        clone_threshold=page.settings.clone_threshold,
        description=render_markdown(competition.description),
        mine=mine,
        invite_link=invite_link(page, competition, mine) if mine is not None else None,
        invited=invited,
        invite=invite,
        team_name=team_name,
        errors=errors or {},
    )


def invite_link(page: PageDep, competition: Competition, team: Team) -> str:
    base = str(page.request.base_url).rstrip("/")
    return f"{base}/competitions/{competition.name}/join?invite={team.invite_code}"


def entered(
    page: SignedInPage,
    name: str,
    field: str,
    enter: Callable[[], Team],
    done: str,
    **shown: str,
) -> HTMLResponse | RedirectResponse:
    """Enter by ``enter`` (a service call, as the API's route makes it); a refusal is said
    next to the form's ``field`` on the competition page, nothing of it kept."""
    try:
        team = enter()
    except ValidationError as exc:
        page.session.rollback()
        return refused(page, name, field, first_error(exc), 422, shown)
    except KernelJudgeError as exc:
        page.session.rollback()
        return refused(page, name, field, exc.detail, exc.status_code, shown)
    return page.redirect(f"/competitions/{name}#your-team", done.format(team=team.name))


def refused(
    page: SignedInPage, name: str, field: str, detail: str, status_code: int, shown: dict[str, str]
) -> HTMLResponse:
    competition = service.get_competition(page.session, name)
    return render_competition(
        page,
        competition,
        errors={field: detail},
        invite=shown.get("invite", ""),
        team_name=shown.get("team_name", ""),
        status_code=status_code,
    )


def first_error(exc: ValidationError) -> str:
    """A request model's refusal in a sentence: its first error's message."""
    message = str(exc.errors()[0]["msg"])
    return message.removeprefix("Value error, ")


@router.post("/competitions/{name}/register", response_model=None)
def register(name: str, page: SignedInPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    assert page.viewer is not None
    user = page.viewer
    return entered(
        page,
        name,
        "register",
        lambda: service.register_alone(page.session, name, user),
        "You entered alone, as team {team}.",
    )


@router.post("/competitions/{name}/teams", response_model=None)
def create_team(name: str, page: SignedInPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    assert page.viewer is not None
    user = page.viewer
    typed = str(form.get("team_name") or "")
    return entered(
        page,
        name,
        "team_name",
        lambda: service.create_team(page.session, name, user, TeamCreate(name=typed).name),
        "You formed team {team}. Send its invite link to your teammates.",
        team_name=typed,
    )


@router.post("/competitions/{name}/join", response_model=None)
def join_team(name: str, page: SignedInPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    assert page.viewer is not None
    user = page.viewer
    typed = str(form.get("invite") or "")
    return entered(
        page,
        name,
        "invite",
        lambda: service.join_team(
            page.session, name, user, JoinRequest(invite=invite_code(typed)).invite
        ),
        "You joined team {team}.",
        invite=typed,
    )


def invite_code(typed: str) -> str:
    """The code as typed, or taken from a pasted invite link."""
    typed = typed.strip()
    if "invite=" in typed:
        return parse_qs(urlsplit(typed).query).get("invite", [typed])[0]
    return typed


@router.get("/competitions/{name}/join", response_class=HTMLResponse)
def invited_page(
    name: str, page: SignedInPage, invite: str = Query(default="", max_length=64)
) -> HTMLResponse:
    """An invite link, opened signed in (signed out, the visitor logs in first and comes
    back): the competition page offering to join the team it names."""
    competition = service.get_competition(page.session, name)
    team = repository.team_by_invite(page.session, competition.id, invite) if invite else None
    errors = {}
    if team is None:
        errors["invite"] = (
            f"no team of competition {competition.name!r} has this invite code; ask your team "
            "for the link again"
        )
    return render_competition(page, competition, errors=errors, invited=team, invite=invite)
