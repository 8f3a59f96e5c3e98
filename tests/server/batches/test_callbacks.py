"""A batch's callbacks: a callback URL is checked when the batch is accepted (no private
address unless the organizer allows its network), and each item's verdict is POSTed to it,
signed, by a real callbacks worker (`kerneljudge worker --queues callbacks` on the embedded
broker), to a receiver on 127.0.0.1; verdicts are recorded here as the results step records
a worker's."""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from server.app import create_app
from server.batches.delivery import SIGNATURE_HEADER
from server.db import session_scope
from server.models import CallbackDelivery
from server.settings import Settings, get_settings
from tests.server.batches.test_batches import items, post, record
from tests.server.conftest import Account, worker_report

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]
LOOPBACK = "127.0.0.1/32"
# Seconds a test waits for the worker to start and the callbacks to arrive.
PATIENCE_S = 60.0


class Receiver(http.server.ThreadingHTTPServer):
    """A trainer's end: keeps each POST (its headers and body) and answers with the next of
    `answers`, then 204."""

    def __init__(self, answers: list[int]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.answers = answers
        self.posts: list[tuple[dict[str, str], bytes]] = []

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts.append((dict(self.headers), body))
        status = self.server.answers.pop(0) if self.server.answers else 204
        self.send_response(status)
        if 300 <= status < 400:
            self.send_header("Location", f"http://127.0.0.1:{self.server.port}/followed")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver([])
    thread = threading.Thread(target=found.serve_forever, daemon=True)
    thread.start()
    yield found
    found.shutdown()
    found.server_close()


@contextmanager
def callbacks_worker(allow_networks: str) -> Iterator[None]:
    """`kerneljudge worker --queues callbacks` on this session's data folder, allowing
    callbacks to `allow_networks`, with short pauses between tries."""
    env = {
        **os.environ,
        "KJ_CALLBACK_ALLOW_NETWORKS": allow_networks,
        "KJ_CALLBACK_BACKOFF_S": "0.3",
        "KJ_CALLBACK_TIMEOUT_S": "3",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "kerneljudge", "worker", "--queues", "callbacks"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


@pytest.fixture
async def allowing(database: None) -> AsyncIterator[httpx.AsyncClient]:
    """A client whose app allows callbacks to 127.0.0.1."""
    app = create_app()
    settings = Settings(callback_allow_networks=[LOOPBACK])
    app.dependency_overrides[get_settings] = lambda: settings
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


def until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {PATIENCE_S:g} s"
        time.sleep(0.1)


def deliveries(batch_id: int) -> list[CallbackDelivery]:
    with session_scope() as db:
        found = db.scalars(
            select(CallbackDelivery)
            .where(CallbackDelivery.batch_id == batch_id)
            .order_by(CallbackDelivery.id)
        ).all()
        db.expunge_all()
        return list(found)


def settled(batch_id: int, count: int) -> Callable[[], bool]:
    def check() -> bool:
        found = deliveries(batch_id)
        return len(found) == count and all(d.delivered_at or d.failed_at for d in found)

    return check


def documented_check() -> Callable[[str, str, bytes], bool]:
    """`verified(secret, header, body)`: the check docs/trainers.md gives a receiver, as
    written there."""
    text = (REPO / "docs" / "trainers.md").read_text()
    [code] = [block for block in text.split("```python\n")[1:] if "def verified(" in block]
    scope: dict[str, Any] = {}
    exec(code.split("```", 1)[0], scope)
    return scope["verified"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://127.0.0.1:9000/hook", "127.0.0.1 is not a public address"),
        ("http://localhost/hook", "localhost is this machine"),
        ("http://[::1]/hook", "::1 is not a public address"),
        ("http://10.0.0.7/hook", "10.0.0.7 is not a public address"),
        ("http://169.254.169.254/latest/meta-data", "169.254.169.254 is not a public"),
        ("http://[fd00::1]/hook", "fd00::1 is not a public address"),
        ("http://0.0.0.0/hook", "0.0.0.0 is not a public address"),
        ("http://224.0.0.1/hook", "224.0.0.1 is not a public address"),
        ("http://[::ffff:192.168.1.1]/hook", "is not a public address"),
        ("http://test/hook", "this service's own host"),
        ("ftp://example.org/hook", "http:// or https://"),
        ("https://user:secret@example.org/hook", "no user name or password"),
        ("https://example.org/" + "a" * 2048, "2048 characters"),
    ],
)
async def test_a_callback_url_that_may_not_be_reached_is_422(
    client: httpx.AsyncClient, alice: Account, url: str, words: str
) -> None:
    response = await post(client, alice, {"items": items(1, tag="bad-hook"), "callback_url": url})
    assert response.status_code == 422, response.text
    assert words in response.json()["detail"]


async def test_an_allowed_network_is_accepted_and_its_secret_given_once(
    allowing: httpx.AsyncClient, alice: Account
) -> None:
    body = {"items": items(1, tag="allowed"), "callback_url": "http://127.0.0.1:9/hook"}
    made = await post(allowing, alice, body, **{"Idempotency-Key": "hook-1"})
    assert made.status_code == 202, made.text
    secret = made.json()["callback_secret"]
    assert len(secret) >= 40
    again = await post(allowing, alice, body, **{"Idempotency-Key": "hook-1"})
    assert again.json()["callback_secret"] == secret
    shown = await allowing.get(f"/api/v1/batches/{made.json()['id']}", headers=alice.headers)
    assert "callback_secret" not in shown.json()
    assert shown.json()["callbacks"] == {"delivered": 0, "failed": 0, "pending": 0}
    # Another loopback address is outside the network allowed.
    plain = await post(allowing, alice, {**body, "callback_url": "http://127.0.0.2/hook"})
    assert plain.status_code == 422


async def test_without_a_callback_url_there_is_no_secret_and_no_counts(
    client: httpx.AsyncClient, alice: Account
) -> None:
    made = await post(client, alice, {"items": items(1, tag="no-hook")})
    assert made.status_code == 202 and "callback_secret" not in made.json()
    shown = await client.get(f"/api/v1/batches/{made.json()['id']}", headers=alice.headers)
    assert shown.json()["callbacks"] is None


async def test_each_finished_item_is_posted_once_signed(
    allowing: httpx.AsyncClient, alice: Account, receiver: Receiver
) -> None:
    body = {
        "items": items(3, tag="signed"),
        "callback_url": f"http://127.0.0.1:{receiver.port}/kerneljudge?run=7",
    }
    made = (await post(allowing, alice, body)).json()
    secret, sent = made["callback_secret"], made["items"]
    with callbacks_worker(LOOPBACK):
        record(sent[0]["submission_id"], worker_report("passed").to_dict())
        record(sent[1]["submission_id"], worker_report("failed").to_dict())
        record(sent[1]["submission_id"], worker_report("failed").to_dict())  # counted once
        until(settled(made["id"], 2), "two callbacks")
    assert len(receiver.posts) == 2
    shown = (await allowing.get(f"/api/v1/batches/{made['id']}", headers=alice.headers)).json()
    assert shown["callbacks"] == {"delivered": 2, "failed": 0, "pending": 0}
    verified, posted = documented_check(), {}
    for headers, raw in receiver.posts:
        assert verified(secret, headers[SIGNATURE_HEADER], raw)
        assert not verified("another batch's secret", headers[SIGNATURE_HEADER], raw)
        assert not verified(secret, headers[SIGNATURE_HEADER], raw.replace(b"k", b"K"))
        assert headers["Host"] == f"127.0.0.1:{receiver.port}"
        assert headers["Content-Type"] == "application/json"
        item = json.loads(raw)
        posted[item["key"]] = item
    by_key = {item["key"]: item for item in shown["items"]}
    assert set(posted) == {"k0", "k1"}
    for key, item in posted.items():
        assert item == {"batch_id": made["id"], **by_key[key]}
    assert (posted["k0"]["status"], posted["k1"]["error_class"]) == ("passed", "wrong")


async def test_a_failing_receiver_is_tried_again_until_it_answers(
    allowing: httpx.AsyncClient, alice: Account, receiver: Receiver
) -> None:
    receiver.answers = [500, 503]
    body = {
        "items": items(1, tag="retried"),
        "callback_url": f"http://127.0.0.1:{receiver.port}/hook",
    }
    made = (await post(allowing, alice, body)).json()
    with callbacks_worker(LOOPBACK):
        record(made["items"][0]["submission_id"], worker_report("passed").to_dict())
        until(settled(made["id"], 1), "a delivered callback")
    [delivery] = deliveries(made["id"])
    assert delivery.delivered_at is not None and delivery.attempts == 3
    assert len(receiver.posts) == 3
    assert len({raw for _, raw in receiver.posts}) == 1  # the same body each time
    shown = (await allowing.get(f"/api/v1/batches/{made['id']}", headers=alice.headers)).json()
    assert shown["callbacks"] == {"delivered": 1, "failed": 0, "pending": 0}


async def test_a_redirect_is_not_followed_nor_a_4xx_tried_again(
    allowing: httpx.AsyncClient, alice: Account, receiver: Receiver
) -> None:
    receiver.answers = [302, 404]
    batches = []
    for tag in ("moved", "gone"):
        body = {"items": items(1, tag=tag), "callback_url": f"http://127.0.0.1:{receiver.port}/"}
        batches.append((await post(allowing, alice, body)).json())
    with callbacks_worker(LOOPBACK):
        for made in batches:
            record(made["items"][0]["submission_id"], worker_report("passed").to_dict())
            until(settled(made["id"], 1), "a settled callback")
    assert len(receiver.posts) == 2  # one each: the 302's Location was never asked
    errors = []
    for made in batches:
        [delivery] = deliveries(made["id"])
        assert delivery.failed_at is not None and delivery.attempts == 1
        errors.append(delivery.last_error)
    assert errors == ["answered 302", "answered 404"]


async def test_a_name_resolving_to_this_machine_is_refused_when_sent(
    client: httpx.AsyncClient, alice: Account, receiver: Receiver
) -> None:
    """The hostile case: a callback aimed at the service itself, by a name that reads as a
    public one when the batch is accepted (this machine's own name, resolving to 127.0.0.1)."""
    name = socket.gethostname()
    resolved = {info[4][0] for info in socket.getaddrinfo(name, receiver.port)}
    if not any(address.startswith("127.") or address == "::1" for address in resolved):
        pytest.skip(f"{name} resolves to {resolved}, not to this machine's loopback")
    body = {"items": items(1, tag="rebind"), "callback_url": f"http://{name}:{receiver.port}/"}
    made = await post(client, alice, body)
    assert made.status_code == 202, made.text
    with callbacks_worker(""):
        record(made.json()["items"][0]["submission_id"], worker_report("passed").to_dict())
        until(settled(made.json()["id"], 1), "a settled callback")
    assert receiver.posts == []
    [delivery] = deliveries(made.json()["id"])
    assert delivery.failed_at is not None and delivery.attempts == 1
    assert delivery.last_error is not None
    assert f"refused: {name} resolves to" in delivery.last_error
    assert "is not a public address" in delivery.last_error
    shown = await client.get(f"/api/v1/batches/{made.json()['id']}", headers=alice.headers)
    assert shown.json()["callbacks"] == {"delivered": 0, "failed": 1, "pending": 0}
