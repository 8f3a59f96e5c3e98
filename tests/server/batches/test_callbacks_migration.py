"""Revision 0023 on SQLite and PostgreSQL: a database with a batch gains each batch's
`callback_url` and `callback_secret` (null: no callbacks) and `callback_deliveries`; a
downgrade takes them away and leaves the batch."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from server.models import Batch, CallbackDelivery
from tests.server.competitions.conftest import url as url
from tests.server.migrating import add_ada_and_vectoradd, at_revision


def test_callbacks_come_and_go_with_their_revision(url: str) -> None:
    with at_revision(url, "0022") as (config, engine):
        add_ada_and_vectoradd(engine)
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO batches (user_id, tier, request_sha256, created_at) "
                    "VALUES (1, 'quick', :sha, CURRENT_TIMESTAMP)"
                ),
                {"sha": "0" * 64},
            )
        command.upgrade(config, "0023")
        with Session(engine) as db:
            kept = db.get(Batch, 1)
            assert kept is not None and (kept.callback_url, kept.callback_secret) == (None, None)
            kept.callback_url, kept.callback_secret = "https://example.org/hook", "s" * 43
            db.add(CallbackDelivery(batch_id=1, submission_id=1, body={"key": "a.py"}))
            db.commit()
            delivery = db.get(CallbackDelivery, 1)
            assert delivery is not None and delivery.attempts == 0
            assert (delivery.delivered_at, delivery.failed_at) == (None, None)
        command.downgrade(config, "0022")
        with engine.connect() as connection:
            assert "callback_deliveries" not in inspect(connection).get_table_names()
            columns = {c["name"] for c in inspect(connection).get_columns("batches")}
            assert "callback_url" not in columns and "callback_secret" not in columns
            assert connection.execute(text("SELECT count(*) FROM batches")).scalar() == 1
        command.upgrade(config, "0023")
