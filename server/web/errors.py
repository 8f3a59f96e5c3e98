"""Error pages for browsers: a friendly page for 4xx and 500, and a redirect to log in."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import Request
from fastapi.responses import HTMLResponse, RedirectResponse

from server.db import session_scope
from server.web.page import session_user, templates
from server.web.sessions import CSRF_FIELD, csrf_token

TITLES = {
    400: "That request did not work",
    401: "Please log in",
    403: "Not allowed",
    404: "Page not found",
    405: "Not allowed here",
    409: "That clashes with something",
    413: "That is too large",
    422: "Something in that request is off",
    429: "Slow down a little",
    500: "Something went wrong on our side",
}


def wants_page(request: Request) -> bool:
    """A browser asking for a page, not an API client: never under /api/."""
    if request.url.path.startswith("/api/"):
        return False
    return "text/html" in request.headers.get("accept", "")


def to_login(request: Request) -> RedirectResponse:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"/login?next={quote(target, safe='/')}", status_code=303)


def error_page(request: Request, status_code: int, detail: str) -> HTMLResponse:
    """A 4xx page keeps the signed-in header; a 500 page is rendered without the database,
    which may be what failed."""
    context: dict[str, object] = {
        "status_code": status_code,
        "title": TITLES.get(status_code, "That did not work"),
        "detail": detail if status_code < 500 else "",
        "viewer": None,
    }
    if status_code < 500 and "session" in request.scope:
        with session_scope() as session:
            context["viewer"] = session_user(request, session)
        context.update(csrf_field=CSRF_FIELD, csrf_token=csrf_token(request))
    return templates.TemplateResponse(request, "error.html", context, status_code=status_code)
