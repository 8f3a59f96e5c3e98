"""A whole competition on PostgreSQL and Redis, through the REST API and the command line:
the organizer adds it from its file (`competition add`), the teams form and the solo
entrant registers over the API (the command line has no team commands), they submit, the
board freezes (`standings --json`), it closes, and the final judging (`competition judge`,
`judging --json`, `publish`) grades every entry K times while a worker is killed
mid-grading: each entry is judged exactly K times, and the final standings are those
rig/competition.py works out by hand."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from rig import competition as plan_
from rig.faults import (
    Install,
    graded_by,
    kill_worker_mid_grading,
    production_install,
    tails_on_failure,
    wait_for_verdicts,
)
from rig.processes import REPO_ROOT, add_user, kerneljudge, submit
from server.models import JudgingRun, OutboxMessage, Submission, SubmissionVerdict
from server.outbox import jobs

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("server_binaries")]

K = 2
# Seconds: until it opens (`competition add` and the teams meanwhile), open before the
# freeze, frozen before the close.
OPEN_IN_S, OPEN_S, FROZEN_S = 12, 3, 3
# Above the longest grading here (a leaderboard run takes 20-40 s with two workers on two
# cores), or a live grading would be handed out twice; the killed worker's job comes back
# after it.
VISIBILITY_TIMEOUT_S = 75


def command(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        kerneljudge(*args), env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def competitor_env(install: Install, token: str) -> dict[str, str]:
    """A competitor's shell: the server's URL and their token, no server settings."""
    env = {k: v for k, v in install.env.items() if not k.startswith("KJ_")}
    return {**env, "KJ_URL": install.base, "KJ_TOKEN": token}


def post(install: Install, token: str, path: str, body: dict[str, Any] | None = None) -> Any:
    response = httpx.post(
        install.base + path, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code in (200, 201), response.text
    return response.json()


def totals(board: dict[str, Any]) -> list[tuple[str, float | None]]:
    return [(row["team"], row["total"]) for row in board["rows"]]


@pytest.mark.timeout(900)
def test_a_whole_competition_judged_k_times_through_a_killed_worker(tmp_path: Path) -> None:
    began = time.monotonic()
    with (
        tails_on_failure(tmp_path / "logs"),
        production_install(
            tmp_path, workers=2, settings={"visibility_timeout_s": str(VISIBILITY_TIMEOUT_S)}
        ) as install,
    ):
        users = [*plan_.TEAMS["Red"], *plan_.TEAMS["Blue"], plan_.SOLO]
        with ThreadPoolExecutor(len(users)) as pool:
            tokens = dict(
                zip(users, pool.map(lambda u: add_user(install.env, u), users), strict=True)
            )

        plan = plan_.Plan.starting_in("spring-sprint", OPEN_IN_S, OPEN_S, FROZEN_S, final_runs=5)
        (tmp_path / "sprint.yml").write_text(plan.file())
        added = command(install.env, "competition", "add", str(tmp_path / "sprint.yml"))
        assert "'spring-sprint' created" in added
        base = f"/api/v1/competitions/{plan.name}"
        for team, (first, second) in plan_.TEAMS.items():
            invite = post(install, tokens[first], f"{base}/teams", {"name": team})["invite"]
            post(install, tokens[second], f"{base}/join", {"invite": invite})
        post(install, tokens[plan_.SOLO], f"{base}/register")
        assert time.time() < plan.opens_at.timestamp(), "the teams formed after the opening"

        def send(user: str, problem: str) -> int:
            return submit(install.base, tokens[user], problem, plan_.kernel(problem), "leaderboard")

        plan_.wait_until(plan.opens_at)
        ids = [send(*entry) for entry in plan_.BEFORE_FREEZE]
        assert time.time() < plan.freeze_at.timestamp(), "the submissions came after the freeze"
        plan_.wait_until(plan.freeze_at)
        ids += [send(*entry) for entry in plan_.AFTER_FREEZE]
        assert time.time() < plan.closes_at.timestamp(), "the last submission came after the close"
        wait_for_verdicts(install, ids, timeout_s=300)
        with install.database() as engine, engine.connect() as db:
            statuses = db.execute(select(Submission.id, Submission.status)).all()
        assert dict(statuses) == {submission_id: "passed" for submission_id in ids}
        plan_.wait_until(plan.closes_at)

        # Frozen: the public board as of the freeze; Blue's cat sees her own row live.
        public = httpx.get(install.base + f"{base}/standings", timeout=10).json()
        assert public["frozen"] and not public["final"]
        assert totals(public) == plan_.FROZEN
        own = json.loads(
            command(competitor_env(install, tokens["cat"]), "standings", plan.name, "--json")
        )
        [blue] = [row for row in own["rows"] if row.get("live")]
        assert (blue["team"], blue["rank"], blue["total"]) == ("Blue", 1, 300.0)

        judging_id = int(command(install.env, "competition", "judge", plan.name, "--runs", str(K)))
        fault = kill_worker_mid_grading(install)
        preview = ready_judging(install)
        runs = judging_runs(install)

        # Each entry judged exactly K times: K runs in the database, each graded and recorded
        # once (no earlier verdict replaced, one grading job), and K in the preview.
        per_entry = Counter(runs.values())
        assert len(per_entry) == plan_.ENTRIES and set(per_entry.values()) == {K}, runs
        run_ids = list(runs)
        with install.database() as engine, engine.connect() as db:
            graded = dict(
                db.execute(
                    select(Submission.id, Submission.status).where(Submission.id.in_(run_ids))
                ).all()
            )
            replaced = db.scalar(
                select(func.count())
                .select_from(SubmissionVerdict)
                .where(SubmissionVerdict.submission_id.in_(run_ids))
            )
            grade_jobs = Counter(
                db.scalars(
                    select(OutboxMessage.subject_id).where(
                        OutboxMessage.subject_id.in_(run_ids), OutboxMessage.job == jobs.Job.GRADE
                    )
                )
            )
        assert graded == dict.fromkeys(run_ids, "passed") and replaced == 0
        assert grade_jobs == Counter(run_ids)
        assert set(fault.victims) <= set(run_ids), (fault.victims, run_ids)
        for victim, killed_grading in fault.victims.items():
            assert graded_by(install, victim) != killed_grading
        for row in preview["rows"]:
            assert set(row["entries"]) == plan_.JUDGED_ENTRIES[row["team"]]
            for entry in row["entries"].values():
                assert entry["statuses"] == ["passed"] * K, entry
        assert preview["graded"] == preview["total_runs"] == plan_.ENTRIES * K
        assert preview["id"] == judging_id
        before = {team: (rank, total) for rank, (team, total) in enumerate(plan_.AT_CLOSE, 1)}
        assert {r["team"]: (r["rank_before"], r["total_before"]) for r in preview["rows"]} == before
        assert [(r["team"], r["total_after"]) for r in preview["rows"]] == plan_.JUDGED

        published = command(install.env, "competition", "publish", plan.name)
        assert "published" in published
        final = json.loads(
            command(competitor_env(install, tokens["eve"]), "standings", plan.name, "--json")
        )
        assert final["final"] and not final["frozen"]
        assert totals(final) == plan_.JUDGED
        assert [row["rank"] for row in final["rows"]] == [1, 2, 3]
    print(f"whole competition on PostgreSQL and Redis: {time.monotonic() - began:.0f} s")


def ready_judging(install: Install, timeout_s: float = 400) -> dict[str, Any]:
    """`competition judging --json` once every run has its verdict."""
    deadline = time.monotonic() + timeout_s
    while True:
        body = json.loads(command(install.env, "competition", "judging", "spring-sprint", "--json"))
        if body["status"] == "ready":
            return dict(body)
        assert time.monotonic() < deadline, body
        time.sleep(3)


def judging_runs(install: Install) -> dict[int, int]:
    """Each judging run (a submission) with the entry it judged."""
    with install.database() as engine, engine.connect() as db:
        return dict(db.execute(select(JudgingRun.submission_id, JudgingRun.entry_id)).all())
