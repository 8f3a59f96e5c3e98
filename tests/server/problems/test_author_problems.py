"""Authors' own problems: a user an admin made an author adds problems through a token with
the `author` scope; each is its author's and the admins' alone (listing, reading, submitting,
its validation), never in a competition, and every job for it tells the worker that its
reference is untrusted, so the grader runs it only in a sandbox (grader/untrusted.py)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from server.db import session_scope
from server.errors import Forbidden
from server.problems import repository, validation, versions
from server.problems.loaded import problem_files
from server.settings import get_settings
from server.users.service import create_user, get_user, issue_token
from tests.server.competitions.rig import competition_file
from tests.server.conftest import Account, changed_settings, make_account
from tests.server.problems.test_problems_api import problem_zip, upload

pytestmark = pytest.mark.anyio

_authors = iter(range(1_000_000))
SCOPES = ["read", "submit", "author"]


def make_author(scopes: list[str] | None = None) -> Account:
    name = f"author{next(_authors)}"
    with session_scope() as session:
        user = create_user(session, name, is_author=True)
        token = issue_token(session, user, scope_names=scopes)
    return Account(name, token)


@pytest.fixture
def author(database: None) -> Account:
    return make_author()


def make_live(name: str) -> None:
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        problem.status = validation.LIVE


def listed(response: httpx.Response) -> set[str]:
    return {problem["name"] for problem in response.json()}


async def test_an_authors_problem_is_its_own_and_the_admins(
    client: httpx.AsyncClient, author: Account, alice: Account, admin: Account
) -> None:
    added = await upload(client, author, problem_zip("mine"), "mine.zip")
    assert added.status_code == 201, added.text
    assert (added.json()["private"], added.json()["hidden"]) == (True, True)
    make_live("mine")

    assert (await client.get("/api/v1/problems/mine", headers=author.headers)).status_code == 200
    assert (await client.get("/api/v1/problems/mine", headers=admin.headers)).status_code == 200
    for other in ({"headers": alice.headers}, {}):
        refused = await client.get("/api/v1/problems/mine", **other)  # type: ignore[arg-type]
        assert refused.status_code == 404 and refused.json()["detail"] == "no problem named 'mine'"
    assert "mine" in listed(await client.get("/api/v1/problems", headers=author.headers))
    assert "mine" not in listed(await client.get("/api/v1/problems", headers=alice.headers))
    assert "mine" not in listed(await client.get("/api/v1/problems"))

    code = "def custom_kernel(data):\n    return data[0] + data[1]\n"
    body = {"problem": "mine", "code": code, "mode": "test"}
    sent = await client.post("/api/v1/submissions", json=body, headers=author.headers)
    assert sent.status_code == 202, sent.text
    theirs = await client.post("/api/v1/submissions", json=body, headers=alice.headers)
    assert theirs.status_code == 404
    # Its run is the author's alone too: the problem is shown to no one else.
    run = f"/api/v1/submissions/{sent.json()['id']}"
    assert (await client.get(run, headers=alice.headers)).status_code == 404
    assert (await client.get(run, headers=author.headers)).status_code == 200

    own = await client.get("/api/v1/problems/mine/validation", headers=author.headers)
    assert own.status_code == 200 and own.json()["problem"] == "mine"
    other = await client.get("/api/v1/problems/mine/validation", headers=alice.headers)
    assert other.status_code == 403


async def test_the_same_files_again_are_not_validated_again(
    client: httpx.AsyncClient, author: Account
) -> None:
    first = await upload(client, author, problem_zip("again"), "again.zip")
    assert first.json()["created"] is True
    attempt = (
        await client.get("/api/v1/problems/again/validation", headers=author.headers)
    ).json()["attempt"]
    same = await upload(client, author, problem_zip("again"), "again.zip")
    assert same.status_code == 201
    assert (same.json()["created"], same.json()["version"]) == (False, 1)
    after = (await client.get("/api/v1/problems/again/validation", headers=author.headers)).json()
    assert after["attempt"] == attempt
    changed = await upload(client, author, problem_zip("again", description="new"), "again.zip")
    assert changed.json()["version"] == 2


async def test_only_authors_and_admins_add_problems_and_names_stay_theirs(
    client: httpx.AsyncClient, author: Account, alice: Account, admin: Account
) -> None:
    refused = await upload(client, alice, problem_zip("byalice"), "p.zip")
    assert refused.status_code == 403 and "author" in refused.json()["detail"]
    reader = make_author(scopes=["read", "submit"])
    unscoped = await upload(client, reader, problem_zip("byreader"), "p.zip")
    assert unscoped.status_code == 403 and "'author' scope" in unscoped.json()["detail"]

    assert (await upload(client, author, problem_zip("taken"), "t.zip")).status_code == 201
    other = make_author()
    clash = await upload(client, other, problem_zip("taken"), "t.zip")
    assert clash.status_code == 409 and "is taken" in clash.json()["detail"]
    organizers = await upload(client, author, problem_zip(), "t.zip", name="vectoradd")
    assert organizers.status_code == 409

    public = await upload(client, author, problem_zip("shown"), "s.zip", hidden="false")
    assert public.status_code == 422 and "private" in public.json()["detail"], public.text


async def test_an_author_may_hold_so_many_problems(
    client: httpx.AsyncClient, author: Account
) -> None:
    with changed_settings(max_problems_per_author="1"):
        assert (await upload(client, author, problem_zip("one"), "1.zip")).status_code == 201
        second = await upload(client, author, problem_zip("two"), "2.zip")
        assert second.status_code == 403 and "KJ_MAX_PROBLEMS_PER_AUTHOR" in second.json()["detail"]
        # A new version of one it has is no new problem.
        again = await upload(client, author, problem_zip("one", description="v2"), "1.zip")
        assert again.status_code == 201


async def test_every_job_for_an_authors_problem_says_its_reference_is_untrusted(
    client: httpx.AsyncClient, author: Account, admin: Account
) -> None:
    await upload(client, author, problem_zip("jobs"), "jobs.zip")
    await upload(client, admin, problem_zip("organizers"), "org.zip")
    with session_scope() as session:
        mine = repository.get_problem(session, "jobs")
        theirs = repository.get_problem(session, "organizers")
        assert mine is not None and theirs is not None
        assert problem_files(mine)["untrusted_reference"] is True
        assert problem_files(theirs)["untrusted_reference"] is False
        queued = validation.current_round(session, mine)
        sent = validation.message(session, queued[0].id, get_settings())
        assert sent is not None and sent[1]["problem"]["untrusted_reference"] is True
        mine.status = validation.LIVE
    # A live problem's next version is staged beside it, and validated as untrusted too.
    await upload(client, author, problem_zip("jobs", description="v2"), "jobs.zip")
    with session_scope() as session:
        mine = repository.get_problem(session, "jobs")
        assert mine is not None
        staged = versions.staged(mine)
        assert staged is not None and problem_files(staged)["untrusted_reference"] is True


async def test_a_competition_holds_no_authors_problem(
    client: httpx.AsyncClient, author: Account, admin: Account
) -> None:
    await upload(client, author, problem_zip("private"), "p.zip")
    make_live("private")
    body = competition_file(["private"])
    refused = await client.post("/api/v1/competitions", json=body, headers=admin.headers)
    assert refused.status_code == 422 and "an author's own" in refused.json()["detail"]


@pytest.fixture
def moderated(database: None) -> Iterator[tuple[Account, Account]]:
    yield make_account(admin=True), make_account()


async def test_admins_make_and_unmake_authors(
    client: httpx.AsyncClient, moderated: tuple[Account, Account]
) -> None:
    admin, user = moderated
    with session_scope() as session, pytest.raises(Forbidden):
        issue_token(session, get_user(session, user.name), scope_names=SCOPES)
    made = await client.post(
        f"/api/v1/admin/users/{user.name}/moderation",
        json={"action": "make_author"},
        headers=admin.headers,
    )
    assert made.status_code == 200 and made.json()["is_author"] is True
    with session_scope() as session:
        made_user = get_user(session, user.name)
        trainer = Account(user.name, issue_token(session, made_user, scope_names=SCOPES))
    assert (await upload(client, trainer, problem_zip("grant"), "g.zip")).status_code == 201
    await client.post(
        f"/api/v1/admin/users/{user.name}/moderation",
        json={"action": "revoke_author"},
        headers=admin.headers,
    )
    revoked = await upload(client, trainer, problem_zip("grant2"), "g.zip")
    assert revoked.status_code == 403
