"""Account pages: sign up, log in, log out, a user's submissions, API tokens, a new
password and deleting the account."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from server.deps import RowId, client_address
from server.errors import (
    BadRequest,
    Forbidden,
    KernelJudgeError,
    NotAuthenticated,
    NotFound,
    TooManyRequests,
)
from server.submissions import service as submissions
from server.users import accounts, mail, resets, scopes, verification
from server.users import service as users
from server.users import signup as signups
from server.web.page import Page, PageDep, SignedInPage
from server.web.sessions import SESSION_KEY, PostedForm, sign_in, sign_out

router = APIRouter(include_in_schema=False)


def safe_next(target: str | None) -> str:
    """Only paths on this site: an open redirect would let a link log someone in elsewhere."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


def login_url(next_path: str) -> str:
    return f"/login?next={quote(next_path, safe='/')}"


@router.get("/signup", response_class=HTMLResponse)
def signup_form(
    page: PageDep,
    next: str | None = Query(default=None),
    invite: str | None = Query(default=None, max_length=64),
) -> HTMLResponse:
    return render_signup(page, {"invite": invite or ""}, {}, safe_next(next))


def render_signup(
    page: Page,
    values: dict[str, str],
    errors: dict[str, str],
    next_path: str,
    status_code: int = 200,
) -> HTMLResponse:
    """The sign-up form as the site's mode asks for it (server/users/signup.py)."""
    settings = page.settings
    return page.render(
        "signup.html",
        status_code=status_code,
        values=values,
        errors=errors,
        next=next_path,
        mode=settings.signup_mode,
        domains=settings.signup_email_domains,
    )


@router.post("/signup", response_model=None)
def signup(request: Request, page: PageDep, form: PostedForm) -> HTMLResponse | RedirectResponse:
    values = {
        field: str(form.get(field) or "").strip()[:254] for field in ("name", "invite", "email")
    }
    password = str(form.get("password") or "")
    next_path = safe_next(str(form.get("next") or ""))
    try:
        user = signups.sign_up(
            page.session,
            page.settings,
            name=values["name"],
            password=password,
            password_again=str(form.get("password_again") or ""),
            invite_code=values["invite"],
            email=values["email"],
            base_url=str(request.base_url),
        )
    except signups.SignUpRefused as exc:
        page.session.rollback()  # no account, no invite's use, no link
        return render_signup(page, values, exc.errors, next_path, 422)
    sign_in(request, page.session, user)
    if not user.is_verified:
        return page.redirect(
            f"/users/{quote(user.name)}#email",
            f"Welcome! A link is on its way to {user.email}: follow it to verify your address, "
            "and then you can submit.",
        )
    return page.redirect(
        next_path,
        f"Welcome, {user.name}! Open a problem, read its task and send its template in test "
        "mode for a first result in seconds; My submissions keeps every run.",
    )


@router.get("/login", response_class=HTMLResponse)
def login_form(
    page: PageDep,
    next: str | None = Query(default=None),
    done: str | None = Query(default=None, max_length=16),
) -> HTMLResponse:
    message = {
        "reset": "Your new password is set; log in with it.",
        "deleted": "Your account is deleted.",
    }.get(done or "", "")
    return page.render(
        "login.html",
        values={},
        errors={},
        next=safe_next(next),
        message=message,
        mail_enabled=mail.enabled(page.settings),
    )


@router.get("/forgot", response_class=HTMLResponse)
def forgot_form(page: PageDep) -> HTMLResponse:
    return page.render("forgot.html", sent=False, mail_enabled=mail.enabled(page.settings))


@router.post("/forgot", response_class=HTMLResponse)
def forgot(request: Request, page: PageDep, form: PostedForm) -> HTMLResponse:
    """The same answer whatever the name: it tells no one which accounts exist."""
    if not mail.enabled(page.settings):
        return page.render("forgot.html", status_code=404, sent=False, mail_enabled=False)
    name = str(form.get("name") or "")[:64]
    mail.send_link(page.session, page.settings, name, str(request.base_url))
    return page.render("forgot.html", sent=True, mail_enabled=True)


