"""What an API token may do: its scopes, each route's scope, and its expiry.

A route asks for one scope: ``read`` for everything a signed-in user reads (and for a token
sent where none is needed), ``submit`` for what a competitor sends (submissions, batches,
teams), ``author`` for adding problems of one's own (an author's: a user an admin made
one), ``admin`` for the admin routes, which also need the user to be an admin. Only an
admin's token may be given ``admin``, and only an author's ``author``. A token past its
``expires_at`` is refused (401)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from enum import StrEnum

from server.errors import BadRequest, Forbidden, NotAuthenticated
from server.models import ApiToken, User

AUTHORS_ONLY = "only an author's token may have the author scope (an admin makes a user an author)"
# Days a token may be made to last at most (a longer life: no expiry).
MAX_EXPIRES_DAYS = 3650


class Scope(StrEnum):
    READ = "read"
    SUBMIT = "submit"
    AUTHOR = "author"
    ADMIN = "admin"


def default_for(user: User) -> list[Scope]:
    """A token's scopes when its maker chooses none: all its user may use (as every token
    made before scopes had)."""
    return [
        Scope.READ,
        Scope.SUBMIT,
        *([Scope.AUTHOR] if user.is_author else []),
        *([Scope.ADMIN] if user.is_admin else []),
    ]


def parse(names: Iterable[str], user: User) -> list[Scope]:
    """The scopes a user asked for a new token, in a fixed order; BadRequest for an unknown
    one or none, Forbidden for ``admin`` on a non-admin's token."""
    wanted = {name.strip().lower() for name in names if name.strip()}
    unknown = sorted(wanted - set(Scope))
    if unknown:
        raise BadRequest(f"unknown scope {unknown[0]!r}; choose among {', '.join(Scope)}")
    if not wanted:
        raise BadRequest(f"give a token at least one scope: {', '.join(Scope)}")
    if Scope.ADMIN in wanted and not user.is_admin:
        raise Forbidden("only an admin's token may have the admin scope")
    if Scope.AUTHOR in wanted and not user.is_author:
        raise Forbidden(AUTHORS_ONLY)
    return [scope for scope in Scope if scope in wanted]


def of(token: ApiToken) -> frozenset[Scope]:
    return frozenset(Scope(name) for name in token.scopes.split() if name in set(Scope))


def expiry(days: int | None, now: datetime) -> datetime | None:
    """When a token made now for ``days`` days expires (None: never)."""
    if days is None:
        return None
    if not 1 <= days <= MAX_EXPIRES_DAYS:
        raise BadRequest(f"a token lasts 1 to {MAX_EXPIRES_DAYS} days, or has no expiry")
    return now + timedelta(days=days)


def check(token: ApiToken, scope: Scope, now: datetime) -> None:
    """Refuse a token that expired (401) or lacks the scope the route asks for (403)."""
    if token.expires_at is not None and token.expires_at <= now:
        raise NotAuthenticated(
            f"the API token expired on {token.expires_at:%Y-%m-%d %H:%M} UTC; "
            "make a new one on your account page"
        )
    if scope == Scope.ADMIN and not token.user.is_admin:
        raise Forbidden("this needs an admin's token")
    if scope == Scope.AUTHOR and not token.user.is_author:
        raise Forbidden(AUTHORS_ONLY)
    if scope not in of(token):
        raise Forbidden(
            f"this token lacks the {scope.value!r} scope (it has: {token.scopes}); "
            "make a token with it on your account page"
        )
