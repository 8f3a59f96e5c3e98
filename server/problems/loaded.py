"""A problem's folder as the grader reads it (task.yml parsed, cases, limits), kept per
content: reading it costs more than the rest of a submission's intake or a problem page,
and a problem's files change only with a new version."""

from __future__ import annotations

from typing import Any

from grader.problem import Problem as GraderProblem
from grader.problem import problem_from_files
from server.cache import Lru
from server.models import Problem

_loaded: Lru[GraderProblem] = Lru(256)


def loaded(problem: Problem) -> GraderProblem:
    return _loaded.get_or_make(
        (problem.name, problem.files_sha256),
        lambda: problem_from_files(problem.name, problem.files),
    )


def problem_files(problem: Problem) -> dict[str, Any]:
    """A problem as a worker is sent it, to grade or validate on: its name, version and
    files (nothing of the database's beyond that: a worker holds no credentials), and
    whether its reference is an author's, run only in a sandbox (grader/untrusted.py)."""
    return {
        "name": problem.name,
        "version": problem.version,
        "files": problem.files,
        "untrusted_reference": problem.owner_id is not None,
    }


def device_kind(gpu_type: str) -> str:
    """The kind of device a device type names ("cpu" or "cuda"), as the grader chooses a
    problem's cases by it: every device type but `cpu` is a GPU's."""
    return "cpu" if gpu_type == "cpu" else "cuda"


def gpus_for(problem: Problem, gpu_type: str) -> int:
    """The GPUs one grading of the problem's current version holds on this device type: more
    than one only for a problem whose cases span ranks, on a GPU (grader/problem.py)."""
    kind = device_kind(gpu_type)
    return 1 if kind == "cpu" else loaded(problem).gpus_for(kind)
