"""Every report the service has ever stored still reads: through the one accessor
(server/submissions/reports.py), on the submission's API body and on its page. The shapes
below are those `git log -p grader/report.py server/submissions/schemas.py` shows were
written: a first report of plain dicts, cases without runner_time or profile, reports from
before phases, files, cases_wall_s, device_peaks' cache_bytes or the worker's fingerprint,
the results step's own error for an invalid report (no problem, mode "" and device ""), a
worker's failure with no cases, keys no longer known, today's, and a multi-rank profile
(one profile per rank)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from grader.report import CaseKind, Mode, Report, Status
from server.db import session_scope
from server.models import Submission
from server.submissions import reports
from tests.server.conftest import Account, add_submission
from tests.server.web_client import HTML

pytestmark = pytest.mark.anyio

TIME_OF_OLD = {"median_s": 2e-3, "mean_s": 2.1e-3, "min_s": 1.9e-3, "cv": 0.01, "samples": 12}
TIME_NOW = {
    **TIME_OF_OLD,
    "p10_s": 1.95e-3,
    "p25_s": 1.97e-3,
    "p75_s": 2.05e-3,
    "p90_s": 2.2e-3,
    "iqr_over_median": 0.04,
    "sm_clock_mhz": 1980.0,
    "harness_per_call_s": 2e-3,
    "harness_floor_s": 1.9e-3,
    "calls_per_batch": 1,
    "batches": 40,
    "harness_clock": "windows",
    "window_cost_s": 1e-6,
    "ranked_by": "grader",
}
CASE_OF_OLD = {
    "kind": "benchmark",
    "params": {"size": 1024},
    "status": "passed",
    "message": "",
    "time": TIME_OF_OLD,
    "roofline": {"bytes": 1e6, "flops": 0.0, "floor_s": 1e-3, "sol_fraction": 0.5},
}
FIRST: dict[str, Any] = {
    "status": "passed",
    "problem": "vectoradd",
    "mode": "leaderboard",
    "device": "cpu",
    "device_name": "",
    "device_type": "",
    "score": 2e-3,
    "message": "all cases passed",
    "flags": [],
    "cases": [CASE_OF_OLD],
    "stdout": "",
    "stderr": "",
    "wall_s": 3.0,
}
WITH_PEAKS = {**FIRST, "device_peaks": {"copy_bytes_per_s": 1e9, "matmul_flops_per_s": 1e12}}
WITH_PHASES = {
    **WITH_PEAKS,
    "phases": {"load": 0.5, "checks": 0.1},
    "cases": [{**CASE_OF_OLD, "runner_time": None}],
}
WITH_PROFILE = {
    **WITH_PHASES,
    "mode": "profile",
    "score": None,
    "files": {"profile.ncu-rep": {"bytes": 3100}},
    "cases": [
        {
            **CASE_OF_OLD,
            "time": None,
            "roofline": None,
            "profile": {
                "tool": "torch.profiler",
                "why_not_ncu": "Nsight Compute (ncu) is not installed on this worker",
                "calls": 3,
                "wall_us_per_call": 12.5,
                "rows": [{"name": "aten::add", "device_type": "CPU", "count": 3}],
            },
        }
    ],
}
TODAY = {
    **WITH_PHASES,
    "device_peaks": {
        "copy_bytes_per_s": 1e9,
        "matmul_flops_per_s": 1e12,
        "matmul_dtype": "float32",
        "cache_bytes": 3e7,
    },
    "cases_wall_s": 2.5,
    "files": {},
    "cases": [
        {
            **CASE_OF_OLD,
            "time": TIME_NOW,
            "runner_time": {
                "median_s": 1.5e-3,
                "min_s": 1.4e-3,
                "cv": 0.02,
                "iqr_over_median": 0.03,
                "samples": 40,
                "sm_clock_mhz": 1980.0,
            },
            "roofline": {"bytes": 1e6, "flops": 0.0, "measured": True, "sol_fraction": 0.5},
            "profile": None,
        }
    ],
}
# The results step's own verdict on a report that did not validate (GradingReport's
# defaults), and a worker's failure of its own, as each was written.
INVALID_OF_OLD = {
    "status": "error",
    "problem": "",
    "mode": "",
    "device": "",
    "message": "the worker returned an invalid report (status: Input should be ...)",
    "flags": ["invalid_report"],
    "cases": [],
}
WORKER_FAILURE_OF_OLD = {
    "status": "error",
    "score": None,
    "message": "the grader failed on this worker (RuntimeError)",
    "flags": ["grader_failure"],
    "cases": [],
}
WITH_UNKNOWN_KEYS = {
    **FIRST,
    "retired_field": 1,
    "cases": [{**CASE_OF_OLD, "old_note": "x", "time": {**TIME_OF_OLD, "std_s": 1e-4}}],
}
FINGERPRINT = {
    "device_name": "NVIDIA H200",
    "torch": "2.9.0",
    "gpu_uuid": "GPU-6f1c4b1e-0000-0000-0000-000000000000",
    "driver": "570.124.06",
    "cuda": "12.8",
    "triton": "3.5.0",
}
BEFORE_FINGERPRINTS = TODAY
TODAY = {**BEFORE_FINGERPRINTS, "fingerprint": FINGERPRINT}
# Profile mode on a multi-rank problem: the case's own profile is null, and each rank's
# torch.profiler table names its rank.
RANK_PROFILES = {
    **TODAY,
    "mode": "profile",
    "score": None,
    "cases": [
        {
            **CASE_OF_OLD,
            "time": None,
            "roofline": None,
            "profile": None,
            "rank_profiles": [
                {
                    **WITH_PROFILE["cases"][0]["profile"],
                    "why_not_ncu": "a CPU worker: Nsight Compute profiles CUDA kernels only",
                    "rank": rank,
                }
                for rank in range(2)
            ],
        }
    ],
}

SHAPES = {
    "first": FIRST,
    "with device_peaks": WITH_PEAKS,
    "with phases and runner_time": WITH_PHASES,
    "profile mode with files": WITH_PROFILE,
    "before fingerprints": BEFORE_FINGERPRINTS,
    "today": TODAY,
    "profile mode on several ranks": RANK_PROFILES,
    "invalid report of old": INVALID_OF_OLD,
    "worker failure with no cases": WORKER_FAILURE_OF_OLD,
    "with keys no longer known": WITH_UNKNOWN_KEYS,
}


def stored_as(user_name: str, raw: dict[str, Any]) -> int:
    mode = raw.get("mode") or "leaderboard"
    sid = add_submission(user_name, mode=mode)
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        submission.status = raw["status"]
        submission.score = raw.get("score") if raw["status"] == Status.PASSED else None
        submission.message = raw.get("message", "")
        submission.flags = list(raw.get("flags", []))
        submission.report = raw
    return sid


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_stored_report_of_every_shape_reads_and_renders(
    shape: str, client: httpx.AsyncClient, browser: httpx.AsyncClient, alice: Account
) -> None:
    raw = SHAPES[shape]
    sid = stored_as(alice.name, raw)
    with session_scope() as session:
        submission = session.get(Submission, sid)
        assert submission is not None
        report = reports.stored(submission)
    assert isinstance(report, Report)
    assert report.status == raw["status"] and report.message == raw.get("message", "")
    assert report.problem == "vectoradd" and report.mode in Mode
    assert len(report.cases) == len(raw["cases"])
    for case in report.cases:
        assert case.kind == CaseKind.BENCHMARK and case.params == {"size": 1024}
        if case.time is not None:
            assert case.time.median_s == 2e-3 and case.time.spread is not None
    if raw["cases"] and raw["cases"][0].get("roofline"):
        assert report.sol_fraction == pytest.approx(0.5)

    body = (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).json()
    assert body["status"] == raw["status"] and len(body["cases"]) == len(raw["cases"])
    for shown, kept in zip(body["cases"], raw["cases"], strict=True):
        assert shown["params"] == kept["params"] and shown["status"] == kept["status"]
        if kept.get("time"):
            assert shown["time"]["median_s"] == kept["time"]["median_s"]
    assert body["files"] == raw.get("files", {})
    if "fingerprint" in raw:
        clocks = [case["time"]["sm_clock_mhz"] for case in raw["cases"] if case["time"]]
        assert body["fingerprint"] == {
            **raw["fingerprint"],
            "sm_clock_mhz": [min(clocks), max(clocks)] if clocks else None,
        }
    else:
        assert body["fingerprint"] is None
    if shape == "today":
        # Today's report reads on the API as the worker wrote it, key for key.
        assert body["cases"] == raw["cases"]
    for case, kept in zip(report.cases, raw["cases"], strict=True):
        ranks = [profile["rank"] for profile in kept.get("rank_profiles") or []]
        assert [profile.rank for profile in case.rank_profiles or []] == ranks

    page = await browser.get(f"/submissions/{sid}", headers={**HTML, **alice.headers})
    assert page.status_code == 200
    if raw["cases"]:
        assert "benchmark 0" in page.text


def test_a_worker_report_with_unknown_keys_is_taken() -> None:
    """A worker newer than the service may send keys it does not know yet: they are
    ignored, never a reason to refuse the report."""
    report = reports.parse({**TODAY, "new_in_a_later_grader": True})
    assert report.cases[0].runner_time is not None
    assert report.cases[0].runner_time.median_s == 1.5e-3
    assert report.to_dict()["cases"][0]["time"] == TIME_NOW


async def test_the_api_schema_says_what_a_case_is(client: httpx.AsyncClient) -> None:
    schemas = (await client.get("/openapi.json")).json()["components"]["schemas"]
    out = schemas.get("SubmissionOut") or schemas["SubmissionOut-Output"]
    assert out["properties"]["cases"]["items"] == {"$ref": "#/components/schemas/CaseResult"}
    case = schemas["CaseResult"]["properties"]
    assert {"kind", "params", "status", "message", "time", "roofline", "profile"} <= set(case)
    assert "median_s" in schemas["CaseTime"]["properties"]
    assert "sol_fraction" in schemas["Roofline"]["properties"]
