"""``GET /api/v1/problems/{name}/bundle``: a problem's folder as a zip for competitors, which
``kerneljudge grade`` loads as the server does; the reference only where it is public, and
never the secret seed."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import httpx
import pytest

from grader.problem import BUILTIN_DIR, load_problem
from server.db import session_scope
from server.problems import repository
from tests.server.conftest import Account
from tests.server.problems.test_problem_lifecycle import record_round
from tests.server.problems.test_problems_api import upload
from tests.server.rows import zip_of
from tests.server.web_client import sign_in

pytestmark = pytest.mark.anyio

VECTORADD = BUILTIN_DIR / "vectoradd"


def unpack(raw: bytes, into: Path) -> dict[str, str]:
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        archive.extractall(into)
        return {name: archive.read(name).decode() for name in archive.namelist()}


def organizer_zip(folder: str, *, extra_task_lines: str = "") -> bytes:
    """vectoradd as an organizer packs it: utils.py shared one level up, as GPU MODE does."""
    task = (VECTORADD / "task.yml").read_text() + extra_task_lines
    files = {
        "pack/utils.py": (BUILTIN_DIR / "utils.py").read_text(),
        f"pack/{folder}/task.yml": task,
        f"pack/{folder}/task.py": (VECTORADD / "task.py").read_text(),
        f"pack/{folder}/reference.py": (VECTORADD / "reference.py").read_text(),
        f"pack/{folder}/submission.py": (VECTORADD / "submission.py").read_text(),
    }
    return zip_of(files)


def secret_seed(name: str) -> int:
    with session_scope() as session:
        problem = repository.get_problem(session, name)
        assert problem is not None
        return problem.secret_seed


async def test_a_builtin_problems_bundle_loads_as_the_server_loads_it(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    response = await client.get("/api/v1/problems/vectoradd/bundle")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    assert response.headers["content-disposition"] == 'attachment; filename="vectoradd.zip"'
    files = unpack(response.content, tmp_path)
    assert set(files) == {
        f"vectoradd/{name}"
        for name in ("task.yml", "task.py", "utils.py", "reference.py", "submission.py")
    }
    # Its task.yml names utils.py next to it (the repository's names ../utils.py), and keeps
    # the organizers' comments.
    task = files["vectoradd/task.yml"]
    assert '{"name": "utils.py", "source": "utils.py"}' in task
    assert task.startswith("# GPU MODE reference-kernels layout")
    local, served = load_problem(tmp_path / "vectoradd"), load_problem("vectoradd")
    assert {k: v for k, v in local.files.items() if k != "task.yml"} == {
        k: v for k, v in served.files.items() if k != "task.yml"
    }
    assert {k: v for k, v in local.spec.items() if k != "files"} == {
        k: v for k, v in served.spec.items() if k != "files"
    }
    assert local.submission_template == (VECTORADD / "submission.py").read_text()
    seed = str(secret_seed("vectoradd"))
    assert not any(seed in text for text in files.values())


async def test_an_organizers_reference_stays_private_unless_task_yml_makes_it_public(
    client: httpx.AsyncClient, admin: Account, tmp_path: Path
) -> None:
    quiet_zip = organizer_zip("quietadd", extra_task_lines="\n# the organizers' own version\n")
    assert (await upload(client, admin, quiet_zip, "q.zip")).status_code == 201
    public = organizer_zip("openadd", extra_task_lines="\npublic_reference: true\n")
    assert (await upload(client, admin, public, "o.zip")).status_code == 201

    # Until it is validated and live only admins see the problem, and so its bundle.
    hidden = await client.get("/api/v1/problems/quietadd/bundle")
    assert hidden.status_code == 404 and hidden.json()["error"] == "not_found"
    record_round("quietadd")
    record_round("openadd")

    quiet = await client.get("/api/v1/problems/quietadd/bundle")
    assert quiet.status_code == 200, quiet.text
    quiet_files = unpack(quiet.content, tmp_path / "quiet")
    assert "quietadd/reference.py" not in quiet_files
    assert {"quietadd/task.yml", "quietadd/utils.py", "quietadd/submission.py"} <= set(quiet_files)
    assert "def ref_kernel" not in "".join(quiet_files.values())
    seed = str(secret_seed("quietadd"))
    assert not any(seed in text for text in quiet_files.values())

    opened = await client.get("/api/v1/problems/openadd/bundle")
    open_files = unpack(opened.content, tmp_path / "open")
    assert open_files["openadd/reference.py"] == (VECTORADD / "reference.py").read_text()
    assert load_problem(tmp_path / "open" / "openadd").tests == load_problem("vectoradd").tests


async def test_a_kernelbench_problems_bundle_brings_its_module_and_grades_locally(
    client: httpx.AsyncClient, admin: Account, tmp_path: Path
) -> None:
    """Its reference is the module competitors write ModelNew against, wrapped in code that
    is the same for every KernelBench problem: the bundle holds both."""
    module = (
        Path(__file__).resolve().parents[2] / "data" / "kernelbench_scaled_linear.py"
    ).read_text()
    created = await upload(client, admin, zip_of({"level1/bundled_linear.py": module}), "kb.zip")
    assert created.status_code == 201, created.text
    response = await client.get("/api/v1/problems/bundled_linear/bundle", headers=admin.headers)
    assert response.status_code == 200, response.text
    files = unpack(response.content, tmp_path)
    assert files["bundled_linear/model.py"] == module
    assert "ModelNew" in files["bundled_linear/submission.py"]
    local = load_problem(tmp_path / "bundled_linear")
    assert local.format == "kernelbench"
    with session_scope() as session:
        served = repository.get_problem(session, "bundled_linear")
        assert served is not None
        assert local.files == served.files


async def test_unknown_problem_and_the_schema(client: httpx.AsyncClient) -> None:
    missing = await client.get("/api/v1/problems/nope/bundle")
    assert missing.status_code == 404
    assert missing.json() == {"error": "not_found", "detail": "no problem named 'nope'"}
    schema = (await client.get("/openapi.json")).json()
    route = schema["paths"]["/api/v1/problems/{name}/bundle"]["get"]
    assert "application/zip" in route["responses"]["200"]["content"]
    assert "Content-Disposition" in route["responses"]["200"]["headers"]
    assert "404" in route["responses"]
    # Anyone may download a live problem's bundle: the token is optional.
    assert {} in route["security"]


async def test_an_organizer_downloads_a_hidden_problems_bundle_from_its_page(
    client: httpx.AsyncClient, browser: httpx.AsyncClient, admin: Account, tmp_path: Path
) -> None:
    """The page's link goes through the browser's session, not an API token: an admin
    signed in on the site gets the bundle of a problem only admins see yet; someone else
    gets the same 404 as for a problem that does not exist."""
    draft = organizer_zip("draftadd")
    assert (await upload(client, admin, draft, "d.zip")).status_code == 201
    await sign_in(browser, admin=True)
    page = await browser.get("/problems/draftadd", headers={"Accept": "text/html"})
    assert page.status_code == 200
    assert 'href="/problems/draftadd/bundle"' in page.text
    download = await browser.get("/problems/draftadd/bundle")
    assert download.status_code == 200, download.text
    assert download.headers["content-disposition"] == 'attachment; filename="draftadd.zip"'
    assert "draftadd/task.yml" in unpack(download.content, tmp_path)

    await sign_in(browser)
    assert (await browser.get("/problems/draftadd/bundle")).status_code == 404
    assert (await client.get("/problems/draftadd/bundle")).status_code == 404
