"""A season of vectoradd submissions for `bench/load.py`: competitors with API tokens, and
leaderboard-mode submissions with reports shaped like real ones, bulk-inserted into the
database that the ``KJ_`` environment names.

    KJ_DATABASE_URL=postgresql+psycopg://... python -m bench.load_seed --tokens tokens.txt

load.py runs it as a process of its own, as a `kerneljudge` command runs: importing the
server reads the settings, so they must be in the environment before it starts. Prints the
seconds each step took, as JSON, on its last line."""

from __future__ import annotations

import argparse
import hashlib
import importlib
import itertools
import json
import math
import random
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import JSON, insert, select, text
from sqlalchemy.orm import Session

from server.cli import prepare_database
from server.db import session_scope
from server.models import Problem, Submission, User
from server.users.service import issue_token

REPO = Path(__file__).resolve().parent.parent
PROBLEM = "vectoradd"
KERNEL = (REPO / "problems" / PROBLEM / "solutions" / "pytorch.py").read_text()

# The shape of a real report: `kerneljudge grade vectoradd problems/vectoradd/solutions/
# pytorch.py --mode leaderboard --device cpu --json` on the 2-core CI machine. Its benchmark
# cases (size, seed, median in seconds, bytes moved, roofline floor in seconds).
REAL_CASES = (
    (256, 54352, 6.5523e-05, 393216.0, 3.515137e-05),
    (512, 93246, 1.42322e-04, 1572864.0, 1.4060549e-04),
    (1024, 6256, 5.087545e-04, 6291456.0, 5.6242194e-04),
)
REAL_SCORE_S = math.exp(sum(math.log(case[2]) for case in REAL_CASES) / len(REAL_CASES))
PEAKS = {"copy_bytes_per_s": 11.19e9, "matmul_flops_per_s": 22.24e9, "matmul_dtype": "float32"}
MISMATCH = (
    "case size=256 seed=54352: mismatch at (0, 0): got 0, expected 2.24219; mismatch at "
    "(0, 1): got 0, expected -0.847656 (2 shown, 65485 of 65536 elements differ); 65485 of "
    "65536 elements differ beyond rtol=0.001, atol=0.001"
)
FAILURES = {
    "failed": f"1 of 1 cases failed:\n{MISMATCH}",
    "error": "case size=256 seed=54352: custom_kernel raised RuntimeError: The size of tensor "
    "a (256) must match the size of tensor b (128) at non-singleton dimension 1",
    "timeout": "the grading did not finish within 180 s",
}


def seed_users(session: Session, count: int, rng: random.Random, start: datetime) -> list[str]:
    """``count`` competitors, each with an API token; returns the tokens in the order of
    the users' ids."""
    rows = [
        {"name": f"competitor{index:05d}", "created_at": start + timedelta(hours=rng.random() * 24)}
        for index in range(count)
    ]
    ids = session.scalars(insert(User).returning(User.id), rows).all()
    users = session.scalars(select(User).where(User.id.in_(ids)).order_by(User.id)).all()
    return [issue_token(session, user, label="bench/load.py") for user in users]


def passed_report(rng: random.Random, score_s: float) -> dict[str, Any]:
    """A passing report whose case medians have the real report's proportions and whose
    geometric mean is about ``score_s``."""
    cases: list[dict[str, Any]] = []
    for size, seed, real_median, moved, floor in REAL_CASES:
        median = real_median * score_s / REAL_SCORE_S * rng.uniform(0.97, 1.03)
        timing = {
            "median_s": median,
            "mean_s": median * rng.uniform(1.0, 1.03),
            "min_s": median * rng.uniform(0.75, 0.9),
            "p10_s": median * rng.uniform(0.85, 0.95),
            "p90_s": median * rng.uniform(1.05, 1.25),
            "cv": rng.uniform(0.03, 0.25),
            "samples": 20,
            "sm_clock_mhz": None,
            "calls_per_batch": 200,
            "calls": 200 * 20,
        }
        roofline = {
            "bytes": moved,
            "flops": float(size * size),
            "floor_s": floor,
            "sol_fraction": floor / median,
        }
        cases.append(
            {
                "kind": "benchmark",
                "params": {"size": size, "seed": seed},
                "status": "passed",
                "message": "",
                "time": timing,
                "roofline": roofline,
            }
        )
    score = geometric_mean([case["time"]["median_s"] for case in cases])
    message = (
        f"all 3 benchmark cases passed; score {score * 1e6:.3f} µs (geometric mean of medians)"
    )
    return report_around("passed", cases, score, message)


def failed_report(status: str) -> dict[str, Any]:
    """A failed, crashed or timed-out grading, stopped at its first case as the harness
    does in leaderboard mode."""
    case = {
        "kind": "benchmark",
        "params": {"size": 256, "seed": 54352},
        "status": status,
        "message": FAILURES[status].split("\n")[-1],
        "time": None,
        "roofline": None,
    }
    return report_around(status, [case], None, FAILURES[status])


def report_around(
    status: str, cases: list[dict[str, Any]], score: float | None, message: str
) -> dict[str, Any]:
    return {
        "status": status,
        "problem": PROBLEM,
        "mode": "leaderboard",
        "device": "cpu",
        "device_name": "cpu",
        "device_type": "cpu",
        "device_peaks": PEAKS,
        "score": score,
        "message": message,
        "flags": [],
        "cases": cases,
        "stdout": "",
        "stderr": "",
        "wall_s": 12.6,
    }


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(value) for value in values) / len(values))


