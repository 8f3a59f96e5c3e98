"""A live problem's next version: staged beside the live one while the workers validate it,
so competitors keep reading and submitting to the live version, and put in its place only
when its validation round passes. A problem that is not live has nothing to keep serving:
its new version replaces it at once (server/problems/service.py upsert_problem)."""

from __future__ import annotations

import math
import secrets
from typing import Any

from grader.problem import Problem as GraderProblem
from server.models import Problem, utcnow

# The staged version's own status: being validated, or failed (the live one still serves).
VALIDATING = "validating"
INVALID = "invalid"
# What happens to the live leaderboard when the staged version goes live (a choice of
# server/problems/service.py, kept with the version until then).
ARCHIVE = "archive"


def stage(
    problem: Problem,
    loaded: GraderProblem,
    digest: str,
    gpu_types: list[str],
    solutions: dict[str, str] | None,
    leaderboard: str,
) -> None:
    """Keep ``loaded`` as the live ``problem``'s next version. Files equal to the live
    version's withdraw a staged one (the organizers went back to what serves); equal to the
    staged version's, only its example solutions may change."""
    if digest == problem.files_sha256:
        problem.candidate = None
        if solutions is not None:
            problem.solutions = solutions
        return
    staged = problem.candidate
    if staged is not None and staged["files_sha256"] == digest:
        if solutions is not None and staged["solutions"] != solutions:
            problem.candidate = {**staged, "solutions": solutions}
        return
    problem.candidate = {
        # A staged version that never went live served no one: its number is used again.
        "version": problem.version + 1,
        "description": loaded.description,
        "files": loaded.files,
        "files_sha256": digest,
        "gpu_types": gpu_types,
        "solutions": dict(problem.solutions or {}) if solutions is None else solutions,
        "leaderboard": leaderboard,
        "status": VALIDATING,
        "test_cases_timeouts": {},
    }


def staged(problem: Problem) -> Problem | None:
    """The staged version as a problem in no session (to validate it, or to show its
    device types), or None when there is none."""
    candidate: dict[str, Any] | None = problem.candidate
    if not candidate:
        return None
    return Problem(
        name=problem.name,
        description=candidate["description"],
        files=candidate["files"],
        files_sha256=candidate["files_sha256"],
        version=candidate["version"],
        gpu_types=list(candidate["gpu_types"]),
        solutions=dict(candidate["solutions"]),
        status=candidate["status"],
        test_cases_timeouts=dict(candidate.get("test_cases_timeouts") or {}),
        # An author's new version is as untrusted as its live one (loaded.problem_files).
        owner_id=problem.owner_id,
    )


def newest(problem: Problem) -> Problem:
    """The version a validation round is for: the staged one if any, else the live one."""
    return staged(problem) or problem


def newest_version(problem: Problem) -> int:
    return int(problem.candidate["version"]) if problem.candidate else problem.version


def of_version(problem: Problem, version: int) -> Problem:
    """The problem as it is at ``version``: its staged version or its current one."""
    candidate = staged(problem)
    return candidate if candidate is not None and candidate.version == version else problem


def set_status(problem: Problem, status: str) -> None:
    """The staged version's status (assigned whole: the JSON column does not track edits)."""
    if problem.candidate is not None:
        problem.candidate = {**problem.candidate, "status": status}


def set_gpu_types(problem: Problem, gpu_types: list[str]) -> None:
    """The organizers' device types hold for the staged version too once it goes live."""
    if problem.candidate is not None:
        problem.candidate = {**problem.candidate, "gpu_types": list(gpu_types)}


def keep_test_cases_timeout(problem: Problem, version: int, gpu_type: str, seconds: Any) -> None:
    """Keep test mode's short limit that `gpu_type`'s validation derived for `version` (the
    staged one or the live one) with that version; columns are assigned whole, since the
    JSON columns do not track edits."""
    if not isinstance(seconds, int | float) or not math.isfinite(seconds) or seconds <= 0:
        return
    candidate = problem.candidate
    if candidate is not None and int(candidate["version"]) == version:
        kept = {**(candidate.get("test_cases_timeouts") or {}), gpu_type: float(seconds)}
        problem.candidate = {**candidate, "test_cases_timeouts": kept}
    elif problem.version == version:
        problem.test_cases_timeouts = {
            **(problem.test_cases_timeouts or {}),
            gpu_type: float(seconds),
        }


def promote(problem: Problem) -> None:
    """The staged version, validated, replaces the live one: competitors see and submit to
    it from now on, with a new secret seed (ranked inputs never carry over)."""
    candidate = problem.candidate
    assert candidate is not None, "no staged version to put live"
    problem.description = candidate["description"]
    problem.files = candidate["files"]
    problem.files_sha256 = candidate["files_sha256"]
    problem.gpu_types = list(candidate["gpu_types"])
    problem.solutions = dict(candidate["solutions"])
    problem.version = int(candidate["version"])
    problem.test_cases_timeouts = dict(candidate.get("test_cases_timeouts") or {})
    problem.secret_seed = secrets.randbits(62)
    problem.updated_at = utcnow()
    if candidate["leaderboard"] == ARCHIVE:
        problem.leaderboard_from_version = problem.version
    problem.candidate = None