@router.post("/account/email")
def save_email(page: SignedInPage, form: PostedForm) -> RedirectResponse:
    assert page.viewer is not None
    text = str(form.get("email") or "")
    # An account waiting to be verified keeps an address that sign-up would take.
    if page.viewer.is_verified:
        address = mail.checked_address(text)
    else:
        address = verification.checked_address(page.settings, text)
    page.viewer.email = address
    said = f"Password-reset mail goes to {address}." if address else "No email address kept."
    return page.redirect(f"/users/{quote(page.viewer.name)}#email", said)


@router.post("/account/verify")
def resend_verification(request: Request, page: SignedInPage, form: PostedForm) -> RedirectResponse:
    """Mail a new link that verifies the account's address (the older ones stop working)."""
    assert page.viewer is not None
    name = page.viewer.name
    try:
        verification.send_link(page.session, page.settings, page.viewer, str(request.base_url))
    except (BadRequest, TooManyRequests) as exc:
        page.session.rollback()  # no mail went: no new link either
        return page.redirect(
            f"/users/{quote(name)}#email", exc.detail[:1].upper() + exc.detail[1:] + "."
        )
    return page.redirect(
        f"/users/{quote(name)}#email", f"A new link is on its way to {page.viewer.email}."
    )


@router.get("/verify/{key}", response_class=HTMLResponse)
def verify_email(key: str, page: PageDep) -> HTMLResponse:
    """A mailed link that verifies an account's address, or why it no longer works (410)."""
    user = verification.verify(page.session, key)
    if user is None:
        return page.render("verify.html", status_code=410, user=None, gone=verification.GONE)
    return page.render("verify.html", user=user, gone="")


@router.get("/reset/{key}", response_class=HTMLResponse)
def reset_form(key: str, page: PageDep) -> HTMLResponse:
    """An organizer's one-time link: the form for a new password, or why it no longer works
    (410)."""
    reset = resets.open_reset(page.session, key)
    if reset is None:
        return page.render("reset.html", status_code=410, user=None, gone=resets.GONE)
    return page.render("reset.html", user=reset.user, key=key, errors={})


