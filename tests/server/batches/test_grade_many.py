"""The trainer's client against the app in this process: grade_many sends batches, waits
out the server's 429 with its Retry-After, and yields each verdict once as it comes; the
`kerneljudge batch submit` command prints them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner, Result

from server.app import create_app
from server.batches import service as batches
from server.client import batch_commands
from server.client import commands as submitter
from server.client.batches import grade_many
from server.client.config import Login
from server.client.errors import Refused
from server.db import session_scope
from server.models import Batch, Submission, User
from server.settings import Settings, get_settings
from server.submissions import service
from tests.server.conftest import Account, make_account, worker_report

CODE = "def custom_kernel(data):\n    return data[2]\n# {}\n"


def app_with(settings: Settings) -> Any:
    app = create_app()
    app.dependency_overrides[get_settings] = lambda: settings
    return app


async def grade_queued(user: str, count: int) -> None:
    """A worker for `user`'s submissions: each queued one gets a verdict, passed for a key
    ending in 'good.py', failed for the rest, until `count` have."""
    graded: set[int] = set()
    while len(graded) < count:
        with session_scope() as db:
            queued = db.scalars(
                select(Submission)
                .join(User, User.id == Submission.user_id)
                .where(User.name == user, Submission.status == "queued")
            ).all()
            for submission in queued:
                status = "passed" if (submission.batch_key or "").endswith("good.py") else "failed"
                service.record_report(db, submission.id, worker_report(status), "host:1")
                graded.add(submission.id)
        await asyncio.sleep(0.1)


@pytest.mark.anyio
async def test_grade_many_waits_out_the_cap_and_yields_each_verdict_once(
    database: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(batches, "RETRY_AFTER_S", 1)
    trainer = make_account()
    app = app_with(Settings(batch_max_in_flight=2))
    items = [
        {"key": f"c{i}-{'good' if i % 2 else 'bad'}.py", "problem": "vectoradd",
         "code": CODE.format(i)}
        for i in range(5)
    ]  # fmt: skip
    worker = asyncio.create_task(grade_queued(trainer.name, len(items)))
    found = []
    async for item in grade_many(
        items,
        login=Login("http://test", trainer.token),
        batch_size=2,
        wait_s=5,
        transport=httpx.ASGITransport(app=app),
    ):
        found.append(item)
    await worker
    assert sorted(item["key"] for item in found) == sorted(item["key"] for item in items)
    verdicts = {item["key"]: (item["status"], item["error_class"]) for item in found}
    assert verdicts["c1-good.py"] == ("passed", None)
    assert verdicts["c0-bad.py"] == ("failed", "wrong")
    assert len({item["batch_id"] for item in found}) == 3


@pytest.mark.anyio
async def test_a_refused_batch_raises_with_the_servers_words(database: None) -> None:
    trainer = make_account()
    items = [{"key": "a.py", "problem": "no-such-problem", "code": CODE.format(0)}]
    with pytest.raises(Refused, match="no-such-problem"):
        async for _ in grade_many(
            items,
            login=Login("http://test", trainer.token),
            transport=httpx.ASGITransport(app=create_app()),
        ):
            pass


def batch_submit(
    alice: Account, monkeypatch: pytest.MonkeyPatch, argv: list[str], *, graded: bool = True
) -> Result:
    """`kerneljudge batch ARGV` as alice, against the app in this process; with `graded`,
    her queued items are graded meanwhile."""
    app = create_app()

    async def in_process(
        items: list[Mapping[str, Any]], **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        worker = asyncio.create_task(grade_queued(alice.name, len(items) if graded else 0))
        async for item in grade_many(items, transport=httpx.ASGITransport(app=app), **kwargs):
            yield item
        await worker

    monkeypatch.setattr(batch_commands, "grade_many", in_process)
    monkeypatch.setenv("KJ_URL", "http://test")
    monkeypatch.setenv("KJ_TOKEN", alice.token)
    cli = typer.Typer()
    submitter.register(cli)
    return CliRunner().invoke(cli, ["batch", *argv])


def test_batch_submit_grades_each_file_of_a_folder(
    alice: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("one-good.py", "two.py"):
        (tmp_path / name).write_text(CODE.format(name))
    (tmp_path / "notes.txt").write_text("not a candidate")
    done = batch_submit(alice, monkeypatch, ["submit", str(tmp_path), "-p", "vectoradd", "--json"])
    assert done.exit_code == 1, done.output  # one item failed
    body = json.loads(done.stdout)
    assert [item["key"] for item in body["items"]] == ["one-good.py", "two.py"]
    assert body["counts"] == {"passed": 1, "failed": 1}


def test_batch_submit_sends_its_callback_url_and_shows_the_secret(
    alice: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--callback-url reaches the batch as the contract's callback_url; the secret its
    callbacks are signed with is shown once, in the JSON document."""
    (tmp_path / "one-good.py").write_text(CODE.format("one"))
    hook = "https://trainer.example.org/kerneljudge"
    argv = ["submit", str(tmp_path), "-p", "vectoradd", "--callback-url", hook, "--json"]
    done = batch_submit(alice, monkeypatch, argv)
    assert done.exit_code == 0, done.output
    body = json.loads(done.stdout)
    with session_scope() as db:
        batch = db.scalars(
            select(Batch).join(User, User.id == Batch.user_id).where(User.name == alice.name)
        ).one()
        assert batch.callback_url == hook
        assert body["batches"] == [{"id": batch.id, "callback_secret": batch.callback_secret}]
    assert batch.callback_secret


@pytest.mark.timeout(120)  # a batch made by mistake would wait for verdicts for ever
def test_batch_submit_refuses_a_callback_url_aimed_at_a_private_address(
    alice: Account, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "one.py").write_text(CODE.format("one"))
    argv = ["submit", str(tmp_path), "-p", "vectoradd", "--callback-url", "http://10.0.0.7/hook"]
    done = batch_submit(alice, monkeypatch, argv, graded=False)
    assert done.exit_code == 6, done.output
    assert "callback_url" in done.output
    with session_scope() as db:
        made = select(Batch).join(User, User.id == Batch.user_id).where(User.name == alice.name)
        assert not db.scalars(made).all()
