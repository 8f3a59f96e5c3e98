"""Revision 0028 on SQLite and PostgreSQL: a competition pinned before it gains
``judging_queue``, null (its final judging's runs go to its GPU type's queue, as they did);
a downgrade takes the column away and keeps the competition and its pin."""

from __future__ import annotations

from datetime import timedelta

from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from server.competitions import judging
from server.models import Competition, utcnow
from tests.server.migrating import add_ada_and_vectoradd, at_revision, column_names


def insert_pinned_sprint(engine: Engine) -> None:
    """Competition 1 on problem 1, pinned to an H200, as the competitions table has held it
    from revision 0018 to 0027."""
    now = utcnow()
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO competitions (name, title, description, gpu_type, opens_at, "
                "closes_at, scoring, team_size, final_runs, pin, created_at, updated_at) "
                "VALUES ('sprint', 'Sprint', '', 'h200', :opens, :closes, 'rank_points', 1, "
                "5, :pin, :now, :now)"
            ),
            {
                "opens": now - timedelta(days=2),
                "closes": now - timedelta(days=1),
                "pin": '{"device_name": "NVIDIA H200"}',
                "now": now,
            },
        )
        connection.execute(
            text(
                "INSERT INTO competition_problems (competition_id, problem_id, position, "
                "weight) VALUES (1, 1, 0, 1.0)"
            )
        )


def test_judging_queue_comes_and_goes_with_its_revision(url: str) -> None:
    with at_revision(url, "0027") as (config, engine):
        add_ada_and_vectoradd(engine)
        insert_pinned_sprint(engine)
        command.upgrade(config, "0028")
        with Session(engine) as db:
            kept = db.get(Competition, 1)
            assert kept is not None and kept.pin == {"device_name": "NVIDIA H200"}
            assert kept.judging_queue is None
            # Routed as before the revision: to the GPU type's queue.
            assert judging.run_queue(kept, kept.gpu_type) == "h200"
            kept.judging_queue = "h200-final"
            db.commit()
        with Session(engine) as db:
            kept = db.get(Competition, 1)
            assert kept is not None and judging.run_queue(kept, "h200") == "h200-final"
        command.downgrade(config, "0027")
        with engine.connect() as connection:
            assert "judging_queue" not in column_names(connection, "competitions")
            assert connection.execute(text("SELECT name FROM competitions")).scalar() == "sprint"
        command.upgrade(config, "0028")
