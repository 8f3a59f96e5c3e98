"""Set-up shared by the integration tests that start servers of their own."""

from __future__ import annotations

import shutil

import pytest

from rig.cluster import ServiceUnavailable, postgres_bin
from tests.services import service_missing


@pytest.fixture(scope="session")
def server_binaries() -> None:
    """PostgreSQL's and Redis's binaries, for tests that start their own servers: skipped
    without them (a failure in CI)."""
    try:
        postgres_bin()
        if shutil.which("redis-server") is None:
            raise ServiceUnavailable("redis-server is not installed")
    except ServiceUnavailable as exc:
        service_missing("PostgreSQL's or Redis's binaries", exc)
