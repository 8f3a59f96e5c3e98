"""``GET /healthz``: whether this API process can reach the database and the broker, each
said separately, for load balancers and monitoring."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field
from sqlalchemy import text

from server.db import get_engine
from server.deps import SettingsDep
from server.outbox import broker

router = APIRouter(tags=["health"])

State = Literal["ok", "unreachable"]


class Health(BaseModel):
    status: Literal["ok", "degraded", "unavailable"] = Field(
        description="ok: both reachable; degraded: the broker is not (submissions are still "
        "accepted and sent once it is back); unavailable: the database is not (503)"
    )
    database: State
    broker: State
    detail: str = Field(default="", description="what failed, when something did")


@router.get(
    "/healthz",
    response_model=Health,
    responses={503: {"model": Health, "description": "the database cannot be reached"}},
    summary="Readiness: the database and the broker, each reachable or not",
)
def healthz(settings: SettingsDep, response: Response) -> Health:
    problems = []
    database: State = "ok"
    try:
        with get_engine().connect() as connection:
            connection.execute(text("SELECT 1"))
    except Exception as exc:
        database = "unreachable"
        problems.append(f"database: {type(exc).__name__}")
    broker_state: State = "ok"
    failure = broker.unreachable(settings)
    if failure:
        broker_state = "unreachable"
        problems.append(f"broker: {failure}")
    if database != "ok":
        response.status_code = 503
        response.headers["Retry-After"] = "5"
        status: Literal["ok", "degraded", "unavailable"] = "unavailable"
    else:
        status = "ok" if broker_state == "ok" else "degraded"
    return Health(status=status, database=database, broker=broker_state, detail="; ".join(problems))
