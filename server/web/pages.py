"""Public pages: the problems, a problem, its leaderboards, submitting by form, watching a
submission grade, and a signed-in user's own submissions."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from markupsafe import Markup
from starlette.datastructures import FormData, UploadFile

from grader.problem import Problem as GraderProblem
from grader.report import Mode, Status
from server import anonymous, downloads
from server.cache import Lru
from server.client.figures import labels, progress_text
from server.deps import MAX_ROW_ID, RowId
from server.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    KernelJudgeError,
    NotFound,
    TooManyRequests,
)
from server.leaderboards import service as leaderboards
from server.models import Problem, Submission
from server.problems import baselines, bundle
from server.problems import service as problems
from server.problems.loaded import loaded
from server.submissions import disclosure, files, reports
from server.submissions import service as submissions
from server.submissions.schemas import ProgressOut
from server.web import judgement
from server.web.charts import best_score_chart
from server.web.filters import OwnFilter
from server.web.next_step import next_step
from server.web.page import (
    Page,
    PageDep,
    SignedInPage,
    duration,
    render_markdown,
    templates,
    with_page,
)
from server.web.sessions import PostedForm

router = APIRouter(include_in_schema=False)

LIVE_STATUSES = (Status.QUEUED, Status.RUNNING)
# The problem page shows the top of its leaderboard; the leaderboard page, this many.
PROBLEM_PAGE_ENTRIES = 10
LEADERBOARD_PAGE_ENTRIES = 1000
# My submissions shows this many a page.
MY_SUBMISSIONS_PAGE = 50

# Problems' folders as read, by name and content digest; their descriptions as HTML.
_descriptions: Lru[Markup] = Lru(64)
# Leaderboards' table rows as HTML (1,000 rows are about 700 kB).
_rows: Lru[Markup] = Lru(64)


@router.get("/", response_class=HTMLResponse)
def home(page: PageDep) -> HTMLResponse:
    counts = leaderboards.competitor_counts(page.session, page.viewer)
    rows = []
    for problem in problems.list_visible_problems(page.session, page.viewer):
        offered = problems.gpu_types_for(problem, page.settings)
        leader = None
        if offered:
            board = leaderboards.shown(page.session, problem, offered[0], None, page.viewer)
            top = board.page(0, 1)
            leader = top[0] if top else None
        rows.append(
            {
                "problem": problem,
                "summary": summary_line(problem.description),
                "gpus": offered,
                "leader": leader,
                "competitors": counts.get(problem.id, 0),
                "closed": problems.deadline_passed(problem),
                "started": problems.opened(page.session, problem),
            }
        )
    return page.render("home.html", rows=rows)


def summary_line(description: str) -> str:
    """The description's first paragraph, as plain text, for the problem list."""
    first = description.strip().split("\n\n", 1)[0]
    return " ".join(first.split()).lstrip("# ")


def leaderboard_context(
    page: Page,
    problem: Problem,
    gpu: str | None,
    version: int | None = None,
    *,
    shown: int,
    chart: bool,
) -> dict[str, Any]:
    """The top ``shown`` entries of a board, the viewer's own entry wherever it is, and the
    chart of records when asked for; all from the precomputed tables."""
    gpu_type = leaderboards.choose_gpu(problem, page.settings, gpu)
    standings = leaderboards.shown(page.session, problem, gpu_type, version, page.viewer)
    records = []
    if chart:
        records = leaderboards.records(
            page.session, problem, gpu_type, version, standings.frozen_at
        )
    return {
        "gpu": gpu_type,
        "gpus": problems.gpu_types_for(problem, page.settings),
        "entries": standings.page(0, shown),
        "rows": leaderboard_rows(standings, shown),
        "total": standings.total,
        "frozen_at": standings.frozen_at,
        "you": standings.entry_of(page.viewer),
        "chart": best_score_chart(records, datetime.now(UTC), duration),
        "version": version,
    }


