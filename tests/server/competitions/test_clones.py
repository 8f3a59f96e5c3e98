"""Near-clone detection among a competition's entries: winnowing fingerprints over
normalized tokens see through renamed variables, reformatting and comments, in Python and
in a CUDA source given to load_inline, and keep a genuinely different kernel apart; the
organizers read the pairs from different teams (API and command line), and nothing is done
about them."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from server.cli import app as cli
from server.competitions.winnowing import fingerprints, similarity
from tests.server.competitions.rig import (
    OPENED,
    add_competition,
    enter,
    problems,
    ranked,
    red_and_blue,
)
from tests.server.conftest import Account, make_account
from tests.server.web_client import sign_in

SOLUTIONS = Path(__file__).parents[3] / "problems" / "vectoradd" / "solutions"
TRITON = (SOLUTIONS / "triton.py").read_text()
CUDA = (SOLUTIONS / "cuda_inline.py").read_text()
PYTORCH = (SOLUTIONS / "pytorch.py").read_text()
TEMPLATE = (SOLUTIONS.parent / "submission.py").read_text()
THRESHOLD = 0.8

# vectoradd's Triton solution, renamed, reformatted, commented and given a docstring.
TRITON_COPY = '''
# My own vector addition, written from scratch
import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def vec_add(x_ptr, y_ptr, z_ptr, count,
            BLOCK: tl.constexpr):
    # where this program starts
    idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    keep = idx < count  # guard the tail
    x = tl.load(x_ptr + idx, mask=keep)
    y = tl.load(y_ptr + idx, mask=keep)
    tl.store(z_ptr + idx, x + y, mask=keep)


def custom_kernel(data: input_t) -> output_t:
    """Adds two vectors."""
    first, second, result = data
    total = result.numel()
    size = 2048
    vec_add[(triton.cdiv(total, size), )](
        first, second, result, total, BLOCK=size
    )
    return result
'''

# The CUDA solution with its kernel's and host function's names and variables renamed
# inside the CUDA source, a comment added there and its lines joined differently.
CUDA_COPY = (
    CUDA.replace("add_kernel", "my_sum")
    .replace("add_into", "sum_into")
    .replace("int64_t i =", "// one thread per element\n    int64_t idx =")
    .replace(
        "if (i < n) out[i] = __hadd(a[i], b[i]);",
        "if (idx < n) {\n out[idx] = __hadd(a[idx], b[idx]);\n }",
    )
    .replace("int threads = 256;", "int tpb = 256;")
    .replace("(n + threads - 1) / threads", "(n + tpb - 1) / tpb")
    .replace("blocks, threads, 0", "blocks, tpb, 0")
    .replace("_module", "_ext")
)  # fmt: skip


def similar(first: str, second: str) -> float:
    return similarity(fingerprints(first), fingerprints(second))


@pytest.mark.parametrize(
    ("original", "copy"), [(TRITON, TRITON_COPY), (CUDA, CUDA_COPY)], ids=["triton", "cuda"]
)
def test_a_renamed_reformatted_commented_copy_is_a_near_clone(original: str, copy: str) -> None:
    assert copy != original
    assert similar(original, copy) >= THRESHOLD


def test_different_kernels_for_the_same_problem_are_not() -> None:
    for first, second in [(TRITON, CUDA), (TRITON, PYTORCH), (CUDA, PYTORCH)]:
        assert similar(first, second) < 0.5


def test_source_that_does_not_tokenize_is_still_fingerprinted() -> None:
    broken = TRITON.replace("def custom_kernel(data: input_t)", "def custom_kernel(data: (")
    assert fingerprints(broken) and similar(TRITON, broken) > 0.5
    assert fingerprints("") == frozenset() and similar("", "") == 0.0


@pytest.mark.anyio
async def test_organizers_read_the_pairs_from_different_teams(
    client: httpx.AsyncClient, admin: Account
) -> None:
    """Red's entry is vectoradd's Triton solution, Blue's a disguised copy of it, Green's the
    CUDA one; Red's own second member submitted the same code too (one team: no pair);
    Yellow and Purple both entered the problem's template as given (no evidence: no pair)."""
    (problem,) = problems(1)
    name = await add_competition(client, admin, [problem])
    red, red_too, blue, green, yellow, purple = (make_account() for _ in range(6))
    await enter(client, name, red, red_too, team="Red")
    for member, team in [(blue, "Blue"), (green, "Green"), (yellow, "Yellow"), (purple, "Purple")]:
        await enter(client, name, member, team=team)
    at = OPENED + timedelta(hours=1)
    red_id = ranked(red, problem, 1e-3, at, code=TRITON)
    ranked(red_too, problem, 2e-3, at, code=TRITON)
    blue_id = ranked(blue, problem, 1.1e-3, at, code=TRITON_COPY)
    ranked(green, problem, 1.2e-3, at, code=CUDA)
    ranked(yellow, problem, 5e-3, at, code=TEMPLATE)
    ranked(purple, problem, 6e-3, at, code=TEMPLATE)

    response = await client.get(f"/api/v1/competitions/{name}/clones", headers=admin.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["threshold"] == THRESHOLD
    [pair] = body["pairs"]
    assert pair["problem"] == problem and pair["similarity"] >= THRESHOLD
    sides = {(side["team"], side["submission_id"]) for side in (pair["first"], pair["second"])}
    assert sides == {("Red", red_id), ("Blue", blue_id)}
    # Listed, not acted on: both still stand.
    standing = await client.get(f"/api/v1/competitions/{name}/standings")
    assert {"Red", "Blue"} <= {row["team"] for row in standing.json()["rows"]}

    shown = CliRunner().invoke(cli, ["competition", "clones", name, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["pairs"] == body["pairs"]
    text = CliRunner().invoke(cli, ["competition", "clones", name]).output
    assert "1 near-clone pairs" in text and "Red" in text and "Blue" in text

    refused = await client.get(f"/api/v1/competitions/{name}/clones", headers=red.headers)
    assert refused.status_code == 403
    missing = await client.get("/api/v1/competitions/no-such/clones", headers=admin.headers)
    assert missing.status_code == 404


@pytest.mark.anyio
async def test_the_competition_page_lists_the_pairs_to_organizers_only(
    client: httpx.AsyncClient, browser: httpx.AsyncClient
) -> None:
    (problem,) = problems(1)
    admin_account = make_account(admin=True)
    name, red, blue = await red_and_blue(client, admin_account, [problem])
    at = OPENED + timedelta(hours=1)
    ranked(red, problem, 1e-3, at, code=TRITON)
    blue_id = ranked(blue, problem, 1.1e-3, at, code=TRITON_COPY)

    public = await client.get(f"/competitions/{name}")
    assert public.status_code == 200 and 'id="clones"' not in public.text
    await sign_in(browser, admin=True)
    page = await browser.get(f"/competitions/{name}")
    assert page.status_code == 200
    section = page.text.split('id="clones"', 1)[1].split("</section>", 1)[0]
    assert "Near-clones" in section and "100%" in section
    assert "Red" in section and f'href="/submissions/{blue_id}"' in section
