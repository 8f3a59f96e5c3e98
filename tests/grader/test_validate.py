"""Validating a problem on this host: the verdicts an organizer reads in the report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grader.problem import BUILTIN_DIR, example_solutions, load_problem
from grader.validate import check_reference, expected_to_fail, needs_cuda, validate


def test_solutions_are_found_in_both_layouts(tmp_path: Path) -> None:
    for path in ("solutions/correct/fast.py", "solutions/wrong/slow.py", "solutions/plain.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("def custom_kernel(data):\n    return data\n")
    (tmp_path / "solutions" / "notes.md").write_text("not a solution")
    found = example_solutions(tmp_path)
    assert sorted(found) == [
        "solutions/correct/fast.py",
        "solutions/plain.py",
        "solutions/wrong/slow.py",
    ]
    assert [expected_to_fail(path) for path in sorted(found)] == [False, False, True]
    assert expected_to_fail("solutions/wrong_zeros.py")
    assert needs_cuda("solutions/cuda_inline.py", "")
    assert needs_cuda("solutions/fast.py", "from torch.utils.cpp_extension import load_inline")
    assert not needs_cuda("solutions/triton.py", "import triton")


def test_a_builtin_problem_validates_clean_on_the_cpu() -> None:
    report = validate(
        load_problem("vectoradd"), example_solutions(BUILTIN_DIR / "vectoradd"), device="cpu"
    ).to_dict()
    assert report["status"] == "passed", report["message"]
    checks = {check["name"]: check for check in report["checks"]}
    assert checks["reference on every case"]["outcome"] == "ok"
    assert checks["reference graded in test mode"]["status"] == "passed"
    assert checks["reference graded in benchmark mode"]["status"] == "passed"
    assert checks["solutions/pytorch.py"]["status"] == "passed"
    assert checks["solutions/wrong_zeros.py"]["outcome"] == "ok"
    assert checks["solutions/wrong_zeros.py"]["status"] == "failed"
    # Never faked: a CUDA solution on a CPU worker is reported as skipped.
    assert checks["solutions/cuda_inline.py"]["outcome"] == "skipped"
    assert "needs CUDA" in checks["solutions/cuda_inline.py"]["message"]
    # Nor is a Helion one: it runs on GPU workers that have the package's helion extra.
    assert checks["solutions/helion.py"]["outcome"] == "skipped"
    assert "runs on GPU workers" in checks["solutions/helion.py"]["message"]
    # And CuTe DSL's, with the package's cute extra.
    assert checks["solutions/cute.py"]["outcome"] == "skipped"
    assert "written in CuTe DSL" in checks["solutions/cute.py"]["message"]
    assert "(3 skipped)" in report["message"]
    # Its test cases take well under 2 s here: test mode's limit is the floor, 20 s, as it
    # was before it was derived, and the organizer reads it.
    assert report["reference_test_cases_s"] < 2
    assert (report["test_cases_timeout_s"], report["test_cases_timeout_from"]) == (20, "reference")
    assert "test mode's cases may take 20 s on cpu" in report["message"]
    # Each benchmark case's physical floor is kept with the version: task.yml's bytes, and
    # no floor in seconds where the worker measured no peaks.
    problem = load_problem("vectoradd")
    assert [row["case"] for row in report["rooflines"]] == problem.benchmarks_for("cpu")
    assert all(row["declared"] and row["floor_s"] is None for row in report["rooflines"])


def test_validation_keeps_each_benchmark_cases_floor_figures(tmp_path: Path) -> None:
    """Declared where task.yml has a roofline (the built-in vectoradd's report, above, says
    so too); otherwise measured from the reference's own call (what it reads and writes,
    and a matrix product's flops)."""
    problem = load_problem("vectoradd")
    declared: list[dict[str, Any]] = []
    assert check_reference(problem, "cpu", declared).outcome == "ok"
    assert [r["case"] for r in declared] == problem.benchmarks_for("cpu")
    for row in declared:
        assert row["declared"] is True
        assert row["bytes"] == problem.roofline(row["case"])["bytes"]

    folder = tmp_path / "mm"
    folder.mkdir()
    (folder / "reference.py").write_text(MATMUL_REFERENCE)
    (folder / "task.yml").write_text(MATMUL_TASK)
    measured: list[dict[str, Any]] = []
    assert check_reference(load_problem(folder), "cpu", measured).outcome == "ok"
    [row] = measured
    assert row["declared"] is False
    assert row["flops"] == 2 * 64 * 32 * 16
    assert row["bytes"] == (64 * 32 + 32 * 16 + 64 * 16) * 4


MATMUL_REFERENCE = """import torch


def generate_input(m, k, n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)


def ref_kernel(data):
    a, b = data
    return a @ b


def check_implementation(data, output):
    expected = ref_kernel(data)
    if torch.allclose(output, expected, rtol=1e-4, atol=1e-4):
        return ""
    return "mismatch"
"""
MATMUL_TASK = """files:
  - {name: reference.py, source: reference.py}
lang: py
description: a small matrix product
tests:
  - {m: 8, k: 4, n: 2, seed: 1}
benchmarks:
  - {m: 64, k: 32, n: 16, seed: 2}
"""