def leaderboard_rows(standings: leaderboards.Standings, shown: int) -> Markup:
    """The table rows of the top ``shown`` entries, rendered once per board revision: they
    are most of a leaderboard's rendering, and the same for every viewer."""

    def render() -> Markup:
        template = templates.get_template("_leaderboard_rows.html")
        return Markup(
            template.render(
                entries=standings.page(0, shown),
                gpu=standings.key.gpu_type,
                baselines=leaderboards.baseline_rows(standings.baseline),
            )
        )

    return _rows.get_or_make((standings.key, shown), render)


def loaded_problem(problem: Problem) -> GraderProblem:
    return loaded(problem)


@router.get("/problems/{name}", response_class=HTMLResponse)
async def problem_page(
    name: str, request: Request, gpu: str | None = Query(default=None, max_length=32)
) -> Response:
    """Read by crowds during a competition: see server/anonymous.py."""
    return await anonymous.serve(request, lambda: with_page(request, render_problem, name, gpu))


def render_problem(page: Page, name: str, gpu: str | None) -> HTMLResponse:
    problem = leaderboards.readable_problem(page.session, name, page.viewer)
    loaded = loaded_problem(problem)
    offered = problems.gpu_types_for(problem, page.settings)
    return page.render(
        "problem.html",
        problem=problem,
        description=_descriptions.get_or_make(
            problem.description, lambda: render_markdown(problem.description)
        ),
        loaded=loaded,
        task_types=problem.files.get("task.py"),
        template_code=loaded.submission_template,
        closed=problems.deadline_passed(problem),
        started=problems.opened(page.session, problem),
        benchmarks_by_gpu=judgement.benchmarks_by_gpu(loaded, offered),
        standing=standing_of(page, problem, offered),
        **leaderboard_context(page, problem, gpu, shown=PROBLEM_PAGE_ENTRIES, chart=False),
    )


def standing_of(
    page: Page, problem: Problem, offered: list[str]
) -> list[tuple[str, leaderboards.Entry | None, int]]:
    """The viewer's rank and best score on each GPU type's live board (with its number of
    entries), from the precomputed leaderboards; nothing for an anonymous reader."""
    if page.viewer is None:
        return []
    rows = []
    for gpu_type in offered:
        board = leaderboards.shown(page.session, problem, gpu_type, None, page.viewer)
        rows.append((gpu_type, board.entry_of(page.viewer), board.total))
    return rows


@router.get("/problems/{name}/template")
def problem_template(name: str, page: PageDep) -> Response:
    problem = problems.get_visible_problem(page.session, name, page.viewer)
    template = loaded_problem(problem).submission_template
    if not template:
        raise NotFound(f"problem {name!r} has no submission template")
    return downloads.attachment(
        template, "text/x-python; charset=utf-8", f"{problem.name}_submission.py"
    )


@router.get("/problems/{name}/bundle")
def problem_bundle(name: str, page: PageDep) -> Response:
    """The API's bundle for the browser: the signed-in viewer's cookie decides what is
    visible, so an organizer downloads a hidden problem's bundle from its page too."""
    made = bundle.make(problems.get_visible_problem(page.session, name, page.viewer))
    return downloads.attachment(made.content, bundle.MEDIA_TYPE, made.filename)


@router.get("/leaderboards/{name}", response_class=HTMLResponse)
async def leaderboard_page(
    name: str,
    request: Request,
    gpu: str | None = Query(default=None, max_length=32),
    version: int | None = Query(default=None, ge=1),
) -> Response:
    """Read by crowds during a competition: see server/anonymous.py."""
    return await anonymous.serve(
        request, lambda: with_page(request, render_leaderboard, name, gpu, version)
    )


def render_leaderboard(page: Page, name: str, gpu: str | None, version: int | None) -> HTMLResponse:
    problem = leaderboards.readable_problem(page.session, name, page.viewer)
    return page.render(
        "leaderboard.html",
        problem=problem,
        archived_versions=leaderboards.archived_versions(page.session, problem),
        **leaderboard_context(
            page, problem, gpu, version, shown=LEADERBOARD_PAGE_ENTRIES, chart=True
        ),
    )


