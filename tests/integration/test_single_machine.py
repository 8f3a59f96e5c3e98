"""The single-machine install end to end: `kerneljudge serve` with SQLite and the embedded
broker grades through its own worker; a user works with HTTP alone."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.integration.processes import (
    REPO_ROOT,
    TERMINAL,
    add_user,
    service_env,
    serving,
    submit,
    wait_for,
)

pytestmark = pytest.mark.integration

SOLUTIONS = REPO_ROOT / "problems" / "vectoradd" / "solutions"


def test_submit_grade_and_rank_on_one_machine(tmp_path: Path) -> None:
    env = service_env(tmp_path / "var")
    token = add_user(env, "ada")
    log = tmp_path / "serve.log"
    with serving(env, log) as base:
        honest = submit(
            base, token, "vectoradd", (SOLUTIONS / "pytorch.py").read_text(), "leaderboard"
        )
        zeros = submit(base, token, "vectoradd", (SOLUTIONS / "wrong_zeros.py").read_text(), "test")

        report = wait_for(base, token, honest, TERMINAL, 120, log)
        assert report["status"] == "passed", report["message"]
        assert report["score"] > 0
        assert report["cases"] and all(case["status"] == "passed" for case in report["cases"])
        assert report["started_at"] and report["finished_at"] and report["worker"]

        board = httpx.get(f"{base}/api/v1/leaderboards/vectoradd").json()
        assert board["entries"][0]["rank"] == 1
        assert board["entries"][0]["user"] == "ada"
        assert board["entries"][0]["submission_id"] == honest
        assert board["entries"][0]["score"] == report["score"]

        failed = wait_for(base, token, zeros, TERMINAL, 120, log)
        assert failed["status"] == "failed"
        assert failed["score"] is None
        assert "mismatch" in failed["message"].lower()
