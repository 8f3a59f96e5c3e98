"""An API client against the app in this process: SQLite in the test data dir, the
embedded broker (messages are really sent; no worker consumes them here)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from grader.report import Report
from server.app import create_app
from server.db import migrate, session_scope
from server.models import Problem, User
from server.problems.service import sync_builtin_problems
from server.settings import get_settings
from server.submissions import reports
from server.users.service import create_user, issue_token
from tests.server.rows import added_submission


@pytest.fixture(scope="session")
def database() -> None:
    migrate()
    with session_scope() as session:
        sync_builtin_problems(session)


@dataclass
class Account:
    name: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


_counter = iter(range(1_000_000))


def make_account(*, admin: bool = False) -> Account:
    name = f"user{next(_counter)}{'-admin' if admin else ''}"
    with session_scope() as session:
        user = create_user(session, name, is_admin=admin)
        token = issue_token(session, user)
    return Account(name, token)


@contextmanager
def changed_settings(**values: str) -> Iterator[None]:
    """The settings named (``gpu_types="cpu,h200"`` sets ``KJ_GPU_TYPES``) changed for the
    block: the cached settings are read afresh on entry, and again once they are restored."""
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in values.items():
                patch.setenv(f"KJ_{name.upper()}", value)
            get_settings.cache_clear()
            yield
    finally:
        get_settings.cache_clear()


@pytest.fixture
def alice(database: None) -> Account:
    return make_account()


@pytest.fixture
def admin(database: None) -> Account:
    return make_account(admin=True)


@pytest.fixture
async def client(database: None) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.fixture
async def browser(database: None) -> AsyncIterator[httpx.AsyncClient]:
    """A second client keeping its own cookies, as a signed-in browser does."""
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


@pytest.fixture
def anyio_backend() -> Iterator[str]:
    yield "asyncio"


def add_submission(user_name: str, *, mode: str, code: str = "x") -> int:
    """A vectoradd submission of `user_name`'s for the CPU, written to the database as the
    service would have accepted it; its id."""
    with session_scope() as db:
        user = db.scalar(select(User).where(User.name == user_name))
        problem = db.scalar(select(Problem).where(Problem.name == "vectoradd"))
        assert user is not None and problem is not None
        return added_submission(db, user, problem, mode=mode, code=code).id


# A passed grading report of one benchmark case, as a worker sends it.
PASSED_REPORT: dict[str, Any] = {
    "status": "passed",
    "problem": "vectoradd",
    "mode": "leaderboard",
    "device": "cpu",
    "score": 0.002,
    "message": "all cases passed",
    "flags": [],
    "cases": [
        {
            "kind": "benchmark",
            "params": {"size": 1024, "seed": 1},
            "status": "passed",
            "message": "",
            "time": {
                "median_s": 0.002,
                "mean_s": 0.0021,
                "min_s": 0.0019,
                "cv": 0.01,
                "samples": 12,
            },
        },
    ],
}


def worker_report(status: str, **fields: Any) -> Report:
    """A grading's report as the results step takes it from a worker (of a test-mode grading
    on the CPU unless `fields` say otherwise)."""
    return reports.parse(
        {"problem": "vectoradd", "mode": "test", "device": "cpu", "status": status, **fields}
    )
