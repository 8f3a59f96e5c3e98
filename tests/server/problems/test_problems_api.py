"""Listing and reading problems; admins adding them from archives, which are untrusted."""

from __future__ import annotations

import io
import tarfile
import zipfile

import httpx
import pytest
import yaml

from grader.problem import BUILTIN_DIR
from tests.server.conftest import Account
from tests.server.rows import zip_of

pytestmark = pytest.mark.anyio

TASK = BUILTIN_DIR / "vectoradd"


def problem_zip(
    folder: str = "myadd", *, description: str = "add them", extra: dict[str, bytes] | None = None
) -> bytes:
    """A GPU MODE-style tree: <root>/utils.py shared, <root>/<folder>/task.yml using ../utils.py."""
    task = (
        (TASK / "task.yml")
        .read_text()
        .replace("Implement a float16 vector addition kernel.", description)
    )
    files = {
        "pmpp/utils.py": (BUILTIN_DIR / "utils.py").read_bytes(),
        f"pmpp/{folder}/task.yml": task.encode(),
        f"pmpp/{folder}/reference.py": (TASK / "reference.py").read_bytes(),
        f"pmpp/{folder}/task.py": (TASK / "task.py").read_bytes(),
        f"pmpp/{folder}/submission.py": (TASK / "submission.py").read_bytes(),
        **(extra or {}),
    }
    return zip_of(files)


def vectoradd_zip(
    folder: str,
    *,
    tests: list[dict[str, int]],
    cpu_benchmarks: list[dict[str, int]],
    reference: str,
) -> bytes:
    """vectoradd with these test and CPU benchmark cases and this reference."""
    spec = yaml.safe_load((TASK / "task.yml").read_text())
    spec["tests"] = tests
    spec["cpu_benchmarks"] = cpu_benchmarks
    return problem_zip(
        folder,
        extra={
            f"pmpp/{folder}/task.yml": yaml.safe_dump(spec).encode(),
            f"pmpp/{folder}/reference.py": reference.encode(),
        },
    )


async def upload(
    client: httpx.AsyncClient, account: Account, raw: bytes, filename: str, **data: str
) -> httpx.Response:
    return await client.post(
        "/api/v1/problems", files={"archive": (filename, raw)}, data=data, headers=account.headers
    )


async def test_list_and_read_builtin_problems(client: httpx.AsyncClient) -> None:
    names = [problem["name"] for problem in (await client.get("/api/v1/problems")).json()]
    assert {"vectoradd", "vectorsum"} <= set(names)
    detail = (await client.get("/api/v1/problems/vectoradd")).json()
    assert "float16" in detail["description"]
    assert detail["gpu_types"] == ["cpu"]
    assert {"size": 127, "seed": 4242} in detail["tests"]
    assert "custom_kernel" in detail["template"]
    missing = await client.get("/api/v1/problems/nope")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]


async def test_admin_adds_a_problem_and_a_new_version(
    client: httpx.AsyncClient, admin: Account
) -> None:
    created = await upload(client, admin, problem_zip(), "myadd.zip")
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "myadd" and created.json()["version"] == 1
    assert created.json()["created"] is True

    same = await upload(client, admin, problem_zip(), "myadd.zip")
    assert same.json()["version"] == 1  # unchanged files: no new version

    changed = await upload(client, admin, problem_zip(description="add them, quickly"), "myadd.zip")
    assert changed.status_code == 201
    assert changed.json()["version"] == 2 and changed.json()["created"] is False
    shown = (await client.get("/api/v1/problems/myadd", headers=admin.headers)).json()
    assert "quickly" in shown["description"] and shown["status"] == "validating"

    renamed = await upload(client, admin, problem_zip(), "x.zip", name="other-add")
    assert renamed.json()["name"] == "other-add"


async def test_tar_gz_archive(client: httpx.AsyncClient, admin: Account) -> None:
    buffer = io.BytesIO()
    with (
        tarfile.open(fileobj=buffer, mode="w:gz") as archive,
        zipfile.ZipFile(io.BytesIO(problem_zip("tarred"))) as source,
    ):
        for name in source.namelist():
            content = source.read(name)
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    response = await upload(client, admin, buffer.getvalue(), "tarred.tar.gz")
    assert response.status_code == 201, response.text


async def test_only_admins_add_problems(client: httpx.AsyncClient, alice: Account) -> None:
    response = await upload(client, alice, problem_zip(), "p.zip")
    assert response.status_code == 403 and response.json()["error"] == "forbidden"
    response = await client.post("/api/v1/problems", files={"archive": ("p.zip", problem_zip())})
    assert response.status_code == 401


def tar_with_symlink() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        link = tarfile.TarInfo("p/utils.py")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        archive.addfile(link)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("raw", "filename", "status", "words"),
    [
        (zip_of({"../../evil/task.yml": b"files: []"}), "a.zip", 422, ("unsafe path",)),
        (zip_of({"/abs/task.yml": b"files: []"}), "a.zip", 422, ("unsafe path",)),
        (tar_with_symlink(), "a.tar.gz", 422, ("not a regular file",)),
        (b"this is not an archive", "a.zip", 422, ("not a readable .zip",)),
        (b"\x1f\x8b garbage", "a.tar.gz", 422, ("not a readable .tar.gz",)),
        (b"whatever", "a.rar", 422, (".zip or a .tar.gz",)),
        (zip_of({"readme.md": b"hi"}), "a.zip", 422, ("no task.yml",)),
        (
            zip_of({"a/task.yml": b"files: []", "b/task.yml": b"files: []"}),
            "a.zip",
            422,
            ("several problems",),
        ),
        (
            zip_of({"p/task.yml": b"files:\n  - {name: reference.py, source: ../missing.py}\n"}),
            "a.zip",
            422,
            ("missing.py",),
        ),
        (zip_of({"p/task.yml": b": : not yaml : ["}), "a.zip", 422, ("task.yml",)),
    ],
)
async def test_hostile_or_broken_archives(
    client: httpx.AsyncClient,
    admin: Account,
    raw: bytes,
    filename: str,
    status: int,
    words: tuple[str, ...],
) -> None:
    response = await upload(client, admin, raw, filename)
    assert response.status_code == status, response.text
    for word in words:
        assert word in response.json()["detail"]


async def test_zip_bomb_is_refused(client: httpx.AsyncClient, admin: Account) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("p/task.yml", b"files: []")
        archive.writestr("p/big.bin", b"\0" * 60_000_000)
    response = await upload(client, admin, buffer.getvalue(), "bomb.zip")
    assert response.status_code == 413 and response.json()["error"] == "too_large"
