"""Adding a KernelBench module by REST: a .zip holding one module becomes a problem."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.server.conftest import Account
from tests.server.rows import zip_of
from tests.server.web_client import log_in, make_user

pytestmark = pytest.mark.anyio

MODULE = Path(__file__).resolve().parents[2] / "data" / "kernelbench_scaled_linear.py"


async def upload(client: httpx.AsyncClient, admin: Account, raw: bytes) -> httpx.Response:
    return await client.post(
        "/api/v1/problems", files={"archive": ("kb.zip", raw)}, headers=admin.headers
    )


async def test_a_kernelbench_module_is_added_under_its_file_name(
    client: httpx.AsyncClient, admin: Account
) -> None:
    created = await upload(client, admin, zip_of({"level1/19_ScaledLinear.py": MODULE.read_text()}))
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "19_scaledlinear"  # names are lowercase slugs
    # Admins see it while it is validated; competitors once it is live (tests/integration).
    detail = (await client.get("/api/v1/problems/19_scaledlinear", headers=admin.headers)).json()
    assert detail["status"] == "validating"
    assert "ModelNew" in detail["template"] and detail["tests"] == [
        {"seed": 1},
        {"seed": 2},
        {"seed": 3},
    ]


async def test_two_modules_or_none_are_refused_with_a_reason(
    client: httpx.AsyncClient, admin: Account
) -> None:
    two = await upload(
        client, admin, zip_of({"a.py": MODULE.read_text(), "b.py": MODULE.read_text()})
    )
    assert two.status_code == 422 and "several KernelBench modules" in two.json()["detail"]
    none = await upload(client, admin, zip_of({"helper.py": "x = 1\n"}))
    assert none.status_code == 422 and "no KernelBench module" in none.json()["detail"]


async def test_the_problem_page_states_the_kernelbench_contract(
    client: httpx.AsyncClient, admin: Account
) -> None:
    name, token = make_user("kbadmin", admin=True)
    await upload(client, Account(name, token), zip_of({"7_ScaledLinear.py": MODULE.read_text()}))
    # Until a worker has validated it, only admins see its page.
    assert (await client.get("/problems/7_scaledlinear")).status_code == 404
    await log_in(client, name)
    page = await client.get("/problems/7_scaledlinear")
    assert page.status_code == 200
    assert "class ModelNew" in page.text and "custom_kernel(data)" not in page.text
