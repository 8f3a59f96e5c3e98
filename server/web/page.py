"""What every page handler gets: the request, the database session, the settings, the
signed-in user, and a way to render a template with the layout's context."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from markdown_it import MarkdownIt
from markupsafe import Markup

from server.client.errors import span
from server.client.figures import duration, per_call, percent, profiled_call
from server.db import session_scope
from server.deps import SessionDep, SettingsDep
from server.errors import Forbidden, NotAuthenticated
from server.models import User
from server.settings import Settings, get_settings
from server.web import notices
from server.web.sessions import CSRF_FIELD, csrf_token, signed_in_user

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

# CommonMark with raw HTML off: problem text cannot carry script or markup of its own, and
# markdown-it refuses javascript: and data: links by itself.
markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def render_markdown(text: str) -> Markup:
    return Markup(markdown.render(text))


def wait_time(seconds: object) -> str:
    """An expected wait for people: "about 40 s", "about 3 min", "under a second"."""
    if not isinstance(seconds, int | float) or not math.isfinite(seconds):
        return "—"
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {seconds:.0f} s"
    return f"about {seconds / 60:.0f} min"


def when(moment: datetime | None) -> str:
    return "—" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def iso(moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(UTC).isoformat()


templates = Jinja2Templates(directory=str(TEMPLATES))
templates.env.filters.update(
    markdown=render_markdown,
    duration=duration,
    wait_time=wait_time,
    percent=percent,
    per_call=per_call,
    profiled_call=profiled_call,
    when=when,
    iso=iso,
    span=span,
)


@dataclass
class Page:
    request: Request
    session: SessionDep
    settings: Settings
    viewer: User | None

    def render(self, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
        # A whole page shows what the last form left for it; a part of one (a template
        # named "_...", such as a polled result) leaves it for the next whole page.
        notice = None
        if self.viewer is not None and not Path(template).name.startswith("_"):
            notice = notices.take(self.request, self.session)
        return templates.TemplateResponse(
            self.request,
            template,
            {
                "viewer": self.viewer,
                "csrf_field": CSRF_FIELD,
                "csrf_token": LazyCsrfToken(self.request),
                "now": datetime.now(UTC),
                "notice": notice,
                **context,
            },
            status_code=status_code,
        )

    def redirect(self, url: str, notice: str = "", *, token: str | None = None) -> RedirectResponse:
        """After a form: "see other", so reloading the next page does not post again; that
        page shows ``notice`` (and ``token``, a new API token) this once."""
        if notice or token:
            notices.leave(self.request, self.session, notice, token=token)
        return RedirectResponse(url, status_code=303)


class LazyCsrfToken:
    """The session's CSRF token, made only when a template writes it into a form: a page
    with no form (an anonymous visitor's problem page) then sets no cookie, and one copy of
    it can serve every anonymous visitor (server/anonymous.py)."""

    def __init__(self, request: Request) -> None:
        self.request = request

    def __str__(self) -> str:
        return csrf_token(self.request)

    def __html__(self) -> str:
        return str(self)


def with_page(request: Request, render: Callable[..., Response], *args: Any) -> Response:
    """``render(page, *args)`` with a page of its own (a database session committed when it
    returns): for routes that do not take a PageDep, so that their fast path needs none."""
    with session_scope() as session:
        page = Page(request, session, get_settings(), session_user(request, session))
        return render(page, *args)


def session_user(request: Request, session: SessionDep) -> User | None:
    """The signed-in user, while the cookie's session is open; a banned user, an ended or an
    old session counts as signed out (and the cookie forgets its user)."""
    user = signed_in_user(request, session)
    if user is None:
        request.session.pop("user_id", None)
    return user


def get_page(request: Request, session: SessionDep, settings: SettingsDep) -> Page:
    return Page(request, session, settings, session_user(request, session))


def get_signed_in_page(page: Annotated[Page, Depends(get_page)]) -> Page:
    if page.viewer is None:
        raise NotAuthenticated("sign in to see this page")
    return page


def get_admin_page(page: Annotated[Page, Depends(get_signed_in_page)]) -> Page:
    assert page.viewer is not None
    if not page.viewer.is_admin:
        raise Forbidden("this page is for the organizers (admins) only")
    return page


PageDep = Annotated[Page, Depends(get_page)]
SignedInPage = Annotated[Page, Depends(get_signed_in_page)]
AdminPage = Annotated[Page, Depends(get_admin_page)]
