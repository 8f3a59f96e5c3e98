"""Admin pages of competitions: every competition with its phase and links, a new one added
from its YAML file pasted into the page, and one changed by editing its file until it opens.
The file is the one `kerneljudge competition add` reads and `POST /api/v1/competitions`
takes as JSON (docs/competitions.md); the same service adds and edits it, and audits both."""

from __future__ import annotations

from datetime import timedelta

import yaml
from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from server.competitions import repository, service
from server.competitions.schemas import CompetitionFile, Phase, file_errors
from server.errors import KernelJudgeError
from server.models import utcnow
from server.web.page import AdminPage
from server.web.sessions import PostedForm

router = APIRouter(prefix="/admin/competitions", include_in_schema=False)

# The largest file the page takes (a description of 100,000 characters fits).
MAX_FILE_CHARS = 200_000


def example_file() -> str:
    """A file to start from: a week from tomorrow on the first problems, rank points."""
    opens = utcnow().replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
    return yaml.safe_dump(
        {
            "name": "spring-sprint",
            "title": "Spring sprint",
            "description": "Fastest kernels win. By registering you accept these rules.",
            "problems": [{"name": "vectoradd", "weight": 1}],
            "gpu": "h200",
            "opens_at": opens.isoformat().replace("+00:00", "Z"),
            "freeze_at": (opens + timedelta(days=6)).isoformat().replace("+00:00", "Z"),
            "closes_at": (opens + timedelta(days=7)).isoformat().replace("+00:00", "Z"),
            "scoring": "rank_points",
            "team_size": 3,
            "final_runs": 5,
        },
        sort_keys=False,
    )


def parsed(text: str) -> tuple[CompetitionFile | None, str]:
    """The pasted file, or why it is not a competition file (one line per mistake)."""
    if len(text) > MAX_FILE_CHARS:
        return None, f"the file is over {MAX_FILE_CHARS:,} characters"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, f"this is not YAML: {exc}"
    if not isinstance(data, dict):
        return None, "a competition file is a mapping of its fields (name, title, problems, ...)"
    try:
        return CompetitionFile.model_validate(data), ""
    except ValidationError as exc:
        return None, file_errors(exc)


def render_list(
    page: AdminPage, text: str = "", error: str = "", status_code: int = 200
) -> HTMLResponse:
    competitions = service.list_competitions(page.session)
    counts = repository.team_counts(page.session)
    return page.render(
        "admin/competitions.html",
        status_code=status_code,
        competitions=competitions,
        phases={c.id: service.phase(c) for c in competitions},
        teams={c.id: counts.get(c.id, 0) for c in competitions},
        text=text or example_file(),
        error=error,
        section="competitions",
    )


def render_edit(
    page: AdminPage, name: str, text: str = "", error: str = "", status_code: int = 200
) -> HTMLResponse:
    competition = service.get_competition(page.session, name)
    return page.render(
        "admin/competition_edit.html",
        status_code=status_code,
        competition=competition,
        editable=service.phase(competition) == Phase.UPCOMING,
        text=text or yaml.safe_dump(service.file_of(competition), sort_keys=False),
        error=error,
        section="competitions",
    )


@router.get("", response_class=HTMLResponse)
def admin_competitions(page: AdminPage) -> HTMLResponse:
    return render_list(page)


@router.post("", response_model=None)
def add_competition(page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    text = str(form.get("file") or "")
    file, error = parsed(text)
    if file is None:
        return render_list(page, text, error, 422)
    try:
        competition = service.create_competition(page.session, page.settings, file, page.viewer)
    except KernelJudgeError as exc:
        page.session.rollback()
        return render_list(page, text, exc.detail, 422)
    return page.redirect(
        f"/admin/competitions#c-{competition.name}", f"Competition {competition.name} added."
    )


@router.get("/{name}", response_class=HTMLResponse)
def edit_page(name: str, page: AdminPage) -> HTMLResponse:
    return render_edit(page, name)


@router.post("/{name}", response_model=None)
def edit_competition(
    name: str, page: AdminPage, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    text = str(form.get("file") or "")
    file, error = parsed(text)
    if file is None:
        return render_edit(page, name, text, error, 422)
    try:
        _, changed = service.edit_competition(page.session, page.settings, name, file, page.viewer)
    except KernelJudgeError as exc:
        page.session.rollback()
        return render_edit(page, name, text, exc.detail, 422)
    notice = f"Changed: {', '.join(changed)}." if changed else "Nothing changed."
    return page.redirect(f"/admin/competitions/{name}", notice)