@router.post("/reset/{key}", response_model=None)
def reset_password(
    key: str, request: Request, page: PageDep, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    reset = resets.open_reset(page.session, key)
    if reset is None:
        return page.render("reset.html", status_code=410, user=None, gone=resets.GONE)
    password = str(form.get("password") or "")
    errors: dict[str, str] = {}
    if password != str(form.get("password_again") or ""):
        errors["password_again"] = "the two passwords differ"
    else:
        try:
            resets.redeem(page.session, key, password)
        except BadRequest as exc:
            errors["password"] = exc.detail
    if errors:
        return page.render("reset.html", status_code=422, user=reset.user, key=key, errors=errors)
    sign_out(request, page.session)
    return page.redirect("/login?done=reset")


@router.post("/login", response_model=None)
def login(request: Request, page: PageDep, form: PostedForm) -> HTMLResponse | RedirectResponse:
    name = str(form.get("name") or "").strip()
    next_path = safe_next(str(form.get("next") or ""))
    try:
        user = users.log_in(
            page.session,
            page.settings,
            name,
            str(form.get("password") or ""),
            client_address(request),
        )
    except (NotAuthenticated, Forbidden, TooManyRequests) as exc:
        # The failure must be recorded even though the page reports an error.
        page.session.commit()
        return page.render(
            "login.html",
            status_code=exc.status_code,
            values={"name": name},
            errors={"form": exc.detail},
            next=next_path,
        )
    sign_in(request, page.session, user)
    return page.redirect(next_path)


@router.post("/logout")
def logout(request: Request, page: PageDep, form: PostedForm) -> RedirectResponse:
    sign_out(request, page.session)
    return page.redirect("/")


@router.post("/account/sessions/end")
def log_out_everywhere(request: Request, page: SignedInPage, form: PostedForm) -> RedirectResponse:
    """Every browser signed in as this user is signed out, this one too."""
    assert page.viewer is not None
    users.end_all_web_sessions(page.session, page.viewer)
    request.session.clear()
    return page.redirect("/login")


@router.get("/account")
def account(page: SignedInPage) -> RedirectResponse:
    assert page.viewer is not None
    return page.redirect(f"/users/{quote(page.viewer.name)}")


def render_user(
    page: Page, name: str, status_code: int = 200, errors: dict[str, str] | None = None
) -> HTMLResponse:
    """A user's page; on your own, its forms, with ``errors`` by field after a refused one."""
    user = users.get_user(page.session, name)
    if user.is_banned and not (page.viewer and page.viewer.is_admin):
        raise NotFound(f"no user named {name!r}")
    own = page.viewer is not None and page.viewer.id == user.id
    return page.render(
        "user.html",
        status_code=status_code,
        errors=errors or {},
        scopes=list(scopes.Scope),
        user=user,
        deleted=users.is_deleted(page.session, user),
        own=own,
        submissions=submissions.list_for_user(page.session, user, page.viewer),
        # Problems whose test and benchmark runs only the author and organizers see now.
        private=submissions.private_problem_ids(page.session),
        tokens=users.list_tokens(page.session, user) if own else [],
        mail_enabled=mail.enabled(page.settings),
    )


@router.get("/users/{name}", response_class=HTMLResponse)
def user_page(name: str, page: PageDep) -> HTMLResponse:
    return render_user(page, name)


@router.post("/account/tokens", response_model=None)
def create_token(page: SignedInPage, form: PostedForm) -> HTMLResponse | RedirectResponse:
    """Shown on the page after this once (reloading that page mints no other); only its
    hash is kept."""
    assert page.viewer is not None
    label = str(form.get("label") or "").strip()[:100] or "web"
    days = str(form.get("expires_days") or "").strip()
    try:
        if days and not days.isdigit():
            raise BadRequest("the expiry is a whole number of days, or empty for none")
        token = users.issue_token(
            page.session,
            page.viewer,
            label=label,
            scope_names=[str(name) for name in form.getlist("scope")],
            expires_days=int(days) if days else None,
        )
    except KernelJudgeError as exc:
        return render_user(page, page.viewer.name, exc.status_code, {"tokens": exc.detail})
    return page.redirect(f"/users/{quote(page.viewer.name)}#tokens", token=token)


@router.post("/account/tokens/{token_id}/revoke")
def revoke_token(token_id: RowId, page: SignedInPage, form: PostedForm) -> RedirectResponse:
    assert page.viewer is not None
    users.revoke_token(page.session, page.viewer, token_id)
    return page.redirect(f"/users/{quote(page.viewer.name)}#tokens", "Token revoked.")


@router.post("/account/password", response_model=None)
def change_password(
    request: Request, page: SignedInPage, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    """This browser stays signed in; every other one is signed out."""
    assert page.viewer is not None
    new = str(form.get("password") or "")
    errors: dict[str, str] = {}
    status = 422
    if new != str(form.get("password_again") or ""):
        errors["password_again"] = "the two passwords differ"
    else:
        try:
            accounts.change_password(
                page.session,
                page.settings,
                page.viewer,
                str(form.get("current_password") or ""),
                new,
                client_address(request),
                keep_web_session=request.session.get(SESSION_KEY),
            )
        except (Forbidden, TooManyRequests) as exc:
            page.session.commit()  # the wrong password counts as a failed log-in
            errors["current_password"], status = exc.detail, exc.status_code
        except BadRequest as exc:
            errors["password"] = exc.detail
    if errors:
        return render_user(page, page.viewer.name, status, errors)
    return page.redirect(
        f"/users/{quote(page.viewer.name)}#change-password",
        "Password changed; your other browsers are signed out.",
    )


@router.post("/account/delete", response_model=None)
def delete_account(
    request: Request, page: SignedInPage, form: PostedForm
) -> HTMLResponse | RedirectResponse:
    assert page.viewer is not None
    try:
        accounts.delete_account(
            page.session,
            page.settings,
            page.viewer,
            str(form.get("password") or ""),
            client_address(request),
        )
    except (Forbidden, TooManyRequests) as exc:
        page.session.commit()  # the wrong password counts as a failed log-in
        return render_user(page, page.viewer.name, exc.status_code, {"delete": exc.detail})
    except KernelJudgeError as exc:
        return render_user(page, page.viewer.name, exc.status_code, {"delete": exc.detail})
    request.session.clear()
    return page.redirect("/login?done=deleted")