def sol_fraction(report: dict[str, Any]) -> float | None:
    """The geometric mean of the cases' speed-of-light fractions, as recorded."""
    fractions = [case["roofline"]["sol_fraction"] for case in report["cases"] if case["roofline"]]
    return geometric_mean(fractions) if fractions else None


def submission_rows(
    count: int, users: list[int], problem: Problem, rng: random.Random, start: datetime
) -> Iterator[dict[str, Any]]:
    """``count`` leaderboard-mode submissions over eight weeks, oldest first (ids follow
    time, as in a real table): a few competitors make most of them (Zipf-like, the first
    user the most), each gets faster over the season; 80% pass, the rest fail, crash or
    time out."""
    weights = [1.0 / (rank + 1) ** 0.8 for rank in range(len(users))]
    skill = {user: math.exp(rng.gauss(0.0, 0.35)) for user in users}
    season = timedelta(weeks=8).total_seconds()
    moments = sorted(rng.random() for _ in range(count))
    # Added this round (migration 0005): the stored fraction the leaderboard reads.
    has_sol_fraction = "sol_fraction" in Submission.__table__.c
    for moment, user in zip(moments, rng.choices(users, weights, k=count), strict=True):
        created = start + timedelta(days=1, seconds=moment * season)
        status = rng.choices(("passed", "failed", "error", "timeout"), (80, 12, 6, 2))[0]
        if status == "passed":
            score = REAL_SCORE_S * skill[user] * (1.0 - 0.3 * moment) * rng.lognormvariate(0, 0.1)
            report = passed_report(rng, score)
        else:
            report = failed_report(status)
        code = f"{KERNEL}\n# attempt {rng.randrange(1000)}\n"
        row = {
            "user_id": user,
            "problem_id": problem.id,
            "problem_version": problem.version,
            "code": code,
            "code_sha256": hashlib.sha256(code.encode()).hexdigest(),
            "mode": "leaderboard",
            "gpu_type": "cpu",
            "status": status,
            "score": report["score"],
            "message": report["message"],
            "flags": [],
            "report": report,
            "worker": "kj-cpu-4242@ci",
            "is_hidden": rng.random() < 0.002,
            "is_hacked": False,
            "created_at": created,
            "started_at": created + timedelta(seconds=rng.uniform(1, 30)),
            "finished_at": created + timedelta(seconds=rng.uniform(40, 60)),
        }
        if has_sol_fraction:
            row["sol_fraction"] = sol_fraction(report)
        yield row


def copy_submissions(session: Session, rows: Iterator[dict[str, Any]]) -> None:
    """All rows in one COPY: about 20 s for 100,000 on two cores, where multi-row INSERTs
    spend longer compiling than PostgreSQL spends storing. Like a plain INSERT, COPY gives
    the columns it does not name their server defaults (or NULL); it bypasses SQLAlchemy's
    types, so JSON is encoded here."""
    first = next(rows)
    table = Submission.metadata.tables[Submission.__tablename__]
    is_json = [isinstance(table.c[name].type, JSON) for name in first]
    names = ", ".join(f'"{name}"' for name in first)
    driver = session.connection().connection.driver_connection
    assert driver is not None
    with (
        driver.cursor() as cursor,
        cursor.copy(f"COPY {table.name} ({names}) FROM STDIN") as copy,
    ):
        for row in itertools.chain([first], rows):
            copy.write_row(
                [
                    json.dumps(value) if encode and value is not None else value
                    for value, encode in zip(row.values(), is_json, strict=True)
                ]
            )


def leaderboard_rebuild() -> Callable[[Session], None] | None:
    """The rebuild of the precomputed leaderboards that this round adds, where the code
    has it (a bulk load bypasses their upkeep); None before."""
    for name in ("server.leaderboards.service", "server.leaderboards.upkeep"):
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        if callable(rebuild := getattr(module, "rebuild", None)):
            return rebuild
    return None


def timed(timings: dict[str, float], name: str, began: float) -> float:
    now = time.monotonic()
    timings[name] = round(now - began, 2)
    return now


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--submissions", type=int, default=100_000)
    parser.add_argument("--tokens", type=Path, required=True, help="write the tokens here")
    args = parser.parse_args()
    rng = random.Random(2026)
    start = datetime.now(UTC) - timedelta(weeks=8, days=2)
    timings: dict[str, float] = {}
    began = time.monotonic()
    prepare_database()
    began = timed(timings, "migrate_s", began)
    with session_scope() as session:
        tokens = seed_users(session, args.users, rng, start)
    args.tokens.write_text("\n".join(tokens) + "\n")
    began = timed(timings, "users_s", began)
    with session_scope() as session:
        problem = session.scalars(select(Problem).where(Problem.name == PROBLEM)).one()
        users = list(session.scalars(select(User.id).order_by(User.id)))
        copy_submissions(session, submission_rows(args.submissions, users, problem, rng, start))
    began = timed(timings, "submissions_s", began)
    if (rebuild := leaderboard_rebuild()) is not None:
        with session_scope() as session:
            rebuild(session)
        began = timed(timings, "rebuild_s", began)
    # A database that grew over a season has planner statistics; a bulk load has none yet.
    with session_scope() as session:
        session.execute(text("ANALYZE"))
    timed(timings, "analyze_s", began)
    print(json.dumps(timings))


if __name__ == "__main__":
    main()
