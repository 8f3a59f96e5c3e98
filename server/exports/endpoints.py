"""Routes: download a problem's leaderboard or submissions as CSV or Parquet (admins)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import Response

from server.deps import AdminUser, SessionDep, SettingsDep
from server.downloads import attachment
from server.errors import Forbidden, NotAuthenticated, NotFound, responses
from server.exports import service

router = APIRouter(prefix="/api/v1/problems", tags=["problems"])


def download(export: service.Export) -> Response:
    return attachment(export.content, export.media_type, export.filename)


@router.get(
    "/{name}/export/{table}.{fmt}",
    response_class=Response,
    responses={
        200: {
            "description": "the table as a file",
            "content": {media_type: {} for media_type in service.FORMATS.values()},
        },
        **responses(NotAuthenticated, Forbidden, NotFound),
    },
    summary="A problem's leaderboard or submissions as CSV or Parquet",
)
def export_problem(
    name: str,
    table: Literal["leaderboard", "submissions"],
    fmt: Literal["csv", "parquet"],
    session: SessionDep,
    settings: SettingsDep,
    admin: AdminUser,
) -> Response:
    return download(service.export(session, settings, name, table, fmt))
