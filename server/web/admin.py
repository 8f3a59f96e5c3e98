"""Admin pages: add problems (with the leaderboard's fate on a new version), follow and re-run
their validation, set their start time, deadline, visibility and difficulty, download their exports,
moderate submissions (hide, mark as hacked, re-run), moderate users (ban, make admin), make
and revoke invite codes, and read the audit log of all of these."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import UploadFile

from grader.problem import DIFFICULTIES
from grader.report import Mode, Status
from server.audit import service as audit
from server.deps import RowId
from server.errors import BadRequest, KernelJudgeError
from server.exports import service as exports
from server.exports.endpoints import download
from server.models import Problem, utcnow
from server.problems import service as problems
from server.problems import validation, versions
from server.submissions import service as submissions
from server.users import invites, resets
from server.users import service as users
from server.web.filters import EveryonesFilter
from server.web.page import AdminPage, Page
from server.web.sessions import PostedForm

router = APIRouter(prefix="/admin", include_in_schema=False)

# What the page after each moderation says was done.
SUBMISSION_ACTIONS_DONE = {
    "hide": "hidden",
    "unhide": "shown again",
    "hack": "marked as hacked",
    "unhack": "no longer marked as hacked",
    "rerun": "queued to be graded again",
}
USER_ACTIONS_DONE = {
    "ban": "banned",
    "unban": "unbanned",
    "make_admin": "is now an organizer",
    "revoke_admin": "is no longer an organizer",
    "make_author": "may now add problems of its own",
    "revoke_author": "may no longer add problems of its own",
}


@router.get("")
def admin_home(page: AdminPage) -> RedirectResponse:
    return page.redirect("/admin/problems")


def problem_states(page: Page, listed: Sequence[Problem]) -> dict[str, Any]:
    """What each problem's version and validation cells show: its current round, its staged
    version, its opening, and whether a device's report is still awaited (the page then
    polls the row's state)."""
    validations = {p.id: validation.current_round(page.session, p) for p in listed}
    return {
        "validations": validations,
        "staged": {p.id: versions.staged(p) for p in listed},
        "openings": problems.openings_of(page.session, listed),
        "waiting": {p.id: validation.waiting(validations[p.id]) for p in listed},
        "now": utcnow(),
    }


def render_problems(
    page: Page, errors: dict[str, str] | None = None, status_code: int = 200
) -> HTMLResponse:
    listed = problems.list_visible_problems(page.session, page.viewer)
    return page.render(
        "admin/problems.html",
        status_code=status_code,
        problems=listed,
        **problem_states(page, listed),
        leaderboard_choices=problems.LEADERBOARD_CHOICES,
        difficulties=DIFFICULTIES,
        device_types=problems.service_gpu_types(page.settings),
        # The organizers' latest choice, including device types still being validated.
        offered={p.id: problems.gpu_types_next(p, page.settings) for p in listed},
        errors=errors or {},
        section="problems",
        exports=[(table, fmt) for table in exports.TABLES for fmt in exports.FORMATS],
    )


@router.get("/problems", response_class=HTMLResponse)
def admin_problems(page: AdminPage) -> HTMLResponse:
    return render_problems(page)


@router.get("/problems/{name}/state", response_class=HTMLResponse)
def problem_state(name: str, page: AdminPage) -> HTMLResponse:
    """A problem's version and validation cells, polled by its row while a round waits for a
    device's report."""
    assert page.viewer is not None
    problem = problems.get_visible_problem(page.session, name, page.viewer)
    return page.render(
        "admin/_problem_state.html", problem=problem, **problem_states(page, [problem])
    )


