"""Response bodies of the problems API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class ProblemSummary(BaseModel):
    name: str
    version: int
    gpu_types: list[str]
    updated_at: datetime


class ProblemOut(ProblemSummary):
    description: str
    tests: list[dict[str, Any]]
    benchmarks: list[dict[str, Any]]
    template: str | None
    created: bool | None = None
