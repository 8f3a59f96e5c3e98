"""Request dependencies: the database session, the settings and the authenticated user."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, TypeVar

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from server.db import session_scope
from server.errors import Forbidden, NotAuthenticated
from server.models import User
from server.settings import Settings, get_settings
from server.users.scopes import Scope
from server.users.service import authenticate

# The largest id a row may have (the id columns are PostgreSQL integers): a larger one in
# a URL is refused with 422 instead of overflowing in the database.
MAX_ROW_ID = 2**31 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]

bearer = HTTPBearer(auto_error=False, description="an API token from `kerneljudge user add`")


def get_session() -> Iterator[Session]:
    """One session per request: committed when the route returns, rolled back on error."""
    with session_scope() as session:
        yield session


# Committed before the response is sent: a client acting on the response (following a
# redirect after signing in, using a token it was just shown) must find the rows written.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def get_optional_user(session: SessionDep, credentials: Credentials) -> User | None:
    if credentials is None:
        return None
    return authenticate(session, credentials.credentials)


async def require_token(credentials: Credentials) -> HTTPAuthorizationCredentials:
    """A token was sent (it is looked up by whoever needs its user)."""
    if credentials is None:
        raise NotAuthenticated("send an API token: 'Authorization: Bearer TOKEN'")
    return credentials


TokenCredentials = Annotated[HTTPAuthorizationCredentials, Depends(require_token)]


def get_current_user(session: SessionDep, credentials: TokenCredentials) -> User:
    return authenticate(session, credentials.credentials, Scope.READ)


def get_submitting_user(session: SessionDep, credentials: TokenCredentials) -> User:
    """The user of a token with the ``submit`` scope: for what a competitor sends."""
    return authenticate(session, credentials.credentials, Scope.SUBMIT)


T = TypeVar("T")


async def as_token_user(
    credentials: HTTPAuthorizationCredentials,
    work: Callable[[Session, User], T],
    scope: Scope = Scope.READ,
) -> T:
    """`work` for the token's user, in one unit of work committed before it returns, on one
    thread of the pool: what SessionDep and CurrentUser do, for the routes a client polls
    and submits to, without a thread for each (a request waiting for a thread between them
    would hold its open transaction meanwhile)."""

    def unit_of_work() -> T:
        with session_scope() as session:
            return work(session, authenticate(session, credentials.credentials, scope))

    return await run_in_threadpool(unit_of_work)


def get_admin_user(session: SessionDep, credentials: TokenCredentials) -> User:
    user = authenticate(session, credentials.credentials, Scope.ADMIN)
    if not user.is_admin:
        raise Forbidden("this needs an admin's token")
    return user


@dataclass(frozen=True)
class ProblemAdder:
    """Who adds a problem: an admin through a token with the ``admin`` scope (an organizer's
    problem), or an author through one with the ``author`` scope (its own, private to it)."""

    user: User
    as_author: bool


def get_problem_adder(session: SessionDep, credentials: TokenCredentials) -> ProblemAdder:
    try:
        return ProblemAdder(get_admin_user(session, credentials), as_author=False)
    except Forbidden:
        pass
    # A ban is said as such; a user who is no author is told what it would take.
    user = authenticate(session, credentials.credentials, Scope.READ)
    if not user.is_author:
        raise Forbidden(
            "adding a problem needs an admin's token, or an author's with the author scope "
            "(an admin makes a user an author)"
        )
    return ProblemAdder(authenticate(session, credentials.credentials, Scope.AUTHOR), True)


OptionalUser = Annotated[User | None, Depends(get_optional_user)]
CurrentUser = Annotated[User, Depends(get_current_user)]
SubmittingUser = Annotated[User, Depends(get_submitting_user)]
AdminUser = Annotated[User, Depends(get_admin_user)]
Adder = Annotated[ProblemAdder, Depends(get_problem_adder)]


def client_address(request: Request) -> str:
    """The address a failed log-in is counted against."""
    return request.client.host if request.client else "unknown"
