"""A problem's difficulty: read from task.yml's own `difficulty` (a GPU MODE folder without
it loads as before, not rated), set by an organizer on the admin page, in the API's problem
body, and the order of the problem lists: easiest first, those not rated last, then by name."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest
from sqlalchemy.orm import Session

from grader.problem import BUILTIN_DIR, ProblemError, load_problem
from server.db import session_scope
from server.models import Problem
from server.problems.repository import get_problem
from server.problems.service import BUILTIN_DIFFICULTY, sync_builtin_problems
from tests.server.conftest import Account
from tests.server.problems.test_problems_api import TASK, upload
from tests.server.rows import zip_of
from tests.server.web.test_web_pages import new_problem
from tests.server.web_client import HTML, log_in, make_user, post_form

pytestmark = pytest.mark.anyio


def task_yml(difficulty: str | None, description: str = "add them") -> str:
    text = (
        (TASK / "task.yml")
        .read_text()
        .replace("Implement a float16 vector addition kernel.", description)
    )
    return text if difficulty is None else f"{text}\ndifficulty: {difficulty}\n"


def rated_zip(folder: str, difficulty: str | None, description: str = "add them") -> bytes:
    """vectoradd's folder in GPU MODE's layout, its task.yml rating it (or not)."""
    return zip_of(
        {
            "pmpp/utils.py": (BUILTIN_DIR / "utils.py").read_bytes(),
            f"pmpp/{folder}/task.yml": task_yml(difficulty, description),
            **{
                f"pmpp/{folder}/{name}": (TASK / name).read_bytes()
                for name in ("reference.py", "task.py", "submission.py")
            },
        }
    )


def test_task_yml_may_rate_a_problem_and_a_gpumode_folder_needs_not(tmp_path: Path) -> None:
    assert load_problem(BUILTIN_DIR / "vectoradd").difficulty is None  # rated when synced
    shutil.copy(BUILTIN_DIR / "utils.py", tmp_path / "utils.py")
    folder = tmp_path / "rated"
    shutil.copytree(TASK, folder)
    (folder / "task.yml").write_text(task_yml("Hard"))
    assert load_problem(folder).difficulty == "hard"
    (folder / "task.yml").write_text(task_yml("impossible"))
    with pytest.raises(ProblemError, match="difficulty 'impossible' is none of easy, medium, hard"):
        load_problem(folder)


async def test_an_upload_rates_its_problem_and_an_organizer_may_change_it(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account
) -> None:
    async def difficulty() -> str | None:
        shown = await client.get("/api/v1/problems/rated-add", headers=admin.headers)
        return shown.json()["difficulty"]

    made = await upload(client, admin, rated_zip("rated-add", "hard"), "p.zip")
    assert made.status_code == 201, made.text
    assert made.json()["difficulty"] == "hard"

    organizer, _ = make_user(admin=True)
    await log_in(browser, organizer)
    form = await browser.get("/admin/problems", headers=HTML)
    assert 'aria-label="Difficulty of rated-add"' in form.text
    saved = await post_form(
        browser, "/admin/problems/rated-add", {"difficulty": "medium"}, from_page="/admin/problems"
    )
    assert saved.status_code == 303
    assert await difficulty() == "medium"
    refused = await post_form(
        browser, "/admin/problems/rated-add", {"difficulty": "brutal"}, from_page="/admin/problems"
    )
    assert refused.status_code == 422 and "choose a difficulty among easy" in refused.text
    assert await difficulty() == "medium"

    # The same files again leave the organizer's choice; new files that rate it set theirs,
    # new files that do not leave it as it is.
    await upload(client, admin, rated_zip("rated-add", "hard"), "p.zip")
    assert await difficulty() == "medium"
    await upload(client, admin, rated_zip("rated-add", "easy", "add them, v2"), "p.zip")
    assert await difficulty() == "easy"
    await upload(client, admin, rated_zip("rated-add", None, "add them, v3"), "p.zip")
    assert await difficulty() == "easy"

    cleared = await post_form(
        browser, "/admin/problems/rated-add", {"difficulty": ""}, from_page="/admin/problems"
    )
    assert cleared.status_code == 303 and await difficulty() is None


async def test_problems_are_listed_easiest_first_then_by_name(client: httpx.AsyncClient) -> None:
    ratings = {
        "order-zz": "easy",
        "order-aa": "hard",
        "order-mm": "medium",
        "order-bb": "easy",
        "order-ab": None,
    }
    for name, rating in ratings.items():
        new_problem(name, difficulty=rating)
    expected = ["order-bb", "order-zz", "order-mm", "order-aa", "order-ab"]

    listed = (await client.get("/api/v1/problems")).json()
    names = [problem["name"] for problem in listed]
    assert [name for name in names if name in ratings] == expected
    # Those not rated come after every rated one (the built-in problems are rated).
    assert names.index("order-ab") > names.index("order-aa") > names.index("attention")
    assert names.index("vectoradd") < names.index("order-mm")
    by_name = {problem["name"]: problem for problem in listed}
    assert by_name["order-mm"]["difficulty"] == "medium"
    assert by_name["vectoradd"]["difficulty"] == "easy"

    home = (await client.get("/", headers=HTML)).text
    assert sorted(expected, key=lambda name: home.index(f'href="/problems/{name}"')) == expected
    assert '<span class="badge difficulty difficulty-easy"' in home
    page = (await client.get("/problems/order-aa", headers=HTML)).text
    assert "difficulty-hard" in page


def vectoradd_in(session: Session) -> Problem:
    found = get_problem(session, "vectoradd")
    assert found is not None
    return found


async def test_the_built_in_problems_start_with_the_easy_ones_and_keep_an_organizers_rating(
    client: httpx.AsyncClient,
) -> None:
    """A newcomer's first problem is first: the built-in problems are rated where they are
    synced, not in their task.yml (whose digest makes their versions)."""
    listed = [problem["name"] for problem in (await client.get("/api/v1/problems")).json()]
    builtin = [name for name in listed if name in BUILTIN_DIFFICULTY]
    assert builtin == [
        "grayscale", "vectoradd", "vectorsum",
        "allreduce", "histogram", "prefixsum", "rmsnorm", "softmax",
        "attention", "matmul",
    ]  # fmt: skip
    with session_scope() as session:
        vectoradd = vectoradd_in(session)
        version = vectoradd.version
        vectoradd.difficulty = "hard"  # as an organizer rates it on the admin page
    with session_scope() as session:
        sync_builtin_problems(session)
        vectoradd = vectoradd_in(session)
        assert (vectoradd.difficulty, vectoradd.version) == ("hard", version)
        vectoradd.difficulty = None
    with session_scope() as session:
        sync_builtin_problems(session)
        assert vectoradd_in(session).difficulty == "easy"
