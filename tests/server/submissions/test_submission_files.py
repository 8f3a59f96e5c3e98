"""A profile's Nsight Compute report: from the grade job to the results step, through the
recorder's checks into the database once, and back out to those who may read the code, on
the API and the submission page."""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import httpx
import pytest
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from grader.report import PROFILE_FILE, CaseKind, CaseResult, Mode, Profile, Report, Status
from server.db import session_scope
from server.models import Problem, Submission, SubmissionFile, User
from server.outbox import task_names
from server.settings import get_settings
from server.submissions import files, service
from server.users.repository import get_user_by_name
from server.worker import gpu, recorders
from tests.server.conftest import Account, add_submission
from tests.server.web_client import HTML, log_in, make_user, sign_in
from tests.services import migrated_database

pytestmark = pytest.mark.anyio

NCU_REPORT = b"NVIDIA Nsight Compute report\x00\x01\x02" * 100
KERNEL = "void my_fused_add_kernel<float, 256>(float const*, float const*, float*, int)"
NCU_PROFILE: dict[str, Any] = {
    "tool": "nsight-compute",
    "version": "2025.3.1",
    "calls": 3,
    "kernels": [
        {
            "name": KERNEL,
            "launches": 3,
            "duration_us": 12.345678901,
            "total_us": 37.1,
            "memory_pct": 87.6,
            "compute_pct": 12.3,
            "occupancy_pct": 71.9,
            "registers_per_thread": 32,
            "shared_bytes_per_block": 4096,
            "block_size": 256,
            "grid_size": 1024,
            "stalls": [
                {"reason": "long_scoreboard", "per_issue": 3.25},
                {"reason": "wait", "per_issue": 1.5},
            ],
        },
        {
            "name": "elementwise_kernel",
            "launches": 1,
            "duration_us": None,
            "total_us": None,
            "memory_pct": None,
            "compute_pct": None,
            "occupancy_pct": None,
            "registers_per_thread": None,
            "shared_bytes_per_block": None,
            "block_size": None,
            "grid_size": None,
            "stalls": [],
        },
    ],
}


def profiled_report(files: dict[str, Any]) -> dict[str, Any]:
    """A passed profile-mode report as a GPU worker with Nsight Compute sends it."""
    return {
        "status": "passed",
        "problem": "vectoradd",
        "mode": "profile",
        "device": "cuda",
        "device_name": "NVIDIA H200",
        "message": "all cases passed",
        "cases": [
            {
                "kind": "benchmark",
                "params": {"size": 8192},
                "status": "passed",
                "profile": NCU_PROFILE,
            }
        ],
        "files": files,
    }


def new_submission(user_name: str, *, mode: str = "profile") -> int:
    return add_submission(user_name, mode=mode, code="import torch\n")


def send_file(sid: int, content: bytes | str, name: str = PROFILE_FILE) -> None:
    """As the results step records a file a worker sent."""
    encoded = content if isinstance(content, str) else base64.b64encode(content).decode()
    recorders.record_file(
        {"submission_id": sid, "worker": "gpu-host:1.0", "name": name, "content_b64": encoded}
    )


def send_report(sid: int, report: dict[str, Any]) -> None:
    recorders.record_report({"submission_id": sid, "worker": "gpu-host:1.0", "report": report})


def stored_files(sid: int) -> list[tuple[str, bytes, int, str]]:
    with session_scope() as db:
        rows = db.scalars(select(SubmissionFile).where(SubmissionFile.submission_id == sid))
        return [(row.name, row.content, row.size, row.sha256) for row in rows]


def test_a_file_is_kept_once_with_its_size_and_digest(alice: Account) -> None:
    sid = new_submission(alice.name)
    send_file(sid, NCU_REPORT)
    send_file(sid, NCU_REPORT)  # the same delivery again
    digest = hashlib.sha256(NCU_REPORT).hexdigest()
    assert stored_files(sid) == [(PROFILE_FILE, NCU_REPORT, len(NCU_REPORT), digest)]


