"""Submitting through the REST API: what is accepted, and a clear 4xx for every bad request."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from sqlalchemy import select

from server.db import session_scope
from server.models import Submission
from server.submissions import service
from tests.server.conftest import Account, make_account, worker_report
from tests.server.outbox.test_outbox import HONEST, submit

pytestmark = pytest.mark.anyio


def assert_error(response: httpx.Response, status: int, code: str, *words: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == code
    for word in words:
        assert word in body["detail"], body["detail"]


async def test_json_submission_is_queued_and_readable(
    client: httpx.AsyncClient, alice: Account
) -> None:
    response = await submit(client, alice, mode="leaderboard")
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert accepted["status"] == "queued"

    read = await client.get(f"/api/v1/submissions/{accepted['id']}", headers=alice.headers)
    assert read.status_code == 200
    body = read.json()
    assert body["problem"] == "vectoradd"
    assert body["user"] == alice.name
    assert body["mode"] == "leaderboard"
    assert body["gpu"] == "cpu"
    assert body["status"] == "queued"
    assert body["queue_position"] >= 0 and body["expected_wait_s"] >= 0
    assert body["code"] == HONEST
    assert body["score"] is None
    assert body["phases"] == {}


async def test_a_graded_submission_says_where_its_time_went(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """Its wait in the queue, then the phases its report carries; no queue place once done."""
    response = await submit(client, alice)
    submission_id = response.json()["id"]
    report = worker_report("passed", phases={"runner_start": 0.01, "load": 0.2, "checks": 0.05})
    with session_scope() as session:
        service.mark_running(session, submission_id, "host:1")
        service.record_report(session, submission_id, report, "host:1")
    body = (await client.get(f"/api/v1/submissions/{submission_id}", headers=alice.headers)).json()
    assert body["status"] == "passed"
    assert body["queue_position"] is None and body["expected_wait_s"] is None
    assert body["phases"]["load"] == 0.2 and body["phases"]["checks"] == 0.05
    assert 0 <= body["phases"]["queue_wait"] < 60


async def test_multipart_file_submission(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post(
        "/api/v1/submissions",
        data={"problem": "vectoradd", "mode": "test"},
        files={"file": ("submission.py", HONEST.encode(), "text/x-python")},
        headers=alice.headers,
    )
    assert response.status_code == 202, response.text
    with session_scope() as session:
        stored = session.get(Submission, response.json()["id"])
        assert stored is not None and stored.code == HONEST and stored.mode == "test"


async def test_missing_and_bad_tokens(client: httpx.AsyncClient, database: None) -> None:
    body = {"problem": "vectoradd", "code": HONEST}
    assert_error(
        await client.post("/api/v1/submissions", json=body), 401, "not_authenticated", "Bearer"
    )
    bad = {"Authorization": "Bearer kj_not-a-real-token"}
    assert_error(
        await client.post("/api/v1/submissions", json=body, headers=bad),
        401,
        "not_authenticated",
        "unknown",
    )
    basic = {"Authorization": "Basic dXNlcjpwYXNz"}
    assert_error(
        await client.post("/api/v1/submissions", json=body, headers=basic), 401, "not_authenticated"
    )


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({"problem": "no-such-problem", "code": HONEST}, 404, "not_found", ("no-such-problem",)),
        (
            {"problem": "vectoradd", "code": HONEST, "mode": "fastest"},
            422,
            "invalid_request",
            ("mode",),
        ),
        (
            {"problem": "vectoradd", "code": HONEST, "gpu": "tpu"},
            422,
            "invalid_request",
            ("tpu", "available: cpu"),
        ),
        ({"problem": "vectoradd"}, 422, "invalid_request", ("code",)),
        ({"problem": "vectoradd", "code": "   "}, 422, "invalid_request", ("empty",)),
        (
            {"problem": "vectoradd", "code": HONEST, "colour": "red"},
            422,
            "invalid_request",
            ("colour",),
        ),
        ([1, 2, 3], 422, "invalid_request", ()),
    ],
)
async def test_invalid_json_bodies(
    client: httpx.AsyncClient,
    alice: Account,
    body: object,
    status: int,
    code: str,
    words: tuple[str, ...],
) -> None:
    response = await client.post("/api/v1/submissions", json=body, headers=alice.headers)
    assert_error(response, status, code, *words)


async def test_malformed_json(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post(
        "/api/v1/submissions",
        content=b'{"problem": "vectoradd", "code": ',
        headers={**alice.headers, "Content-Type": "application/json"},
    )
    assert_error(response, 422, "invalid_request", "not valid JSON")


async def test_non_utf8_bodies(client: httpx.AsyncClient, alice: Account) -> None:
    raw_json = b'{"problem": "vectoradd", "code": "\xff\xfe"}'
    response = await client.post(
        "/api/v1/submissions",
        content=raw_json,
        headers={**alice.headers, "Content-Type": "application/json"},
    )
    assert_error(response, 422, "invalid_request", "not valid JSON")
    response = await client.post(
        "/api/v1/submissions",
        data={"problem": "vectoradd"},
        files={"file": ("submission.py", b"x = '\xff'\n", "text/x-python")},
        headers=alice.headers,
    )
    assert_error(response, 422, "invalid_request", "not UTF-8")


async def test_code_over_one_megabyte(client: httpx.AsyncClient, alice: Account) -> None:
    big = HONEST + "#" * 1_000_001
    response = await client.post(
        "/api/v1/submissions", json={"problem": "vectoradd", "code": big}, headers=alice.headers
    )
    assert_error(response, 413, "too_large", "1000000 bytes")
    response = await client.post(
        "/api/v1/submissions",
        data={"problem": "vectoradd"},
        files={"file": ("submission.py", big.encode(), "text/x-python")},
        headers=alice.headers,
    )
    assert_error(response, 413, "too_large")


async def test_request_body_over_limit(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post(
        "/api/v1/submissions",
        content=b"x" * 60_000_001,
        headers={**alice.headers, "Content-Type": "application/json"},
    )
    assert_error(response, 413, "too_large")


async def test_multipart_without_file(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post(
        "/api/v1/submissions",
        data={"problem": "vectoradd"},
        files={"other": ("a", b"b")},
        headers=alice.headers,
    )
    assert_error(response, 422, "invalid_request", "'file'")


async def test_wrong_content_type(client: httpx.AsyncClient, alice: Account) -> None:
    response = await client.post(
        "/api/v1/submissions",
        content=HONEST,
        headers={**alice.headers, "Content-Type": "text/plain"},
    )
    assert_error(response, 422, "invalid_request", "JSON")


async def test_another_user_reads_a_public_run_as_its_page_shows_it_never_a_hidden_one(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    """`kerneljudge status` and the result page agree: another competitor's public run is
    readable without its code; a hidden one is unknown to them."""
    from tests.server.conftest import make_account

    created = await client.post(
        "/api/v1/submissions", json={"problem": "vectoradd", "code": HONEST}, headers=alice.headers
    )
    sid = created.json()["id"]
    bob = make_account()
    read = await client.get(f"/api/v1/submissions/{sid}", headers=bob.headers)
    assert read.status_code == 200
    assert read.json()["user"] == alice.name and read.json()["code"] is None
    own = await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)
    assert own.json()["code"] == HONEST
    hide = await client.post(
        f"/api/v1/admin/submissions/{sid}/moderation",
        json={"action": "hide", "reason": "a copy"},
        headers=admin.headers,
    )
    assert hide.status_code == 200, hide.text
    assert_error(
        await client.get(f"/api/v1/submissions/{sid}", headers=bob.headers), 404, "not_found"
    )
    assert (
        await client.get(f"/api/v1/submissions/{sid}", headers=admin.headers)
    ).status_code == 200
    assert (
        await client.get(f"/api/v1/submissions/{sid}", headers=alice.headers)
    ).status_code == 200
    assert_error(
        await client.get("/api/v1/submissions/99999999", headers=alice.headers), 404, "not_found"
    )
    assert_error(
        await client.get("/api/v1/submissions/abc", headers=alice.headers), 422, "invalid_request"
    )


async def test_unknown_route_and_method(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/api/v1/nothing-here"), 404, "not_found")
    not_allowed = await client.delete("/healthz")
    assert_error(not_allowed, 405, "method_not_allowed")
    assert not_allowed.headers["Allow"] == "GET"  # as RFC 9110 asks of a 405
    # Two routes share this path (GET lists, POST uploads): the Allow names both.
    put = await client.put("/api/v1/problems", json={})
    assert_error(put, 405, "method_not_allowed")
    assert put.headers["Allow"] == "GET, POST"


@pytest.mark.parametrize("route", ["/api/v1/submissions", "/api/v1/problems"])
async def test_malformed_multipart_is_an_invalid_request(
    client: httpx.AsyncClient, admin: Account, route: str
) -> None:
    broken = await client.post(
        route,
        content=b"--b\r\n[]--b--\r\n",
        headers={**admin.headers, "Content-Type": "multipart/form-data; boundary=b"},
    )
    assert_error(broken, 422, "invalid_request", "multipart")


async def test_openapi_lists_both_submission_bodies(client: httpx.AsyncClient) -> None:
    schema = (await client.get("/openapi.json")).json()
    post = schema["paths"]["/api/v1/submissions"]["post"]
    assert set(post["requestBody"]["content"]) == {"application/json", "multipart/form-data"}
    assert {"202", "401", "404", "413", "422"} <= set(post["responses"])
    # The JSON body's schema is whole: its mode's enum is one the document holds, not a
    # `$defs` entry it does not (Swagger UI would show a resolver error).
    body = post["requestBody"]["content"]["application/json"]["schema"]
    assert "#/$defs/" not in json.dumps(schema)
    mode_ref = body["properties"]["mode"]["$ref"].removeprefix("#/components/schemas/")
    mode = schema["components"]["schemas"][mode_ref]
    assert set(mode["enum"]) >= {"test", "benchmark", "leaderboard"}
    # Empty code is refused (422, "the code is empty"), and the schema says so.
    assert body["properties"]["code"]["minLength"] == 1
    health = (await client.get("/healthz")).json()
    assert (health["status"], health["database"], health["broker"]) == ("ok", "ok", "ok")


async def test_openapi_error_bodies_are_the_ones_sent(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """Every error status the schema declares has the body the API sends, 422 included
    (FastAPI would document its own list-shaped validation body), and every reference in
    the schema resolves. /healthz answers 503 with its own report of what is unreachable."""
    schema = (await client.get("/openapi.json")).json()
    declared = {
        (path, method, status): response
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        for status, response in operation["responses"].items()
        if status.startswith(("4", "5")) and path != "/healthz"
    }
    assert ("/api/v1/submissions/{submission_id}", "get", "422") in declared
    for response in declared.values():
        body = response["content"]["application/json"]["schema"]
        assert body == {"$ref": "#/components/schemas/ErrorBody"}
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(schema)))
    assert refs <= set(schema["components"]["schemas"])
    sent = await client.get("/api/v1/submissions/not-a-number", headers=alice.headers)
    assert sent.status_code == 422
    assert set(sent.json()) == set(schema["components"]["schemas"]["ErrorBody"]["properties"])


@pytest.mark.parametrize("submission_id", ["0", str(2**31), str(2**64 + 7), "-3"])
async def test_ids_out_of_range_are_refused_not_overflowed(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, alice: Account, submission_id: str
) -> None:
    """An id no row can have (past what the database's integers hold) is a 422 with a
    message, from the API and from the pages, never a server error."""
    response = await client.get(f"/api/v1/submissions/{submission_id}", headers=alice.headers)
    assert_error(response, 422, "invalid_request", "submission_id")
    page = await browser.get(f"/submissions/{submission_id}", headers={"Accept": "text/html"})
    assert page.status_code == 422 and "submission_id" in page.text


async def test_openapi_says_which_routes_need_a_token(client: httpx.AsyncClient) -> None:
    """Routes that answer without a token (problems, leaderboards) declare the token
    optional; routes that need one declare the 401 they send without it."""
    schema = (await client.get("/openapi.json")).json()
    anonymous = (await client.get("/api/v1/problems")).status_code
    assert anonymous == 200
    listing = schema["paths"]["/api/v1/problems"]["get"]
    assert {} in listing["security"]
    board = schema["paths"]["/api/v1/leaderboards/{problem}"]["get"]
    assert {} in board["security"]
    submit = schema["paths"]["/api/v1/submissions"]["post"]
    assert "401" in submit["responses"] and {} not in submit["security"]
    assert (await client.post("/api/v1/submissions", json={})).status_code == 401


async def test_a_retry_with_the_same_idempotency_key_makes_one_submission(
    client: httpx.AsyncClient, alice: Account
) -> None:
    """A client that timed out (or got a 5xx) sends the same request again."""
    body = {"problem": "vectoradd", "code": HONEST, "mode": "test"}
    headers = {**alice.headers, "Idempotency-Key": "retry-4f1c"}
    first = await client.post("/api/v1/submissions", json=body, headers=headers)
    again = await client.post("/api/v1/submissions", json=body, headers=headers)
    assert first.status_code == again.status_code == 202, again.text
    assert first.json()["id"] == again.json()["id"]
    assert "idempotent-replayed" not in first.headers
    assert again.headers["idempotent-replayed"] == "true"
    with session_scope() as session:
        made = session.scalars(
            select(Submission).where(Submission.idempotency_key == "retry-4f1c")
        ).all()
    assert len(made) == 1

    other = await client.post(
        "/api/v1/submissions", json={**body, "mode": "benchmark"}, headers=headers
    )
    assert_error(other, 422, "invalid_request", "Idempotency-Key", "different")
    fresh = await client.post(
        "/api/v1/submissions", json=body, headers={**alice.headers, "Idempotency-Key": "new-1"}
    )
    assert fresh.json()["id"] != first.json()["id"]


async def test_idempotency_keys_are_per_user(
    client: httpx.AsyncClient, alice: Account, admin: Account
) -> None:
    body = {"problem": "vectoradd", "code": HONEST, "mode": "test"}
    key = {"Idempotency-Key": "shared-key"}
    mine = await client.post("/api/v1/submissions", json=body, headers={**alice.headers, **key})
    theirs = await client.post("/api/v1/submissions", json=body, headers={**admin.headers, **key})
    assert mine.status_code == theirs.status_code == 202
    assert mine.json()["id"] != theirs.json()["id"]


async def test_a_malformed_idempotency_key_is_refused(
    client: httpx.AsyncClient, alice: Account
) -> None:
    body = {"problem": "vectoradd", "code": HONEST, "mode": "test"}
    for key in ("x" * 201, "has space"):
        response = await client.post(
            "/api/v1/submissions", json=body, headers={**alice.headers, "Idempotency-Key": key}
        )
        assert_error(response, 422, "invalid_request", "Idempotency-Key")


async def test_you_can_list_your_own_submissions(client: httpx.AsyncClient, alice: Account) -> None:
    """Newest first, a page at a time, one problem's if asked; nobody else's."""
    bob = make_account()
    mine = []
    for mode in ("test", "benchmark", "test"):
        body = {"problem": "vectoradd", "code": HONEST, "mode": mode}
        response = await client.post("/api/v1/submissions", json=body, headers=alice.headers)
        mine.append(response.json()["id"])
    body = {"problem": "vectoradd", "code": HONEST, "mode": "test"}
    await client.post("/api/v1/submissions", json=body, headers=bob.headers)

    listed = (await client.get("/api/v1/submissions", headers=alice.headers)).json()
    assert [s["id"] for s in listed["submissions"]] == mine[::-1]
    assert listed["next_before"] is None
    first = listed["submissions"][0]
    assert (
        first["problem"] == "vectoradd" and first["status"] == "queued" and first["score"] is None
    )

    page = (await client.get("/api/v1/submissions?limit=2", headers=alice.headers)).json()
    assert [s["id"] for s in page["submissions"]] == mine[:0:-1]
    rest = await client.get(
        f"/api/v1/submissions?limit=2&before={page['next_before']}", headers=alice.headers
    )
    assert [s["id"] for s in rest.json()["submissions"]] == [mine[0]]

    one = await client.get("/api/v1/submissions?problem=vectoradd", headers=alice.headers)
    assert len(one.json()["submissions"]) == 3
    assert_error(
        await client.get("/api/v1/submissions?problem=nope", headers=alice.headers),
        404,
        "not_found",
    )
    assert_error(
        await client.get("/api/v1/submissions?limit=0", headers=alice.headers),
        422,
        "invalid_request",
    )
    assert (await client.get("/api/v1/submissions")).status_code == 401
