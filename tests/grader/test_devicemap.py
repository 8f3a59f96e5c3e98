"""A problem whose reference hard-codes CUDA (as GPU MODE's do) grades unchanged on a CPU
worker: the harness reads "cuda" as the CPU where the reference makes its inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

from grader.devicemap import cuda_as_cpu
from grader.harness import grade
from grader.problem import BUILTIN_DIR, load_problem

CUDA_REFERENCE = """
import torch
from task import input_t, output_t
from utils import make_match_reference


def ref_kernel(data: input_t) -> output_t:
    A, B, out = data
    torch.cuda.synchronize()
    return A + B


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    A = torch.randn(size, size, device="cuda", dtype=torch.float16, generator=gen)
    B = torch.randn(size, size, dtype=torch.float16, generator=gen).cuda()
    out = torch.empty(size, size, dtype=torch.float16).to("cuda:0")
    return A, B, out


check_implementation = make_match_reference(ref_kernel, rtol=1e-3, atol=1e-3)
"""


def test_cuda_names_the_cpu_only_inside() -> None:
    generator = torch.Generator
    with cuda_as_cpu():
        gen = torch.Generator(device="cuda")
        made = torch.zeros(2, device="cuda")
        assert gen.device.type == "cpu" and made.device.type == "cpu"
        assert isinstance(gen, generator)
    assert torch.Generator is generator


def test_a_problem_written_for_cuda_grades_on_the_cpu(tmp_path: Path) -> None:
    if torch.cuda.is_available():
        return  # on a GPU host the problem simply runs on CUDA
    folder = tmp_path / "vectoradd_cuda_only"
    shutil.copytree(BUILTIN_DIR / "vectoradd", folder)
    shutil.copy(BUILTIN_DIR / "utils.py", tmp_path / "utils.py")
    (folder / "reference.py").write_text(CUDA_REFERENCE)
    problem = load_problem(folder)
    right = "def custom_kernel(data):\n    A, B, out = data\n    out[...] = A + B\n    return out\n"
    wrong = "def custom_kernel(data):\n    A, B, out = data\n    out[...] = A - B\n    return out\n"
    assert grade(problem, right, device="cpu").status == "passed"
    report = grade(problem, wrong, device="cpu")
    assert report.status == "failed" and "mismatch" in report.message