@pytest.mark.parametrize(
    ("name", "content", "why"),
    [
        ("../../etc/passwd", base64.b64encode(b"x").decode(), "a file named '../../etc/passwd'"),
        ("profile.ncu-rep.exe", base64.b64encode(b"x").decode(), "a file named"),
        (PROFILE_FILE, "not base64!", "not base64"),
        (PROFILE_FILE, "QUJDRA", "not base64"),  # its padding cut off
    ],
)
def test_a_file_of_another_name_or_not_base64_is_refused(
    alice: Account, caplog: pytest.LogCaptureFixture, name: str, content: str, why: str
) -> None:
    sid = new_submission(alice.name)
    with caplog.at_level(logging.WARNING, logger=recorders.__name__):
        send_file(sid, content, name=name)
    assert stored_files(sid) == []
    assert why in caplog.text and "gpu-host:1.0" in caplog.text


def test_a_file_over_the_size_limit_is_refused(
    alice: Account, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "max_profile_file_bytes", 1000)
    sid = new_submission(alice.name)
    with caplog.at_level(logging.WARNING, logger=recorders.__name__):
        send_file(sid, b"x" * 1001)
        send_file(sid, b"x" * 100_000)  # refused before it is decoded
    assert stored_files(sid) == []
    assert "1001 bytes, over 1000" in caplog.text and "over 1000 bytes" in caplog.text
    send_file(sid, b"x" * 1000)
    assert [size for _, _, size, _ in stored_files(sid)] == [1000]


def test_a_file_for_no_profile_run_is_dropped(alice: Account) -> None:
    send_file(2**31 - 1, NCU_REPORT)  # no such submission: nothing to keep it for
    with session_scope() as db:
        assert db.get(SubmissionFile, (2**31 - 1, PROFILE_FILE)) is None
    ranked = new_submission(alice.name, mode="leaderboard")
    send_file(ranked, NCU_REPORT)
    assert stored_files(ranked) == []


def test_a_job_graded_twice_keeps_the_file_of_the_report_recorded(alice: Account) -> None:
    sid = new_submission(alice.name)
    send_file(sid, b"first grading, whose worker died before its report")
    send_file(sid, b"second grading")
    assert stored_files(sid)[0][1] == b"second grading"
    send_report(sid, profiled_report({PROFILE_FILE: {"bytes": 14}}))
    send_file(sid, b"a third grading, whose report is dropped as a duplicate")
    assert stored_files(sid)[0][1] == b"second grading"

    late = new_submission(alice.name)
    send_report(late, profiled_report({PROFILE_FILE: {"bytes": len(NCU_REPORT)}}))
    send_file(late, NCU_REPORT)  # another results worker took the report first
    assert stored_files(late)[0][1] == NCU_REPORT


def test_a_rerun_forgets_the_old_gradings_file(alice: Account, admin: Account) -> None:
    sid = new_submission(alice.name)
    send_file(sid, NCU_REPORT)
    send_report(sid, profiled_report({PROFILE_FILE: {"bytes": len(NCU_REPORT)}}))
    with session_scope() as db:
        organizer = get_user_by_name(db, admin.name)
        assert organizer is not None
        service.moderate(db, sid, "rerun", organizer)
    assert stored_files(sid) == []


@pytest.fixture(params=["sqlite", "postgresql"])
def database_of_its_own(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Session]:
    with migrated_database(request.param, tmp_path) as db:
        yield db


