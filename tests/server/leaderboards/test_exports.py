"""Exports of a problem's leaderboard and submissions as CSV and Parquet: admins only, the
right content type and file name, and rows that read back as what the database holds."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import httpx
import pyarrow.parquet as pq
import pytest

from server.db import session_scope
from server.models import Submission
from tests.server.conftest import Account
from tests.server.rows import submission_row
from tests.server.web.test_web_pages import graded, new_problem
from tests.server.web_client import HTML, make_user, sign_in

pytestmark = pytest.mark.anyio

SUBMISSION_COLUMNS = [
    "id",
    "user",
    "mode",
    "gpu",
    "status",
    "score",
    "problem_version",
    "hidden",
    "hacked",
    "created_at",
    "finished_at",
    "code_sha256",
]


def competition(problem: str) -> tuple[list[str], list[int]]:
    """Two competitors' ranked submissions, one slower retry, and one queued test run."""
    new_problem(problem)
    fast_name, fast = make_user()
    slow_name, slow = make_user()
    ids = [
        graded(fast, problem, "fast", score=1e-5),
        graded(slow, problem, "slow", score=3e-5),
        graded(fast, problem, "retry", score=2e-5),
    ]
    with session_scope() as session:
        first = session.get(Submission, ids[0])
        assert first is not None
        queued = submission_row(
            first.user_id, first.problem_id, mode="test", code="secret code", code_sha256="f" * 64
        )
        session.add(queued)
        session.flush()
        ids.append(queued.id)
    return [fast_name, slow_name], ids


def read_csv(response: httpx.Response) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(response.text)))


async def export(
    client: httpx.AsyncClient, admin: Account, problem: str, filename: str
) -> httpx.Response:
    response = await client.get(
        f"/api/v1/problems/{problem}/export/{filename}", headers=admin.headers
    )
    assert response.status_code == 200, response.text
    return response


async def test_leaderboard_as_csv_and_parquet(client: httpx.AsyncClient, admin: Account) -> None:
    (fast, slow), ids = competition("exported")

    as_csv = await export(client, admin, "exported", "leaderboard.csv")
    assert as_csv.headers["content-type"] == "text/csv; charset=utf-8"
    assert as_csv.headers["content-disposition"] == (
        'attachment; filename="exported_leaderboard.csv"'
    )
    rows = read_csv(as_csv)
    assert [(r["gpu"], r["rank"], r["user"], r["submission_id"]) for r in rows] == [
        ("cpu", "1", fast, str(ids[0])),
        ("cpu", "2", slow, str(ids[1])),
    ]
    assert float(rows[0]["score"]) == 1e-5
    assert datetime.fromisoformat(rows[0]["submitted_at"]).tzinfo is not None

    as_parquet = await export(client, admin, "exported", "leaderboard.parquet")
    assert as_parquet.headers["content-type"] == "application/vnd.apache.parquet"
    assert 'filename="exported_leaderboard.parquet"' in as_parquet.headers["content-disposition"]
    table = pq.read_table(io.BytesIO(as_parquet.content))
    assert table.column_names == [
        "gpu",
        "rank",
        "user",
        "score",
        "sol_fraction",
        "submission_id",
        "submitted_at",
    ]
    records = table.to_pylist()
    assert [(r["rank"], r["user"], r["score"], r["submission_id"]) for r in records] == [
        (1, fast, 1e-5, ids[0]),
        (2, slow, 3e-5, ids[1]),
    ]
    assert records[0]["submitted_at"].tzinfo is not None