@router.get("/submit", response_class=HTMLResponse)
def submit_form(
    page: SignedInPage,
    problem: str | None = Query(default=None, max_length=100),
    edit: int | None = Query(default=None, ge=1, le=MAX_ROW_ID),
) -> HTMLResponse:
    """The form; ``edit``: filled in with that submission's code, problem, mode and GPU type."""
    if edit is not None:
        return render_submit(page, values_of(page, edit), {})
    return render_submit(page, {"problem": problem or "", "mode": "test", "gpu": ""}, {})


def values_of(page: Page, submission_id: int) -> dict[str, str]:
    """A submission as the submit form's fields, for a reader who may read its code; its
    mode test instead of a leaderboard mode the problem no longer takes."""
    submission = submissions.get_visible_submission(page.session, submission_id, page.viewer)
    if not submissions.can_see_code(page.session, page.viewer, submission):
        raise NotFound(f"no submission {submission_id}")
    mode = submission.mode
    if mode == Mode.LEADERBOARD and submissions.leaderboard_closed(
        page.session, submission.problem
    ):
        mode = Mode.TEST
    return {
        "problem": submission.problem.name,
        "mode": mode,
        "gpu": submission.gpu_type,
        "code": submission.code,
    }


def render_submit(
    page: Page, values: dict[str, str], errors: dict[str, str], status_code: int = 200
) -> HTMLResponse:
    visible = problems.list_visible_problems(page.session, page.viewer)
    gpus = {p.name: problems.gpu_types_for(p, page.settings) for p in visible}
    return page.render(
        "submit.html",
        status_code=status_code,
        problems=visible,
        gpus_by_problem=gpus,
        # The editor starts from the chosen problem's template (server/web/editor).
        templates_by_problem={p.name: loaded_problem(p).submission_template for p in visible},
        all_gpus=sorted({gpu for offered in gpus.values() for gpu in offered}),
        modes=submissions.MODES,
        # Why a problem takes no leaderboard-mode run now, by name: the form leaves the mode
        # out for it and says why (site.js follows the chosen problem).
        leaderboard_closed=leaderboard_closed_by_name(page, visible),
        values=values,
        errors=errors,
        # A fresh one each time the form is shown: the same form posted twice is one
        # submission; a form shown again (after an error) is a new attempt.
        idempotency_key=uuid.uuid4().hex,
    )


def leaderboard_closed_by_name(page: Page, visible: Sequence[Problem]) -> dict[str, str]:
    closed = {p.name: submissions.leaderboard_closed(page.session, p) for p in visible}
    return {name: reason for name, reason in closed.items() if reason is not None}


