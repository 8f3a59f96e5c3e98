"""The organizers' page of a competition: its final judging (start it after the close,
follow its runs, read its preview, publish or discard it), disqualifying a team, and
rejudges of its problems. Each form calls the service its API route calls, which audits it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError
from sqlalchemy.orm import Session

from grader.report import TERMINAL_STATUSES
from server.competitions import judging, repository, service
from server.competitions.judging_endpoints import judging_body
from server.competitions.schemas import MAX_FINAL_RUNS, DisqualifyRequest
from server.deps import RowId
from server.errors import BadRequest, KernelJudgeError
from server.models import Judging, User
from server.rejudges import service as rejudges
from server.rejudges.endpoints import rejudge_body
from server.web.competitions import first_error
from server.web.page import AdminPage
from server.web.sessions import PostedForm

router = APIRouter(include_in_schema=False)


def review_path(name: str, anchor: str = "") -> str:
    return f"/competitions/{name}/review" + (f"#{anchor}" if anchor else "")


@router.get("/competitions/{name}/review", response_class=HTMLResponse)
def review_page(name: str, page: AdminPage) -> HTMLResponse:
    return render_review(page, name)


def render_review(
    page: AdminPage,
    name: str,
    *,
    errors: dict[str, str] | None = None,
    values: dict[str, str] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    competition = service.get_competition(page.session, name)
    judgings = repository.judgings(page.session, competition.id)
    problem_names = [entry.problem.name for entry in competition.problems]
    return page.render(
        "competition_review.html",
        status_code=status_code,
        competition=competition,
        phase=service.phase(competition),
        judging=judging_body(page.session, judgings[-1]) if judgings else None,
        max_runs=MAX_FINAL_RUNS,
        teams=repository.teams(page.session, competition.id),
        problem_names=problem_names,
        statuses=[str(status) for status in TERMINAL_STATUSES],
        rejudges=[
            rejudge_body(page.session, found)
            for found in rejudges.of_problems(page.session, problem_names)
        ],
        errors=errors or {},
        values=values or {},
    )


def acted(
    page: AdminPage,
    name: str,
    field: str,
    act: Callable[[], str],
    anchor: str,
    values: dict[str, str] | None = None,
) -> HTMLResponse | RedirectResponse:
    """Do ``act`` (it returns what the next page says); a refusal is said next to the form's
    ``field``, nothing of it kept."""
    try:
        done = act()
    except ValidationError as exc:
        page.session.rollback()
        return render_review(
            page, name, errors={field: first_error(exc)}, values=values, status_code=422
        )
    except KernelJudgeError as exc:
        page.session.rollback()
        return render_review(
            page, name, errors={field: exc.detail}, values=values, status_code=exc.status_code
        )
    return page.redirect(review_path(name, anchor), done)


def decided(
    page: AdminPage,
    name: str,
    field: str,
    choices: Mapping[str, Callable[[Session, Any, User | None], Judging]],
    decision: str,
    subject: Any,
    noun: str,
    title: str,
) -> HTMLResponse | RedirectResponse:
    """A review set's last step: the service call ``choices`` names for ``decision``, on
    ``subject`` (a judging's competition, a rejudge's id); the next page says its outcome."""
    decide = choices.get(decision)
    if decide is None:
        raise BadRequest(f"{' or '.join(choices)} a {noun}")

    def act() -> str:
        done = decide(page.session, subject, page.viewer)
        return f"{title} {done.id} {done.status}."

    return acted(page, name, field, act, field)


def runs_given(text: str) -> int | None:
    if not text.strip():
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise BadRequest(f"runs must be a whole number from 1 to {MAX_FINAL_RUNS}") from exc


@router.post("/competitions/{name}/review/judgings", response_model=None)
def start_judging(name: str, page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    runs = str(form.get("runs") or "")

    def start() -> str:
        started = judging.start(page.session, name, runs_given(runs), page.viewer)
        runs_text = "1 run" if started.runs == 1 else f"{started.runs} runs"
        return f"Final judging {started.id} started: {runs_text} of each entry queued."

    return acted(page, name, "runs", start, "judging", {"runs": runs})


@router.post("/competitions/{name}/review/judging/{decision}", response_model=None)
def decide_judging(
    name: str, decision: str, page: AdminPage, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    choices = {"publish": judging.publish, "discard": judging.discard}
    return decided(page, name, "judging", choices, decision, name, "judging", "Final judging")


@router.post("/competitions/{name}/review/disqualify", response_model=None)
def disqualify(name: str, page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    team = str(form.get("team") or "")
    reason = str(form.get("reason") or "")

    def act() -> str:
        said = DisqualifyRequest(reason=reason).reason
        found = service.disqualify(page.session, name, team, said, page.viewer)
        return f"Team {found.name} disqualified: {said}"

    return acted(page, name, "disqualify", act, "disqualify", {"team": team, "reason": reason})


@router.post("/competitions/{name}/review/rejudges", response_model=None)
def start_rejudge(name: str, page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    problem = str(form.get("problem") or "")
    status = str(form.get("status") or "")
    while_open = "while_open" in form

    def act() -> str:
        competition = service.get_competition(page.session, name)
        selection = rejudges.Selection(
            problem=problem or None,
            status=status or None,
            since=competition.opens_at if while_open else None,
            until=competition.closes_at if while_open else None,
        )
        started, count = rejudges.start(
            page.session, page.settings, selection, page.viewer, competition
        )
        return f"Rejudge {started.id} started: {count} submissions are graded again."

    values = {"problem": problem, "status": status, "while_open": "on" if while_open else ""}
    return acted(page, name, "rejudge", act, "rejudges", values)


@router.post("/competitions/{name}/review/rejudges/{rejudge_id}/{decision}", response_model=None)
def decide_rejudge(
    name: str, rejudge_id: RowId, decision: str, page: AdminPage, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    choices = {"apply": rejudges.apply, "discard": rejudges.discard}
    field = f"rejudge-{rejudge_id}"
    return decided(page, name, field, choices, decision, rejudge_id, "rejudge", "Rejudge")