async def test_submissions_as_csv_and_parquet(client: httpx.AsyncClient, admin: Account) -> None:
    _, ids = competition("exportsubs")
    with session_scope() as session:
        stored = {sid: session.get(Submission, sid) for sid in ids}
        expected = {
            sid: (s.user.name, s.mode, s.status, s.score, s.code_sha256, s.created_at)
            for sid, s in stored.items()
            if s is not None
        }

    as_csv = await export(client, admin, "exportsubs", "submissions.csv")
    assert as_csv.headers["content-type"] == "text/csv; charset=utf-8"
    assert 'filename="exportsubs_submissions.csv"' in as_csv.headers["content-disposition"]
    assert "secret code" not in as_csv.text and "code" not in as_csv.text.split("\n")[0].split(",")
    rows = read_csv(as_csv)
    assert list(rows[0]) == SUBMISSION_COLUMNS
    assert [int(r["id"]) for r in rows] == ids
    for row in rows:
        user, mode, status, score, sha, created = expected[int(row["id"])]
        assert (row["user"], row["mode"], row["status"], row["code_sha256"]) == (
            user,
            mode,
            status,
            sha,
        )
        assert row["score"] == ("" if score is None else str(score))
        assert row["gpu"] == "cpu" and row["problem_version"] == "1"
        assert datetime.fromisoformat(row["created_at"]) == created
    assert rows[-1]["status"] == "queued" and rows[-1]["finished_at"] == ""
    assert rows[0]["hidden"] == "false"

    as_parquet = await export(client, admin, "exportsubs", "submissions.parquet")
    assert as_parquet.headers["content-type"] == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(as_parquet.content))
    assert table.column_names == SUBMISSION_COLUMNS
    records = table.to_pylist()
    assert [r["id"] for r in records] == ids
    for record in records:
        user, mode, status, score, sha, created = expected[record["id"]]
        assert (record["user"], record["mode"], record["status"]) == (user, mode, status)
        assert (record["score"], record["code_sha256"]) == (score, sha)
        assert record["created_at"] == created.astimezone(UTC)
    assert records[-1]["finished_at"] is None and records[-1]["score"] is None


async def test_an_empty_problem_exports_headers_only(
    client: httpx.AsyncClient, admin: Account
) -> None:
    new_problem("exportempty")
    as_csv = await export(client, admin, "exportempty", "submissions.csv")
    assert as_csv.text.strip() == ",".join(SUBMISSION_COLUMNS)
    as_parquet = await export(client, admin, "exportempty", "leaderboard.parquet")
    table = pq.read_table(io.BytesIO(as_parquet.content))
    assert table.num_rows == 0 and "score" in table.column_names


async def test_exports_are_for_admins(client: httpx.AsyncClient, alice: Account) -> None:
    path = "/api/v1/problems/vectoradd/export/submissions.csv"
    assert (await client.get(path)).status_code == 401
    forbidden = await client.get(path, headers=alice.headers)
    assert forbidden.status_code == 403 and forbidden.json()["error"] == "forbidden"


async def test_unknown_problem_or_export(client: httpx.AsyncClient, admin: Account) -> None:
    missing = await client.get(
        "/api/v1/problems/nope/export/leaderboard.csv", headers=admin.headers
    )
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    wrong = await client.get(
        "/api/v1/problems/vectoradd/export/leaderboard.xlsx", headers=admin.headers
    )
    assert wrong.status_code in (404, 422) and "error" in wrong.json()


async def test_admin_problems_page_links_the_exports(browser: httpx.AsyncClient) -> None:
    new_problem("exportlinks")
    _, token = make_user()
    graded(token, "exportlinks", "linked")
    await sign_in(browser, "boss", admin=True)
    page = await browser.get("/admin/problems", headers=HTML)
    for filename in ("leaderboard.csv", "leaderboard.parquet", "submissions.csv"):
        assert f'href="/admin/problems/exportlinks/export/{filename}"' in page.text
    download = await browser.get("/admin/problems/exportlinks/export/submissions.csv")
    assert download.status_code == 200
    assert download.headers["content-type"] == "text/csv; charset=utf-8"
    assert len(read_csv(download)) == 1
    parquet = await browser.get("/admin/problems/exportlinks/export/leaderboard.parquet")
    assert pq.read_table(io.BytesIO(parquet.content)).num_rows == 1
