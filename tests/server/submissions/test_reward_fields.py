"""A submission's body carries its error class and its flags' codes once it is graded."""

from __future__ import annotations

import httpx
import pytest

from server.worker import recorders
from tests.server.conftest import Account, add_submission

pytestmark = pytest.mark.anyio

SCREENED = "screening: line 1: imports ctypes: native calls act where this screening cannot see"


async def test_a_crash_reads_as_runtime_with_its_flags_coded(
    client: httpx.AsyncClient, alice: Account
) -> None:
    sid = add_submission(alice.name, mode="test")
    queued = (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).json()
    assert (queued["error_class"], queued["flag_codes"]) == (None, [])
    report = {
        "status": "error",
        "problem": "vectoradd",
        "mode": "test",
        "device": "cpu",
        "message": "custom_kernel raised:\nValueError: boom",
        "flags": [SCREENED],
    }
    recorders.record_report({"submission_id": sid, "worker": "host:1", "report": report})
    body = (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).json()
    assert body["error_class"] == "runtime"
    assert body["flags"] == [SCREENED]
    assert body["flag_codes"] == ["screening.native"]


async def test_a_report_that_does_not_validate_is_infrastructure(
    client: httpx.AsyncClient, alice: Account
) -> None:
    sid = add_submission(alice.name, mode="test")
    recorders.record_report(
        {"submission_id": sid, "worker": "host:1", "report": {"status": "awesome"}}
    )
    body = (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).json()
    assert (body["status"], body["error_class"]) == ("error", "infrastructure")
    assert body["flag_codes"] == ["invalid_report"]
