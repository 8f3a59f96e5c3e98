"""Production shape: PostgreSQL, Redis, `serve` (API and results step) and a separate
grading worker process. A worker killed mid-grading loses nothing, and the submission is
recorded once."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from rig.cluster import redis_server
from rig.processes import (
    TERMINAL,
    add_user,
    kerneljudge,
    running,
    service_env,
    serving,
    stop_group,
    submit,
    wait_for,
)
from tests.services import fresh_postgres_database, fresh_redis_url

pytestmark = pytest.mark.integration

# Slow enough at import that the worker can be killed while it grades.
SLOW_HONEST = """
import time
import torch
time.sleep(4)

def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""


def test_worker_killed_mid_grading_then_restarted(tmp_path: Path) -> None:
    with fresh_postgres_database() as database_url:
        env = service_env(
            tmp_path / "var",
            database_url=database_url,
            broker_url=fresh_redis_url(),
            visibility_timeout_s="10",
            restore_interval_s="1",
        )
        token = add_user(env, "grace")
        log = tmp_path / "services.log"
        with serving(env, log) as base:
            with running(kerneljudge("worker"), env, tmp_path / "worker1.log") as first:
                sid = submit(base, token, "vectoradd", SLOW_HONEST, "test")
                wait_for(base, token, sid, {"running"}, 90, tmp_path / "worker1.log")
                time.sleep(1.0)
                stop_group(first, signal.SIGKILL)
            killed = httpx.get(
                f"{base}/api/v1/submissions/{sid}", headers={"Authorization": f"Bearer {token}"}
            ).json()
            assert killed["status"] == "running"

            with running(kerneljudge("worker"), env, tmp_path / "worker2.log"):
                report = wait_for(base, token, sid, TERMINAL, 150, tmp_path / "worker2.log")
                assert report["status"] == "passed", report["message"]
                # Let a possible second delivery of the same job finish and be dropped.
                time.sleep(3)
                again = httpx.get(
                    f"{base}/api/v1/submissions/{sid}",
                    headers={"Authorization": f"Bearer {token}"},
                ).json()

        assert len(report["cases"]) > 0
        recorded = ("status", "worker", "finished_at", "cases")
        assert {k: again[k] for k in recorded} == {k: report[k] for k in recorded}


@dataclass(frozen=True)
class Production:
    base: str  # serve's URL
    env: dict[str, str]
    worker_log: Path


@pytest.fixture(scope="module")
def production(
    server_binaries: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Production]:
    """PostgreSQL, a Redis server of its own, `serve` and a separate grading worker, shared by
    the tests that only submit and read (each with users and problems of its own); the test
    that kills its worker starts its own."""
    root = tmp_path_factory.mktemp("production")
    with fresh_postgres_database() as database_url, redis_server() as broker:
        env = service_env(root / "var", database_url=database_url, broker_url=broker.url())
        add_user(env, "operator")  # migrates the database before serve and the worker start
        with (
            serving(env, root / "services.log") as base,
            running(kerneljudge("worker"), env, root / "worker.log"),
        ):
            yield Production(base, env, root / "worker.log")


def test_an_upload_is_validated_by_a_separate_worker_then_goes_live(
    production: Production,
) -> None:
    """Production shape for validation: the API sends the round through Redis to a grading
    worker with no database access, and the results step records it in PostgreSQL."""
    from tests.integration.test_problem_validation import RIGHT, WRONG, vectorsum_zip

    base, worker_log = production.base, production.worker_log
    admin = add_user(production.env, "olga", admin=True)
    competitor = add_user(production.env, "pete")
    auth = {"Authorization": f"Bearer {admin}"}
    archive = vectorsum_zip(
        "pgsum", solutions={"solutions/correct/a.py": RIGHT, "solutions/wrong/b.py": WRONG}
    )
    created = httpx.post(
        f"{base}/api/v1/problems", files={"archive": ("p.zip", archive)}, headers=auth
    )
    assert created.status_code == 201, created.text
    deadline = time.monotonic() + 240
    validation: dict[str, object] = {"status": "validating"}
    while validation["status"] == "validating" and time.monotonic() < deadline:
        time.sleep(0.5)
        validation = httpx.get(f"{base}/api/v1/problems/pgsum/validation", headers=auth).json()
    assert validation["status"] == "live", f"{validation}\n{worker_log.read_text()[-3000:]}"
    sid = submit(base, competitor, "pgsum", RIGHT, "test")
    report = wait_for(base, competitor, sid, TERMINAL, 120, worker_log)
    assert report["status"] == "passed", report["message"]


# Its output and its error carry NUL characters, which PostgreSQL's text columns refuse.
NUL_RAISER = """
import sys
print("out\\x00put")

def custom_kernel(data):
    raise ValueError("bad\\x00byte")
"""


def test_nul_characters_from_a_submission_or_a_request_are_no_server_error(
    production: Production,
) -> None:
    """On PostgreSQL, a report whose messages hold NUL characters is recorded (the
    submission ends, not stuck `running`), and a name with one in a URL or a form is
    a plain miss."""
    base, worker_log = production.base, production.worker_log
    token = add_user(production.env, "nul")
    sid = submit(base, token, "vectoradd", NUL_RAISER, "test")
    report = wait_for(base, token, sid, TERMINAL, 120, worker_log)
    assert report["status"] == "error", report
    assert "bad\ufffdbyte" in report["message"]
    for url in ("/api/v1/problems/vector%00add", "/api/v1/leaderboards/vector%00add"):
        missing = httpx.get(f"{base}{url}")
        assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    with httpx.Client(base_url=base) as browser:
        page = browser.get("/login", headers={"Accept": "text/html"})
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert csrf is not None
        for name in ("gr\x00ce", "g" * 1000):
            refused = browser.post(
                "/login",
                data={"name": name, "password": "x", "csrf_token": csrf.group(1)},
                headers={"Accept": "text/html"},
            )
            assert refused.status_code in (401, 422), refused.text[-500:]