@router.post("/problems", response_model=None)
def upload_problem(page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    """The same unpacking and loading as ``POST /api/v1/problems``."""
    assert page.viewer is not None
    upload = form.get("archive")
    name = str(form.get("name") or "").strip() or None
    leaderboard = str(form.get("leaderboard") or problems.CARRY_OVER)
    try:
        if not isinstance(upload, UploadFile) or not upload.filename:
            raise BadRequest("choose a .zip or .tar.gz of a problem folder")
        raw = upload.file.read(page.settings.max_archive_bytes + 1)
        opening = problems.Opening(
            hidden=True if "hidden" in form.getlist("visibility") else None,
            starts_at=parse_deadline(str(form.get("starts_at") or "")),
        )
        problem, created = problems.add_problem_from_archive(
            page.session,
            page.settings,
            raw,
            upload.filename,
            name,
            page.viewer,
            leaderboard,
            opening,
        )
    except KernelJudgeError as exc:
        return render_problems(page, errors={"archive": exc.detail}, status_code=exc.status_code)
    return page.redirect(f"/admin/problems#p-{problem.name}", upload_notice(problem, created))


def upload_notice(problem: Problem, created: bool) -> str:
    staged = versions.staged(problem)
    if staged is not None:
        return (
            f"Problem {problem.name} version {staged.version} is being validated; version "
            f"{problem.version} stays live until it passes."
        )
    verb = "added" if created else f"updated to version {problem.version}"
    states: dict[str, str] = {
        validation.VALIDATING: "; it goes live once validated",
        validation.INVALID: "; it is not offered on any device type here",
    }
    return f"Problem {problem.name} {verb}{states.get(problem.status, '')}."


@router.post("/problems/{name}", response_model=None)
def update_problem(name: str, page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    """Changes only the settings the form shows: a field it does not carry keeps its value
    (a checkbox is shown with a hidden "off" before it, as an unticked box sends nothing)."""
    assert page.viewer is not None
    problem = problems.get_visible_problem(page.session, name, page.viewer)
    attempt = problem.validation_attempt

    def ticked(field: str, current: bool) -> bool:
        return "on" in form.getlist(field) if field in form else current

    def moment(field: str, current: datetime | None) -> datetime | None:
        return parse_deadline(str(form.get(field) or "")) if field in form else current

    try:
        problems.update_settings(
            page.session,
            page.viewer,
            name,
            is_public=ticked("is_public", problem.is_public),
            deadline=moment("deadline", problem.deadline),
            code_public_after_deadline=ticked(
                "code_public_after_deadline", problem.code_public_after_deadline
            ),
            difficulty=(str(form.get("difficulty") or "") or None)
            if "difficulty" in form
            else problem.difficulty,
            starts_at=moment("starts_at", problem.starts_at),
            # The form lists the device types as checkboxes; a form without them keeps them.
            gpu_types=[str(g) for g in form.getlist("gpu_types")]
            if "gpu_types_listed" in form
            else None,
            settings=page.settings,
        )
    except BadRequest as exc:
        return render_problems(page, errors={name: exc.detail}, status_code=422)
    notice = f"Saved the settings of {name}."
    if problem.validation_attempt != attempt:
        notice += " Its new device types are being validated; it stays live meanwhile."
    return page.redirect(f"/admin/problems#p-{name}", notice)


@router.post("/problems/{name}/validate")
def validate_problem(name: str, page: AdminPage, form: PostedForm) -> RedirectResponse:
    """A new validation round for the problem's newest version (audited); a live problem
    keeps serving meanwhile."""
    assert page.viewer is not None
    problem = problems.rerun_validation(page.session, page.settings, name, page.viewer)
    version = versions.newest_version(problem)
    meanwhile: dict[str, str] = {
        validation.LIVE: f"; competitors keep version {problem.version} meanwhile",
        validation.VALIDATING: "; it goes live once validated",
    }
    meanwhile_text = meanwhile.get(problem.status, "")
    return page.redirect(
        f"/admin/problems#p-{problem.name}",
        f"Validating {problem.name} version {version} again{meanwhile_text}.",
    )


@router.get("/problems/{name}/export/{table}.{fmt}")
def export_problem(name: str, table: str, fmt: str, page: AdminPage) -> Response:
    """The same files as ``GET /api/v1/problems/{name}/export/...``, for a signed-in admin."""
    return download(exports.export(page.session, page.settings, name, table, fmt))


def parse_deadline(text: str) -> datetime | None:
    """A ``datetime-local`` value (a deadline or a start time), read as UTC (the page says
    so)."""
    if not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
        return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    except (ValueError, OverflowError) as exc:  # the second: a year-1 time east of UTC
        raise BadRequest(f"{text!r} is not a date and time (YYYY-MM-DDTHH:MM)") from exc


@router.get("/submissions", response_class=HTMLResponse)
def admin_submissions(page: AdminPage, narrowed: EveryonesFilter) -> HTMLResponse:
    """The newest 200, narrowed by the filter form's fields; a filter naming nothing there is
    is said above an empty list (404 or 422, as the API answers it)."""
    error, status_code = None, 200
    try:
        listed = submissions.list_recent(page.session, 200, narrowed)
    except KernelJudgeError as exc:
        listed, error, status_code = [], exc.detail, exc.status_code
    return page.render(
        "admin/submissions.html",
        status_code=status_code,
        submissions=listed,
        narrowed=narrowed,
        filter_error=error,
        statuses=[status.value for status in Status],
        modes=[mode.value for mode in Mode],
        problem_names=[p.name for p in problems.list_visible_problems(page.session, page.viewer)],
        reasons={
            s.id: submissions.moderation_reasons(page.session, s)
            for s in listed
            if s.is_hidden or s.is_hacked
        },
        section="submissions",
    )


@router.post("/submissions/{submission_id}")
def moderate_submission(
    submission_id: RowId, page: AdminPage, form: PostedForm
) -> RedirectResponse:
    action = str(form.get("action") or "")
    assert page.viewer is not None
    reason = str(form.get("reason") or "")
    submissions.moderate(page.session, submission_id, action, page.viewer, reason)
    done = SUBMISSION_ACTIONS_DONE.get(action, action)
    return page.redirect(
        f"/admin/submissions#s{submission_id}", f"Submission {submission_id} {done}."
    )


@router.get("/users", response_class=HTMLResponse)
def admin_users(page: AdminPage) -> HTMLResponse:
    listed = users.list_users(page.session)
    return page.render(
        "admin/users.html",
        users=listed,
        banned_reasons={
            u.id: "deleted their account"
            if users.is_deleted(page.session, u)
            else users.banned_reason(page.session, u)
            for u in listed
            if u.is_banned
        },
        # The code each user signed up with, where sign-up asked for one.
        invites_by_id={invite.id: invite for invite in invites.list_invites(page.session)},
        section="users",
    )


@router.post("/users/{user_id}")
def moderate_user(user_id: RowId, page: AdminPage, form: PostedForm) -> RedirectResponse:
    assert page.viewer is not None
    action = str(form.get("action") or "")
    reason = str(form.get("reason") or "")
    user = users.moderate_user(page.session, page.viewer, user_id, action, reason)
    done = USER_ACTIONS_DONE.get(action, action)
    return page.redirect(f"/admin/users#u{user_id}", f"{user.name} {done}.")


@router.post("/users/{user_id}/reset-link")
def reset_link(user_id: RowId, page: AdminPage, form: PostedForm) -> RedirectResponse:
    """A one-time link that sets the user's password, shown to the organizer this once, to
    hand over as they see fit (server/users/resets.py)."""
    assert page.viewer is not None
    user = users.get_user_by_id(page.session, user_id)
    key = resets.issue(page.session, page.viewer, user)
    link = f"{str(page.request.base_url).rstrip('/')}{resets.PATH}{key}"
    # The page opens at its top, where the link is shown under the notice that names it.
    return page.redirect(
        "/admin/users",
        f"A one-time link that sets a new password for {user.name} (it works for "
        f"{int(resets.LIFETIME.total_seconds() // 3600)} hours; any earlier one no longer "
        "does). It is shown this once:",
        token=link,
    )


def render_invites(
    page: Page,
    status_code: int = 200,
    values: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
) -> HTMLResponse:
    return page.render(
        "admin/invites.html",
        status_code=status_code,
        invites=invites.list_invites(page.session),
        state=invites.state,
        mode=page.settings.signup_mode,
        values=values or {},
        errors=errors or {},
        section="invites",
    )


@router.get("/invites", response_class=HTMLResponse)
def admin_invites(page: AdminPage) -> HTMLResponse:
    return render_invites(page)


@router.post("/invites", response_model=None)
def create_invite(page: AdminPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    values = {
        field: str(form.get(field) or "").strip() for field in ("uses", "expires_days", "note")
    }
    try:
        uses = int(values["uses"] or "1")
        expires_days = int(values["expires_days"]) if values["expires_days"] else None
    except ValueError:
        return render_invites(page, 422, values, {"form": "sign-ups and days are whole numbers"})
    try:
        invite = invites.create(
            page.session, page.viewer, uses=uses, expires_days=expires_days, note=values["note"]
        )
    except BadRequest as exc:
        page.session.rollback()
        return render_invites(page, 422, values, {"form": exc.detail})
    return page.redirect(f"/admin/invites#i{invite.id}", f"Invite code {invite.code} created.")


@router.post("/invites/{code}/revoke")
def revoke_invite(code: str, page: AdminPage, form: PostedForm) -> RedirectResponse:
    invite = invites.revoke(page.session, page.viewer, code)
    return page.redirect(f"/admin/invites#i{invite.id}", f"Invite code {invite.code} revoked.")


@router.get("/audit", response_class=HTMLResponse)
def admin_audit(
    page: AdminPage,
    number: int = Query(default=1, ge=1, le=audit.MAX_PAGE, alias="page"),
    per_page: int = Query(default=50, ge=1, le=audit.MAX_PER_PAGE),
) -> HTMLResponse:
    return page.render(
        "admin/audit.html", log=audit.list_page(page.session, number, per_page), section="audit"
    )
