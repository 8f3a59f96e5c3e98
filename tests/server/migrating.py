"""Set-up shared by the migration tests: a database held at one revision, and the rows an
older revision's tables hold, written as those tables take them."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, MetaData, Table, create_engine, inspect, text
from sqlalchemy.orm import Session

from server.db import alembic_config
from server.models import Competition, CompetitionProblem, Team, utcnow


@contextmanager
def at_revision(url: str, revision: str) -> Iterator[tuple[Config, Engine]]:
    """The database at ``url`` upgraded to ``revision``, with an engine on it."""
    config = alembic_config(url)
    command.upgrade(config, revision)
    engine = create_engine(url)
    try:
        yield config, engine
    finally:
        engine.dispose()


def column_names(connection: Connection, table: str) -> set[str]:
    """The names of the table's columns, as the database has them now."""
    return {column["name"] for column in inspect(connection).get_columns(table)}


def add_vectoradd(engine: Engine) -> None:
    """Problem 1 (vectoradd), as the problems table of the database's revision takes it: the
    model has columns later revisions added."""
    problems = Table("problems", MetaData(), autoload_with=engine)
    now = utcnow()
    values: dict[str, Any] = {
        "name": "vectoradd", "description": "", "files": {}, "files_sha256": "0" * 64,
        "version": 1, "gpu_types": [], "secret_seed": 1, "is_public": True,
        "code_public_after_deadline": False, "status": "live", "validation_attempt": 0,
        "leaderboard_from_version": 1, "solutions": {}, "leaderboard_revision": 0,
        "created_at": now, "updated_at": now,
    }  # fmt: skip
    with engine.begin() as connection:
        connection.execute(
            problems.insert().values({k: v for k, v in values.items() if k in problems.c})
        )


def sprint(now: datetime) -> Competition:
    """A one-problem competition (on problem 1) open for a day, on the CPU, one member a
    team."""
    return Competition(
        name="sprint", title="Sprint", gpu_type="cpu", opens_at=now,
        closes_at=now + timedelta(days=1), scoring="rank_points", team_size=1,
        final_runs=5, problems=[CompetitionProblem(problem_id=1, position=0)],
    )  # fmt: skip


def add_sprint(engine: Engine, now: datetime, *, teams: Collection[str] = ()) -> None:
    """User 1 (ada), problem 1 (vectoradd) and competition 1 (the sprint) on it, with a team
    of each of these names."""
    add_vectoradd(engine)
    add_users(engine, "ada")
    with Session(engine) as db:
        competition = sprint(now)
        db.add(competition)
        db.flush()
        for name in teams:
            db.add(Team(competition_id=competition.id, name=name, invite_code=name[0] * 22))
        db.commit()


def add_users(engine: Engine, *names: str, admins: Collection[str] = ()) -> None:
    """Users with these names (ids from 1, in order), as the users table has held them since
    revision 0002: the model has columns later revisions added."""
    with engine.begin() as connection:
        for name in names:
            connection.execute(
                text(
                    "INSERT INTO users (name, is_admin, is_banned, created_at) "
                    "VALUES (:name, :admin, :no, :now)"
                ),
                {"name": name, "admin": name in admins, "no": False, "now": utcnow()},
            )


def add_ada_and_vectoradd(engine: Engine) -> None:
    """User 1 (ada) and problem 1 (vectoradd)."""
    add_users(engine, "ada")
    add_vectoradd(engine)


def insert_passed_submission(engine: Engine, *, mode: str, gpu: str, score: float | None) -> None:
    """A passed submission of user 1 on problem 1, as the submissions table has held it
    since revision 0016 (with ``short_calls``)."""
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO submissions (user_id, problem_id, problem_version, code, "
                "code_sha256, mode, gpu_type, status, score, message, flags, is_hidden, "
                "is_hacked, short_calls, created_at) VALUES (1, 1, 1, 'x', :sha, "
                ":mode, :gpu, 'passed', :score, '', '[]', :no, :no, :no, "
                "CURRENT_TIMESTAMP)"
            ),
            {"sha": "0" * 64, "no": False, "mode": mode, "gpu": gpu, "score": score},
        )