def test_the_upsert_holds_on_both_databases(database_of_its_own: Session) -> None:
    """Every byte value survives (a BLOB, a bytea); a file sent again replaces the stored
    one only before the verdict; the file goes with its submission."""
    db = database_of_its_own
    user = User(name="ann")
    problem = Problem(name="p", files={}, files_sha256="0" * 64, secret_seed=1, gpu_types=[])
    db.add_all([user, problem])
    db.flush()
    submission = Submission(
        user_id=user.id, problem_id=problem.id, problem_version=1, code="x",
        code_sha256="0" * 64, mode="profile", gpu_type="h200", status="running", flags=[],
    )  # fmt: skip
    db.add(submission)
    db.commit()
    every_byte = bytes(range(256)) * 64

    def kept() -> bytes:
        db.expire_all()
        found = files.readable_file(db, submission.id, PROFILE_FILE, user)
        return found.content

    assert files.record(db, submission.id, PROFILE_FILE, b"an earlier grading's")
    assert files.record(db, submission.id, PROFILE_FILE, every_byte)
    db.commit()
    assert kept() == every_byte
    submission.status = "passed"
    db.commit()
    assert files.record(db, submission.id, PROFILE_FILE, b"a duplicate grading's")
    db.commit()
    assert kept() == every_byte
    db.execute(delete(Submission).where(Submission.id == submission.id))
    db.commit()
    assert db.scalars(select(SubmissionFile)).all() == []


def test_the_grade_job_sends_its_files_before_its_report(alice: Account) -> None:
    """What the worker's grade task hands the results step, in order, recorded there: the
    report names the file and its size, and the file arrives whole."""
    sid = new_submission(alice.name)
    graded = Report(
        status=Status.PASSED,
        problem="vectoradd",
        mode=Mode.PROFILE,
        device="cuda",
        cases=[
            CaseResult(
                kind=CaseKind.BENCHMARK,
                params={},
                status=Status.PASSED,
                profile=Profile(**NCU_PROFILE),
            )
        ],
    )
    graded.add_file(PROFILE_FILE, NCU_REPORT)
    delivered: list[tuple[str, dict[str, Any]]] = []
    with (
        patch.object(gpu, "grade_submission", lambda *args, **kwargs: graded),
        patch.object(gpu, "problem_from_files", lambda *args: None),
        patch.object(gpu, "deliver", lambda task, result: delivered.append((task, result))),
    ):
        gpu.grade(sid, {"problem": {"name": "vectoradd", "files": {}}, "code": "", "mode": "x"})
    assert [task for task, _ in delivered] == [task_names.RECORD_FILE, task_names.RECORD_REPORT]
    # The report carries the file's size, not its bytes.
    assert delivered[1][1]["report"]["files"] == {PROFILE_FILE: {"bytes": len(NCU_REPORT)}}
    assert delivered[0][1]["content_b64"] not in repr(delivered[1][1])
    recorders.record_file({**delivered[0][1], "worker": "gpu-host:1.0"})
    recorders.record_report({**delivered[1][1], "worker": "gpu-host:1.0"})
    assert stored_files(sid)[0][1] == NCU_REPORT
    with session_scope() as db:
        submission = db.get(Submission, sid)
        assert submission is not None and submission.report is not None
        assert submission.report["files"] == {PROFILE_FILE: {"bytes": len(NCU_REPORT)}}


def graded_with_file(author: str) -> int:
    sid = new_submission(author)
    send_file(sid, NCU_REPORT)
    send_report(sid, profiled_report({PROFILE_FILE: {"bytes": len(NCU_REPORT)}}))
    return sid


async def test_the_author_and_admins_download_the_report_and_nobody_else_learns_of_it(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    sid = graded_with_file(alice.name)
    path = f"/api/v1/submissions/{sid}/files/{PROFILE_FILE}"
    for reader in (alice, admin):
        got = await client.get(path, headers=reader.headers)
        assert got.status_code == 200, got.text
        assert got.content == NCU_REPORT
        assert got.headers["content-type"] == "application/octet-stream"
        assert got.headers["content-disposition"] == (
            f'attachment; filename="submission-{sid}-profile.ncu-rep"'
        )
    body = await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)
    assert body.json()["files"] == {PROFILE_FILE: {"bytes": len(NCU_REPORT)}}
    # Full precision, as the worker measured it.
    assert body.json()["cases"][0]["profile"]["kernels"][0]["duration_us"] == 12.345678901

    unknown = await client.get(
        f"/api/v1/submissions/{2**31 - 1}/files/{PROFILE_FILE}", headers=alice.headers
    )
    assert unknown.status_code == 404
    _, other_token = make_user()
    for headers in ({"Authorization": f"Bearer {other_token}"}, {}):
        refused = await client.get(path, headers=headers)
        assert refused.status_code == 404
        assert refused.json()["detail"] == f"no submission {sid}"
        assert refused.content != NCU_REPORT


