"""The grading report: what a person reads and what the server stores (JSON-safe)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

TERMINAL_STATUSES = ("passed", "failed", "error", "timeout", "rejected")


@dataclass
class CaseResult:
    kind: str  # "test" | "benchmark"
    params: dict[str, Any]
    status: str
    message: str = ""
    # median_s, mean_s, min_s, p10_s, p90_s, cv, samples, sm_clock_mhz; None when untimed.
    time: dict[str, Any] | None = None
    roofline: dict[str, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Report:
    status: str
    problem: str
    mode: str
    device: str
    device_name: str = ""
    device_type: str = ""
    # The device's measured copy bandwidth and matrix rate the floors were computed from.
    device_peaks: dict[str, Any] | None = None
    score: float | None = None
    message: str = ""
    flags: list[str] = field(default_factory=list)
    cases: list[CaseResult] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["cases"] = [case.to_dict() for case in self.cases]
        return out
