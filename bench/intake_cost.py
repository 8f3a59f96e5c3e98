"""What one `POST /api/v1/submissions` costs the API process: wall and CPU time per request
through the whole ASGI app (middleware, dependencies, the route, the commit), one request at
a time, on a PostgreSQL cluster and a redis-server this script starts on ports of its own.

    python -m bench.intake_cost --requests 500
    python -m bench.intake_cost --requests 500 --profile intake.prof   # cProfile of the API

The client is httpx's ASGI transport in the same process, so the figures include its cost
too (measured alone with `--client-only`, against an app that answers at once). Prints a
JSON object on its last line."""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rig.cluster import postgres_cluster, redis_server

REPO = Path(__file__).resolve().parent.parent
PROBLEM = "vectoradd"
KERNEL = (REPO / "problems" / PROBLEM / "solutions" / "pytorch.py").read_text()


async def drive(
    app: Any, tokens: list[str], count: int, made: list[tuple[str, int]] | None
) -> list[float]:
    """`count` submissions, one at a time; with `made` (token, submission id), reads of
    these submissions by their authors instead, newest first, as clients polling do."""
    import httpx

    transport = httpx.ASGITransport(app=app)
    body = {"problem": PROBLEM, "code": KERNEL, "mode": "test"}
    seconds = []
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for index in range(count):
            began = time.perf_counter()
            if made is None:
                auth = {"Authorization": f"Bearer {tokens[index % len(tokens)]}"}
                response = await client.post("/api/v1/submissions", json=body, headers=auth)
            else:
                token, submission = made[-1 - index % len(made)]
                auth = {"Authorization": f"Bearer {token}"}
                response = await client.get(f"/api/v1/submissions/{submission}", headers=auth)
            seconds.append(time.perf_counter() - began)
            if response.status_code not in (200, 202):
                raise SystemExit(f"{response.status_code}: {response.text}")
            if made is not None and index % 2 == 0:  # a submission of the reader's own
                response = await client.post("/api/v1/submissions", json=body, headers=auth)
                made.append((token, response.json()["id"]))
    return seconds


def quiet_app() -> Any:
    """An ASGI app that answers 202 at once: what the client alone costs."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    return app


def measure(
    app: Any,
    tokens: list[str],
    count: int,
    profile: Path | None,
    made: list[tuple[str, int]] | None = None,
) -> dict[str, Any]:
    asyncio.run(drive(app, tokens, min(50, count), made))  # warm up
    profiler = cProfile.Profile() if profile else None
    cpu = time.process_time()
    wall = time.perf_counter()
    if profiler:
        profiler.enable()
    seconds = asyncio.run(drive(app, tokens, count, made))
    if profiler:
        profiler.disable()
        profiler.dump_stats(profile)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    seconds.sort()
    return {
        "requests": count,
        "wall_ms_per_request": 1000 * wall / count,
        "cpu_ms_per_request": 1000 * cpu / count,
        "p50_ms": 1000 * seconds[len(seconds) // 2],
        "p99_ms": 1000 * seconds[int(len(seconds) * 0.99)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--profile", type=Path, help="write a cProfile of the measured requests")
    parser.add_argument(
        "--poll",
        action="store_true",
        help="measure reads of the submissions made (GET /api/v1/submissions/ID, each "
        "by its author, while they wait in the queue) instead of submissions; after every "
        "other read, its reader submits once more, as in bench/load.py's one-token phase",
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="kj-intake-") as folder,
        postgres_cluster() as postgres,
        redis_server() as redis,
    ):
        os.environ.update(
            KJ_DATABASE_URL=postgres.create_database("kerneljudge"),
            KJ_BROKER_URL=redis.url(),
            KJ_DATA_DIR=folder,
            KJ_GPU_TYPES="cpu",
            KJ_SUBMISSION_RATE_LIMIT="0",
        )
        # Imported once the settings are in the environment, as a `kerneljudge` command is.
        from sqlalchemy import select

        from server.app import create_app
        from server.cli import prepare_database
        from server.db import session_scope
        from server.models import Submission, User
        from server.outbox import jobs
        from server.users.service import issue_token

        prepare_database()
        with session_scope() as session:
            users = [User(name=f"intake{index:03d}") for index in range(args.users)]
            session.add_all(users)
            session.flush()
            tokens = [issue_token(session, user, label="bench/intake_cost.py") for user in users]
        client = measure(quiet_app(), tokens, args.requests, None)
        app = create_app()
        result = measure(app, tokens, args.requests, None if args.poll else args.profile)
        if args.poll:
            with session_scope() as session:
                token_of = {user.id: token for user, token in zip(users, tokens, strict=True)}
                rows = session.execute(
                    select(Submission.user_id, Submission.id).order_by(Submission.id)
                ).all()
                made = [(token_of[user_id], row_id) for user_id, row_id in rows]
            result = measure(app, tokens, args.requests, args.profile, made)
        result["measured"] = (
            "GET /api/v1/submissions/ID" if args.poll else "POST /api/v1/submissions"
        )
        jobs.drain_sender()  # before the cluster stops
        result["client_cpu_ms_per_request"] = client["cpu_ms_per_request"]
        result["api_cpu_ms_per_request"] = (
            result["cpu_ms_per_request"] - client["cpu_ms_per_request"]
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
