"""An organizer's upload is validated by a real worker before competitors see it: a clean
problem goes live and takes submissions; a broken reference, a reference producing NaN or a
"wrong" solution that passes leave it invalid, with a report saying why."""

from __future__ import annotations

import io
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from rig.processes import (
    REPO_ROOT,
    TERMINAL,
    add_user,
    service_env,
    serving,
    submit,
    wait_for,
)

pytestmark = pytest.mark.integration

VECTORSUM = REPO_ROOT / "problems" / "vectorsum"
RIGHT = (VECTORSUM / "solutions" / "pytorch.py").read_text()
WRONG = (VECTORSUM / "solutions" / "wrong.py").read_text()
REFERENCE = (VECTORSUM / "reference.py").read_text()


@dataclass
class Site:
    base: str
    admin: str
    competitor: str
    log: Path
    author: str = ""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("validation")
    env = service_env(root / "var")
    admin = add_user(env, "olga", admin=True)
    competitor = add_user(env, "pete")
    author = add_user(env, "ada", author=True)
    log = root / "serve.log"
    with serving(env, log) as base:
        yield Site(base, admin, competitor, log, author)


def vectorsum_zip(
    folder: str, *, reference: str = REFERENCE, solutions: dict[str, str] | None = None
) -> bytes:
    """vectorsum as an organizer would pack it, with its own reference and solutions."""
    files = {
        "pack/utils.py": (REPO_ROOT / "problems" / "utils.py").read_text(),
        f"pack/{folder}/task.yml": (VECTORSUM / "task.yml").read_text(),
        f"pack/{folder}/task.py": (VECTORSUM / "task.py").read_text(),
        f"pack/{folder}/submission.py": (VECTORSUM / "submission.py").read_text(),
        f"pack/{folder}/reference.py": reference,
        **{f"pack/{folder}/{path}": code for path, code in (solutions or {}).items()},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def upload(site: Site, raw: bytes, token: str = "", **form: str) -> dict[str, Any]:
    response = httpx.post(
        f"{site.base}/api/v1/problems",
        files={"archive": ("p.zip", raw)},
        data=form,
        headers=headers(token or site.admin),
        timeout=60,
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def wait_validated(
    site: Site, name: str, timeout_s: float = 240, token: str = ""
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, Any] = {}
    while time.monotonic() < deadline:
        seen = httpx.get(
            f"{site.base}/api/v1/problems/{name}/validation",
            headers=headers(token or site.admin),
            timeout=10,
        ).json()
        # A live problem stays live through a round: its devices tell when the round ends.
        if seen["status"] != "validating" and all(
            device["status"] != "queued" for device in seen["devices"]
        ):
            return seen
        time.sleep(0.5)
    raise AssertionError(f"{name} stayed validating: {seen}\n{site.log.read_text()[-4000:]}")


def checks_of(validation: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (device,) = validation["devices"]
    return {check["name"]: check for check in device["report"]["checks"]}


def test_a_clean_problem_goes_live_and_takes_submissions(site: Site) -> None:
    created = upload(
        site,
        vectorsum_zip(
            "cleansum",
            solutions={"solutions/correct/plain.py": RIGHT, "solutions/wrong/half.py": WRONG},
        ),
    )
    assert created["status"] == "validating"
    # While it is validated, competitors neither see it nor submit to it.
    hidden = httpx.get(f"{site.base}/api/v1/problems/cleansum", timeout=10)
    assert hidden.status_code == 404
    refused = httpx.post(
        f"{site.base}/api/v1/submissions",
        json={"problem": "cleansum", "code": RIGHT, "mode": "test"},
        headers=headers(site.competitor),
        timeout=30,
    )
    assert refused.status_code == 409, refused.text
    assert "being validated" in refused.json()["detail"]

    validation = wait_validated(site, "cleansum")
    assert validation["status"] == "live", validation
    (device,) = validation["devices"]
    assert device["gpu"] == "cpu" and device["status"] == "passed" and device["worker"]
    checks = checks_of(validation)
    assert checks["solutions/correct/plain.py"]["outcome"] == "ok"
    assert checks["solutions/correct/plain.py"]["status"] == "passed"
    assert checks["solutions/wrong/half.py"]["outcome"] == "ok"
    assert checks["solutions/wrong/half.py"]["status"] == "failed"
    assert checks["reference graded in benchmark mode"]["status"] == "passed"

    listed = httpx.get(f"{site.base}/api/v1/problems", timeout=10).json()
    assert "cleansum" in {problem["name"] for problem in listed}
    sid = submit(site.base, site.competitor, "cleansum", RIGHT, "test")
    report = wait_for(site.base, site.competitor, sid, TERMINAL, 120, site.log)
    assert report["status"] == "passed", report["message"]

    # An admin runs it again: competitors keep it while the new round runs.
    again = httpx.post(
        f"{site.base}/api/v1/problems/cleansum/validation",
        headers=headers(site.admin),
        timeout=30,
    )
    assert again.status_code == 202 and again.json()["status"] == "live"
    assert again.json()["attempt"] == validation["attempt"] + 1
    assert httpx.get(f"{site.base}/api/v1/problems/cleansum", timeout=10).status_code == 200
    revalidated = wait_validated(site, "cleansum")
    assert revalidated["status"] == "live" and revalidated["devices"][0]["status"] == "passed"
    audit = httpx.get(
        f"{site.base}/api/v1/admin/audit", headers=headers(site.admin), timeout=10
    ).json()
    assert any(
        e["action"] == "problem.validate" and e["target"] == "cleansum" for e in audit["entries"]
    )


def test_a_wrong_solution_that_passes_makes_the_problem_invalid(site: Site) -> None:
    upload(
        site,
        vectorsum_zip(
            "lenientsum",
            solutions={"solutions/pytorch.py": RIGHT, "solutions/wrong_but_right.py": RIGHT},
        ),
    )
    validation = wait_validated(site, "lenientsum")
    assert validation["status"] == "invalid"
    (device,) = validation["devices"]
    assert device["status"] == "failed"
    assert "solutions/wrong_but_right.py" in device["report"]["message"]
    assert checks_of(validation)["solutions/wrong_but_right.py"]["outcome"] == "problem"
    assert checks_of(validation)["solutions/pytorch.py"]["outcome"] == "ok"
    refused = httpx.post(
        f"{site.base}/api/v1/submissions",
        json={"problem": "lenientsum", "code": RIGHT, "mode": "test"},
        headers=headers(site.competitor),
        timeout=30,
    )
    assert refused.status_code == 409 and "failed validation" in refused.json()["detail"]


@pytest.mark.parametrize(
    ("name", "reference", "words"),
    [
        (
            "raisingsum",
            REFERENCE.replace(
                "    return data.double().sum().float()",
                "    raise RuntimeError('reference broke')",
            ),
            ("ref_kernel raised", "reference broke"),
        ),
        (
            "nansum",
            REFERENCE.replace(
                "    return data.double().sum().float()",
                "    return data.double().sum().float() * float('nan')",
            ),
            ("NaN or infinity",),
        ),
    ],
)
def test_a_broken_reference_makes_the_problem_invalid(
    site: Site, name: str, reference: str, words: tuple[str, ...]
) -> None:
    upload(site, vectorsum_zip(name, reference=reference, solutions={"solutions/a.py": RIGHT}))
    validation = wait_validated(site, name)
    assert validation["status"] == "invalid"
    checks = checks_of(validation)
    first = checks["reference on every case"]
    assert first["outcome"] == "problem"
    for word in words:
        assert word in first["message"]
    # Nothing else is graded against a broken reference.
    assert checks["solutions/a.py"]["outcome"] == "skipped"
    hidden = httpx.get(f"{site.base}/api/v1/problems/{name}", timeout=10)
    assert hidden.status_code == 404


def probing(marker: Path) -> str:
    """vectorsum's reference, trying at import to leave a file on the worker's host."""
    return (
        f"try:\n    open({str(marker)!r}, 'w').write('reached')\nexcept OSError:\n    pass\n"
        + REFERENCE
    )


def test_an_authors_reference_is_validated_and_graded_only_in_its_sandbox(
    site: Site, tmp_path: Path
) -> None:
    """The same reference reaches the worker's host as an organizer's problem and does not
    as an author's: the service tells the worker, and the worker keeps it in a sandbox."""
    organizers, authors = tmp_path / "organizers", tmp_path / "authors"
    upload(site, vectorsum_zip("probed", reference=probing(organizers)))
    assert wait_validated(site, "probed")["status"] == "live"
    assert organizers.read_text() == "reached"

    created = upload(site, vectorsum_zip("ownsum", reference=probing(authors)), site.author)
    assert created["private"] is True
    validation = wait_validated(site, "ownsum", token=site.author)
    assert validation["status"] == "live", validation
    sid = submit(site.base, site.author, "ownsum", RIGHT, "test")
    report = wait_for(site.base, site.author, sid, TERMINAL, 120, site.log)
    assert report["status"] == "passed", report["message"]
    assert not authors.exists()
    # Its author's alone: a competitor neither sees nor submits to it.
    for path in ("/api/v1/problems/ownsum", f"/api/v1/submissions/{sid}"):
        seen = httpx.get(f"{site.base}{path}", headers=headers(site.competitor), timeout=10)
        assert seen.status_code == 404
