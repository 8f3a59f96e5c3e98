"""Routes: a problem's leaderboard per device type, a page at a time, with an ETag."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request, Response
from sqlalchemy.orm import Session

from server import anonymous
from server.cache import Lru
from server.db import session_scope
from server.deps import MAX_ROW_ID, Credentials
from server.errors import BadRequest, NotFound, responses
from server.leaderboards import service
from server.leaderboards.schemas import Leaderboard, LeaderboardEntry
from server.leaderboards.service import Entry, Standings
from server.models import Problem, User
from server.settings import get_settings
from server.users.service import authenticate

router = APIRouter(prefix="/api/v1/leaderboards", tags=["leaderboards"])

MAX_LIMIT = 1000

IfNoneMatch = Annotated[
    str | None,
    Header(
        alias="If-None-Match",
        description="the ETag of a response you hold: 304 with no body while it is current",
    ),
]

CACHE_HEADERS = {
    "ETag": {
        "description": "changes whenever the leaderboard, the page or the caller's entry does",
        "schema": {"type": "string"},
    },
    "Cache-Control": {
        "description": "`no-cache`: keep the response, but ask again with If-None-Match",
        "schema": {"type": "string"},
    },
}
CACHING: dict[int | str, dict[str, Any]] = {
    200: {"headers": CACHE_HEADERS},
    304: {
        "description": "Not Modified: the leaderboard is as it was in the response whose ETag "
        "was sent in If-None-Match",
        "headers": CACHE_HEADERS,
    },
}


@dataclass(frozen=True)
class Rendered:
    """One page of one revision of a board, ready to send to anyone without an entry."""

    board: Leaderboard
    body: bytes


# Pages rendered recently (a page of 1,000 entries is about 200 kB).
_rendered: Lru[Rendered] = Lru(128)


@router.get(
    "/{problem}",
    response_model=Leaderboard,
    responses={**CACHING, **responses(BadRequest, NotFound)},
    summary="Each user's best passing leaderboard-mode score, best first",
)
async def read_leaderboard(
    problem: str,
    request: Request,
    credentials: Credentials,
    if_none_match: IfNoneMatch = None,
    gpu: str | None = Query(default=None, max_length=32, description="device type"),
    version: int | None = Query(
        default=None,
        ge=1,
        description="one version's leaderboard (e.g. one an update archived); "
        "default: the live leaderboard",
    ),
    limit: int = Query(default=100, ge=1, le=MAX_LIMIT, description="entries per page"),
    offset: int = Query(default=0, ge=0, le=MAX_ROW_ID, description="entries to skip"),
) -> Response:
    """Anonymous readers of a board read in the last second get that answer from memory
    (server/anonymous.py); everyone else's goes to the database in the thread pool."""

    # An anonymous reader's answer becomes a copy for everyone: the copy answers
    # If-None-Match itself (server/anonymous.py).
    conditional = None if anonymous.is_anonymous(request) else if_none_match

    def read() -> Response:
        with session_scope() as session:
            user = authenticate(session, credentials.credentials) if credentials else None
            return answer(session, user, problem, conditional, gpu, version, limit, offset)

    return await anonymous.serve(request, read)


def answer(
    session: Session,
    user: User | None,
    problem: str,
    if_none_match: str | None,
    gpu: str | None,
    version: int | None,
    limit: int,
    offset: int,
) -> Response:
    record = service.readable_problem(session, problem, user)
    gpu_type = service.choose_gpu(record, get_settings(), gpu)
    standings = service.shown(session, record, gpu_type, version, user)
    you = standings.entry_of(user)
    tag = etag(standings, limit, offset, you)
    headers = {"ETag": tag, "Cache-Control": "no-cache", "Vary": "Authorization"}
    if if_none_match is not None and anonymous.tag_matches(if_none_match, tag):
        return Response(status_code=304, headers=headers)
    page = rendered(standings, record, gpu_type, version, limit, offset)
    body = page.body
    if you is not None:
        body = page.board.model_copy(update={"you": entry_body(you)}).model_dump_json().encode()
    return Response(body, media_type="application/json", headers=headers)


def rendered(
    standings: Standings,
    problem: Problem,
    gpu_type: str,
    version: int | None,
    limit: int,
    offset: int,
) -> Rendered:
    def render() -> Rendered:
        board = Leaderboard(
            problem=problem.name,
            gpu=gpu_type,
            version=version,
            from_version=problem.leaderboard_from_version,
            frozen_at=standings.frozen_at,
            total=standings.total,
            limit=limit,
            offset=offset,
            entries=[entry_body(entry) for entry in standings.page(offset, limit)],
            baselines=service.baseline_rows(standings.baseline),
        )
        return Rendered(board=board, body=board.model_dump_json().encode())

    return _rendered.get_or_make((standings.key, limit, offset), render)


def entry_body(entry: Entry) -> LeaderboardEntry:
    """The entry as the API shows it: the schema's fields, read off the entry by name."""
    return LeaderboardEntry.model_validate(entry, from_attributes=True)


def etag(standings: Standings, limit: int, offset: int, you: Entry | None) -> str:
    """A strong validator: the board's revision and query, the page, and whose entry."""
    identity = f"{standings.key.validator()}:{limit}:{offset}:{you.user_id if you else ''}"
    return f'"lb-{hashlib.sha256(identity.encode()).hexdigest()[:24]}"'