async def test_no_report_is_a_404_that_says_why(client: httpx.AsyncClient, alice: Account) -> None:
    sid = new_submission(alice.name)
    why = "Nsight Compute (ncu) is not installed on this worker"
    torch_profile = {"tool": "torch.profiler", "why_not_ncu": why, "calls": 3, "rows": []}
    report = profiled_report({})
    report["cases"][0]["profile"] = torch_profile
    send_report(sid, report)
    missing = await client.get(
        f"/api/v1/submissions/{sid}/files/{PROFILE_FILE}", headers=alice.headers
    )
    assert missing.status_code == 404
    assert missing.json()["detail"] == (
        f"submission {sid} has no Nsight Compute report (profile.ncu-rep): {why}"
    )
    assert (await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)).json()[
        "files"
    ] == {}
    other = await client.get(f"/api/v1/submissions/{sid}/files/code.py", headers=alice.headers)
    assert other.status_code == 404 and "only file is 'profile.ncu-rep'" in other.json()["detail"]


async def test_the_schema_says_the_download_is_a_binary_file(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    route = schema["paths"]["/api/v1/submissions/{submission_id}/files/{name}"]["get"]
    content = route["responses"]["200"]["content"]
    assert content == {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
    }
    assert {"404", "401"} <= set(route["responses"])


async def test_the_page_shows_the_kernels_and_links_the_report_for_its_author(
    browser: httpx.AsyncClient,
) -> None:
    author, _ = make_user()
    sid = graded_with_file(author)
    await log_in(browser, author)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    link = f'href="/submissions/{sid}/files/profile.ncu-rep"'
    assert link in page and "Download the Nsight Compute report" in page
    assert "Nsight Compute 2025.3.1" in page
    kernels = page.split('class="table profile-table kernels-table"', 1)[1].split("</table>")[0]
    first = kernels.split("<tr>")[2]  # after the head's row
    cells = [cell.split(">", 1)[1] for cell in first.split("</td>")[:-1]]
    assert cells == [
        "void my_fused_add_kernel&lt;float, 256&gt;(float const*, float const*, float*, int)",
        "3",
        "12.3 µs",
        "88%",
        "12%",
        "72%",
        "32",
        "4.0 KiB",
        "256 × 1024",
        '<span class="stall">long_scoreboard <span class="mono">3.2</span></span>'
        '<span class="stall">wait <span class="mono">1.5</span></span>',
    ]
    second = kernels.split("<tr>")[3]
    assert second.count(">—<") == 8  # a kernel the report knows little of: dashes, no error
    assert "Why no Nsight Compute profile" not in page

    download = await browser.get(f"/submissions/{sid}/files/{PROFILE_FILE}")
    assert download.status_code == 200 and download.content == NCU_REPORT
    assert "submission-" in download.headers["content-disposition"]


async def test_another_user_sees_no_profile_and_cannot_download_it(
    browser: httpx.AsyncClient,
) -> None:
    author, _ = make_user()
    sid = graded_with_file(author)
    await sign_in(browser)
    page = (await browser.get(f"/submissions/{sid}", headers=HTML)).text
    assert KERNEL.split("<")[0] not in page and "profile.ncu-rep" not in page
    refused = await browser.get(f"/submissions/{sid}/files/{PROFILE_FILE}", headers=HTML)
    assert refused.status_code == 404 and NCU_REPORT not in refused.content
