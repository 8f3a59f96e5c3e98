"""One token submitting and polling at once from a fresh `serve`'s first second, as the
README's own workflow does, on PostgreSQL and Redis with the device type left for `serve`
to find (KJ_GPU_TYPES unset, the documented default): every request answers within a
second, none waits on another's lock or on a device probe. (It once hung the whole API: an
async route waited on the event loop for the token's row, locked by a poll whose commit
needed that same loop; and a cold API once probed the device on its first requests, each
starting a Python process that imports torch.) bench/load.py measures this at 64
connections."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import httpx
import pytest

from rig.cluster import postgres_cluster, redis_server
from rig.processes import add_user, service_env, serving

pytestmark = pytest.mark.integration

CODE = """
import torch
def custom_kernel(data):
    a, b, out = data
    return torch.add(a, b, out=out)
"""
CLIENTS = 16
DURATION_S = 10.0
# About twice the slowest request measured on these 2-core machines (451 ms at 16
# connections, bench/load.py), far below a hang or a device probe (seconds).
SLOWEST_S = 1.0


def test_one_token_submitting_and_polling_at_once(tmp_path: Path) -> None:
    with postgres_cluster() as database, redis_server() as broker:
        env = service_env(
            tmp_path / "var",
            database_url=database.create_database("kj"),
            broker_url=broker.url(),
            submission_rate_limit="0",
        )
        del env["KJ_GPU_TYPES"]  # serve finds this host's device type before it serves
        token = add_user(env, "ada")
        with serving(env, tmp_path / "serve.log") as base:
            outcomes = load(base, token)
    statuses = [status for status, _ in outcomes]
    slowest = max(seconds for _, seconds in outcomes)
    assert statuses and set(statuses) <= {200, 202}, sorted(set(statuses))
    assert statuses.count(202) >= CLIENTS and statuses.count(200) >= CLIENTS
    assert slowest < SLOWEST_S, f"the slowest request took {slowest:.1f} s"


def load(base: str, token: str) -> list[tuple[int, float]]:
    """Half the clients submit, half poll what was submitted, for DURATION_S."""
    headers = {"Authorization": f"Bearer {token}"}
    made: list[int] = []
    outcomes: list[tuple[int, float]] = []
    lock = threading.Lock()
    ends = time.monotonic() + DURATION_S

    def submitter() -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            while time.monotonic() < ends:
                started = time.monotonic()
                response = client.post(
                    "/api/v1/submissions",
                    json={"problem": "vectoradd", "code": CODE, "mode": "test"},
                )
                with lock:
                    outcomes.append((response.status_code, time.monotonic() - started))
                    if response.status_code == 202:
                        made.append(response.json()["id"])

    def poller() -> None:
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            while time.monotonic() < ends:
                with lock:
                    target = made[-1] if made else None
                if target is None:
                    time.sleep(0.05)
                    continue
                started = time.monotonic()
                response = client.get(f"/api/v1/submissions/{target}")
                with lock:
                    outcomes.append((response.status_code, time.monotonic() - started))

    threads = [threading.Thread(target=submitter) for _ in range(CLIENTS // 2)]
    threads += [threading.Thread(target=poller) for _ in range(CLIENTS // 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DURATION_S + 70)
    return outcomes
