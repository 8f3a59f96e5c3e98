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

from server.db import alembic_config
from server.models import utcnow


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


def add_sprint(engine: Engine, now: datetime, *, teams: Collection[str] = ()) -> None:
    """User 1 (ada), problem 1 (vectoradd) and competition 1 (a one-problem sprint on it, open
    for a day on the CPU, one member a team) with a team of each of these names, as the
    competitions tables have held them since revision 0017."""
    add_vectoradd(engine)
    add_users(engine, "ada")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO competitions (name, title, description, gpu_type, opens_at, "
                "closes_at, scoring, team_size, final_runs, created_at, updated_at) VALUES "
                "('sprint', 'Sprint', '', 'cpu', :now, :closes, 'rank_points', 1, 5, :now, "
                ":now)"
            ),
            {"now": now, "closes": now + timedelta(days=1)},
        )
        connection.execute(
            text(
                "INSERT INTO competition_problems (competition_id, problem_id, position, "
                "weight) VALUES (1, 1, 0, 1.0)"
            )
        )
        for name in teams:
            connection.execute(
                text(
                    "INSERT INTO teams (competition_id, name, invite_code, created_at) "
                    "VALUES (1, :name, :code, :now)"
                ),
                {"name": name, "code": name[0] * 22, "now": now},
            )


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
