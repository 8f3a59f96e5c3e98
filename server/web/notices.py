"""What the page after a form tells the browser that posted it ("Saved.", a new API token
shown once): kept with the browser's session on the server and shown by the next full page
it opens, so a form that creates something can answer with a redirect and a reload makes
nothing twice. A new token is kept split in two: the database holds it masked, the signed
cookie the mask, so neither alone reads it, and both go once it has been shown."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, field
from datetime import timedelta

from fastapi import Request
from sqlalchemy.orm import Session

from server.users import service as users
from server.web.sessions import SESSION_KEY, SESSION_MAX_AGE_S

# Cookie keys: that the server keeps a notice for this browser, and a new token's mask.
WAITING = "notice"
MASK = "notice_mask"
MAX_AGE = timedelta(seconds=SESSION_MAX_AGE_S)


@dataclass(frozen=True)
class Notice:
    texts: list[str] = field(default_factory=list)
    token: str | None = None


def leave(request: Request, session: Session, text: str = "", *, token: str | None = None) -> None:
    """Keep a notice (and a new token) for the next page this signed-in browser opens."""
    masked = None
    if token is not None:
        mask = secrets.token_bytes(len(token.encode()))
        masked = base64.urlsafe_b64encode(_xor(token.encode(), mask)).decode()
        request.session[MASK] = base64.urlsafe_b64encode(mask).decode()
    notice = {"texts": [text] if text else [], "token": masked}
    if users.leave_notice(session, request.session.get(SESSION_KEY), MAX_AGE, notice):
        request.session[WAITING] = True


def take(request: Request, session: Session) -> Notice | None:
    """The notice kept for this browser, once: it is gone afterwards."""
    if not request.session.pop(WAITING, None):
        return None
    mask = request.session.pop(MASK, None)
    held = users.take_notice(session, request.session.get(SESSION_KEY), MAX_AGE)
    if held is None:
        return None
    token = None
    if isinstance(held.get("token"), str) and isinstance(mask, str):
        masked, key = base64.urlsafe_b64decode(held["token"]), base64.urlsafe_b64decode(mask)
        if len(masked) == len(key):
            token = _xor(masked, key).decode(errors="replace")
    return Notice(texts=[str(text) for text in held.get("texts", [])], token=token)


def _xor(data: bytes, mask: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, mask, strict=True))