@router.post("/submit", response_model=None)
def submit(page: SignedInPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    """The REST API's validation, step by step, so each error lands next to its field. The
    form carries an idempotency key of its own, so posting it twice (a double click, a
    reload) makes one submission."""
    assert page.viewer is not None
    values = {key: str(form.get(key) or "") for key in ("problem", "mode", "gpu", "code")}
    errors: dict[str, str] = {}
    code = values["code"]
    upload = form.get("file")
    try:
        if isinstance(upload, UploadFile) and upload.filename:
            if code.strip():
                raise BadRequest(
                    "choose a file or paste code, not both: which one did you mean to submit?"
                )
            code = submissions.decode_code(
                upload.file.read(page.settings.max_code_bytes + 1), page.settings
            )
        else:
            submissions.validate_code(code, page.settings)
    except KernelJudgeError as exc:
        errors["code"] = exc.detail
    problem = None
    try:
        problem = problems.get_visible_problem(page.session, values["problem"], page.viewer)
    except NotFound:
        errors["problem"] = "choose a problem"
    if values["mode"] not in submissions.MODES:
        errors["mode"] = f"choose one of {', '.join(submissions.MODES)}"
    elif problem is not None and values["mode"] == Mode.LEADERBOARD:
        closed = submissions.leaderboard_closed(page.session, problem)
        if closed is not None:
            errors["mode"] = closed
    if problem is not None:
        try:
            problems.choose_gpu_type(problem, page.settings, values["gpu"] or None)
        except KernelJudgeError as exc:
            errors["gpu"] = exc.detail
    if not errors:
        try:
            submission = submitted(page, form, {**values, "code": code})
        except (Forbidden, Conflict, BadRequest) as exc:
            errors["form"] = exc.detail
        except TooManyRequests as exc:
            values["code"] = code
            response = render_submit(page, values, {"form": exc.detail}, status_code=429)
            response.headers.update(exc.headers)
            return response
    if errors:
        values["code"] = code
        return render_submit(page, values, errors, status_code=422)
    return page.redirect(f"/submissions/{submission.id}")


def submitted(page: Page, form: FormData, values: dict[str, str]) -> Submission:
    """The submission the submit form's values ask for (no GPU type: the problem's choice),
    made once for the form's idempotency key."""
    assert page.viewer is not None
    submission, _ = submissions.create_submission(
        page.session,
        page.settings,
        page.viewer,
        problem_name=values["problem"],
        code=values["code"],
        mode=values["mode"],
        gpu=values["gpu"] or None,
        idempotency_key=str(form.get("idempotency_key") or "")[:200] or None,
    )
    return submission


def submission_context(page: Page, submission: Submission) -> dict[str, Any]:
    report = reports.stored(submission)
    show_code = submissions.can_see_code(page.session, page.viewer, submission)
    shown = disclosure.disclose(page.viewer, submission, report, code_visible=show_code)
    warm_inputs = report is not None and report.timed_on_warm_inputs
    progress = submissions.progress_of(submission)
    shown_progress = ProgressOut.of(
        progress and disclosure.progress_shown(page.viewer, submission, progress)
    )
    return {
        "submission": submission,
        # While it runs: what its grading is doing, and for how long (ticking in site.js).
        "progress": progress_text(shown_progress.model_dump() if shown_progress else None),
        "running_s": (
            (datetime.now(UTC) - submission.started_at).total_seconds()
            if submission.started_at is not None
            else 0.0
        ),
        "report": report,
        "shown": shown,
        "live": submission.status in LIVE_STATUSES,
        "wait": submissions.queue_wait(page.session, submission),
        "show_code": show_code,
        # Verdicts re-runs replaced, oldest first, each message as this viewer may read it.
        "history": [
            (
                earlier,
                disclosure.disclose_earlier(
                    page.viewer,
                    submission,
                    earlier,
                    reports.stored_earlier(submission, earlier),
                    code_visible=show_code,
                ),
            )
            for earlier in submissions.earlier_verdicts(page.session, submission)
        ],
        # The organizers' reasons for hiding it or marking it hacked: its author's and theirs.
        "reasons": submissions.moderation_reasons(page.session, submission)
        if page.viewer is not None
        and (page.viewer.is_admin or page.viewer.id == submission.user_id)
        else None,
        "sol_fraction": report.sol_fraction if report is not None else None,
        "speedup": baselines.speedup_of(page.session, submission),
        "judged": judgement.judge(
            shown.cases, scored=submission.score is not None, warm_inputs=warm_inputs
        ),
        "case_labels": labels(case.kind for case in shown.cases),
        "case_notes": case_notes(shown),
        "logs": [
            (name, text)
            for name, text in (("stdout", shown.stdout), ("stderr", shown.stderr))
            # An error's message is often the traceback its stderr holds: shown once.
            if text.strip() and text.strip() not in shown.message
        ],
        "withheld_note": withheld_note(submission, shown, show_code=show_code),
        "warm_inputs": warm_inputs,
        "next_step": next_step(page.session, page.settings, submission, page.viewer),
        # A fresh one each time the page is shown, as the submit form's.
        "idempotency_key": uuid.uuid4().hex,
    }


def case_notes(shown: disclosure.DisclosedReport) -> list[str]:
    """Each case's message as its row shows it: none where the message is the verdict's
    own, or where it only says the details are withheld (the page says that once)."""
    placeholders = {disclosure.WITHHELD, disclosure.PRIVATE, shown.message.strip()}
    return [
        "" if not case.message or case.message.strip() in placeholders else case.message
        for case in shown.cases
    ]


def withheld_note(
    submission: Submission, shown: disclosure.DisclosedReport, *, show_code: bool
) -> str:
    """Once, under a leaderboard-mode run its author reads, unless its verdict says it."""
    if (
        submission.mode != Mode.LEADERBOARD
        or not shown.withheld
        or not show_code
        or submission.status in LIVE_STATUSES
        or disclosure.WITHHELD in shown.message
    ):
        return ""
    return (
        "Output and error details of a leaderboard-mode run are withheld: the ranked inputs "
        "stay secret. Submit the same code in test or benchmark mode to see them."
    )


@router.get("/submissions/mine", response_class=HTMLResponse)
def my_submissions(
    page: SignedInPage,
    narrowed: OwnFilter,
    before: int | None = Query(default=None, ge=1, le=MAX_ROW_ID),
) -> HTMLResponse:
    """The viewer's own submissions, newest first, a page at a time, narrowed by the filter
    form's fields as the API narrows them; a filter naming nothing there is is said above an
    empty list (404 or 422, as the API answers it)."""
    assert page.viewer is not None
    error, status_code = None, 200
    try:
        listed = submissions.list_own(
            page.session, page.viewer, narrowed, before=before, limit=MY_SUBMISSIONS_PAGE
        )
    except KernelJudgeError as exc:
        listed, error, status_code = [], exc.detail, exc.status_code
    older = listed[-1].id if len(listed) == MY_SUBMISSIONS_PAGE else None
    return page.render(
        "my_submissions.html",
        status_code=status_code,
        submissions=listed,
        narrowed=narrowed,
        filter_error=error,
        paged=before is not None,
        # The next page: these filters, older than the last id shown; and back to the first.
        older_href=my_submissions_href(narrowed, older) if older else None,
        newest_href=my_submissions_href(narrowed) if before is not None else None,
        problem_names=[p.name for p in problems.list_visible_problems(page.session, page.viewer)],
        statuses=[status.value for status in Status],
        modes=[mode.value for mode in Mode],
    )


def my_submissions_href(narrowed: submissions.SubmissionFilter, before: int | None = None) -> str:
    fields = {"problem": narrowed.problem, "status": narrowed.status, "mode": narrowed.mode}
    query = urlencode(
        {key: value for key, value in {**fields, "before": before}.items() if value is not None}
    )
    return f"/submissions/mine?{query}" if query else "/submissions/mine"


@router.get("/submissions/{submission_id}", response_class=HTMLResponse)
def submission_page(submission_id: RowId, page: PageDep) -> HTMLResponse:
    submission = submissions.get_visible_submission(page.session, submission_id, page.viewer)
    return page.render("submission.html", **submission_context(page, submission))


@router.get("/submissions/{submission_id}/live", response_class=HTMLResponse)
def submission_live(submission_id: RowId, page: PageDep) -> HTMLResponse:
    """The status and results part of the submission page, polled while it grades."""
    submission = submissions.get_visible_submission(page.session, submission_id, page.viewer)
    return page.render("_submission_result.html", **submission_context(page, submission))


@router.post("/submissions/{submission_id}/resubmit", response_model=None)
def resubmit(
    submission_id: RowId, page: SignedInPage, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    """The same code again in another mode, from its author's result page (next_step.py);
    refused, the submit form filled in with it says why."""
    assert page.viewer is not None
    submission = submissions.get_visible_submission(page.session, submission_id, page.viewer)
    if submission.user_id != page.viewer.id:
        raise NotFound(f"no submission {submission_id} of yours")
    values = {
        "problem": submission.problem.name,
        "mode": str(form.get("mode") or ""),
        "gpu": submission.gpu_type,
        "code": submission.code,
    }
    try:
        made = submitted(page, form, values)
    except KernelJudgeError as exc:
        response = render_submit(page, values, {"form": exc.detail}, exc.status_code)
        response.headers.update(exc.headers)
        return response
    return page.redirect(f"/submissions/{made.id}")


@router.get("/submissions/{submission_id}/files/{name}")
def submission_file(submission_id: RowId, name: str, page: PageDep) -> Response:
    """The API's file download for the browser, where the signed-in viewer's cookie
    decides who may read it (the API reads tokens only)."""
    found = files.readable_file(page.session, submission_id, name, page.viewer)
    return Response(
        found.content,
        media_type=files.MEDIA_TYPE,
        headers=files.download_headers(found),
    )
