"""The throwaway PostgreSQL and Redis servers that fault tests and bench scripts stop and
restart: a stopped one refuses connections, a restarted one has kept its data, and a block
that fails leaves no process and no folder behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from rig.cluster import (
    postgres_cluster,
    redis_server,
)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("server_binaries")]


@contextmanager
def unpooled(url: str) -> Iterator[Engine]:
    # No pool: every connect below is a new connection, as a client of a restarted
    # server makes.
    engine = create_engine(url, poolclass=NullPool)
    try:
        yield engine
    finally:
        engine.dispose()


def scores(engine: Engine) -> list[float]:
    with engine.connect() as connection:
        return list(connection.scalars(text("SELECT score FROM scores ORDER BY score")))


def test_postgres_refuses_connections_while_stopped_and_keeps_its_data() -> None:
    with (
        postgres_cluster() as cluster,
        unpooled(cluster.create_database("kj_cluster")) as engine,
    ):
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE scores (score float)"))
            connection.execute(text("INSERT INTO scores VALUES (1.5e-4)"))

        cluster.stop()
        with pytest.raises(OperationalError, match="refused"):
            engine.connect().close()
        cluster.start()
        assert scores(engine) == [1.5e-4]

        with engine.begin() as connection:
            connection.execute(text("INSERT INTO scores VALUES (2.5e-4)"))
        cluster.kill()
        with pytest.raises(OperationalError, match="refused"):
            engine.connect().close()
        cluster.start()
        assert scores(engine) == [1.5e-4, 2.5e-4]


def test_redis_refuses_connections_while_stopped_and_keeps_its_append_only_data() -> None:
    with redis_server(appendonly=True) as server:
        client = redis.Redis.from_url(server.url(), retry=Retry(NoBackoff(), 0))
        try:
            client.rpush("cpu", "grade 1")

            server.stop()
            with pytest.raises(redis.ConnectionError, match="refused"):
                client.ping()
            server.start()
            assert client.lrange("cpu", 0, -1) == [b"grade 1"]
        finally:
            client.close()


def test_a_failing_block_leaves_no_server_and_no_folder() -> None:
    with (
        pytest.raises(RuntimeError, match="the test failed"),
        postgres_cluster() as cluster,
        redis_server() as server,
    ):
        started = [cluster.pid, server.pid]
        folders = [cluster.root, server.root]
        raise RuntimeError("the test failed")
    for pid in started:
        assert pid is not None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not any(folder.exists() for folder in folders)
