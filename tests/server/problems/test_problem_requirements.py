"""What an organizer is told when a problem depends on what KernelJudge will not run or a
worker does not have: an upload that relies on its own evaluator is refused with the
reason, a malformed `requires` is refused, and a worker's "needs" report is shown as such
and keeps the problem from going live."""

from __future__ import annotations

import io
import zipfile

import httpx
import pytest

from server.problems import validation
from tests.server.conftest import Account
from tests.server.problems.test_problem_lifecycle import record_round
from tests.server.problems.test_problems_api import problem_zip, upload
from tests.server.rows import zip_of

pytestmark = pytest.mark.anyio

# princeton/cross_entropy_py's shape: entry points of its own, called by its own eval.py.
OWN_EVALUATOR = {
    "xent/task.yml": """\
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "reference.py", "source": "reference.py"}
  - {"name": "eval.py", "source": "eval.py"}
config:
  main: "eval.py"
tests:
  - {"vocab_size": 32}
""",
    "xent/reference.py": "def generate_inputs(b, v):\n    pass\n\n\ndef reference_forward(x):\n"
    "    pass\n",
    "xent/eval.py": "from reference import generate_inputs, reference_forward\n",
}


async def test_a_problem_that_depends_on_its_own_evaluator_is_refused_at_upload(
    client: httpx.AsyncClient, admin: Account
) -> None:
    refused = await upload(client, admin, zip_of(OWN_EVALUATOR), "xent.zip")
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert detail.startswith("xent/task.yml: this problem depends on its own evaluator (eval.py)")
    assert "eval.py calls its generate_inputs, reference_forward instead" in detail
    assert (await client.get("/api/v1/problems/xent", headers=admin.headers)).status_code == 404


async def test_a_malformed_declaration_of_needs_is_refused_at_upload(
    client: httpx.AsyncClient, admin: Account
) -> None:
    raw = problem_zip("needsh200")
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        entries = {name: archive.read(name).decode() for name in archive.namelist()}
    entries["pmpp/needsh200/task.yml"] += "requires:\n  devices: [NVIDIA H200]\n"
    refused = await upload(client, admin, zip_of(entries), "p.zip")
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert "requires.devices names 'nvidia h200'; name device kinds (cpu, cuda)" in detail


async def test_a_device_that_cannot_grade_the_problem_is_reported_as_needs(
    client: httpx.AsyncClient, admin: Account
) -> None:
    created = await upload(client, admin, problem_zip("blackwellonly"), "p.zip")
    assert created.status_code == 201, created.text
    record_round("blackwellonly", "needs")
    shown = await client.get("/api/v1/problems/blackwellonly/validation", headers=admin.headers)
    device = shown.json()["devices"][0]
    assert device["status"] == validation.ValidationStatus.NEEDS == "needs"
    assert device["report"]["message"] == "needs by the test"
    assert shown.json()["status"] == "invalid"
