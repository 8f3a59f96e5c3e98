"""A multi-rank problem in GPU MODE's layout (`amd_distributed`: a folder per problem beside a
shared utils.py, task.yml with `multi_gpu: true`) whose `generate_input` returns the
reference's own objects, as their all2all does: it validates on the CPU at two ranks, and a
submission reads the objects' attributes as GPU MODE's eval.py hands them over."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.harness import grade
from grader.problem import example_solutions, load_problem
from grader.protocol import decode, encode
from grader.rankinputs import carried, rebuilt
from grader.report import Mode, Status, ValidationStatus
from grader.validate import validate

TASK_YML = """
files:
  - {"name": "submission.py", "source": "@SUBMISSION@"}
  - {"name": "task.py", "source": "task.py"}
  - {"name": "utils.py", "source": "../utils.py"}
  - {"name": "reference.py", "source": "reference.py"}
lang: "py"
multi_gpu: true
tests:
  - {"size": 100, "seed": 7, "world_size": 2}
benchmarks:
  - {"size": 1000, "seed": 8, "world_size": 2}
test_timeout: 120
benchmark_timeout: 120
"""

UTILS = """
import torch


def rank_device(rank):
    return torch.device(f"cuda:{rank}")
"""

TASK = """
from typing import Any, TypeVar

import torch

input_t = TypeVar("input_t", bound=tuple[Any, Any, int, int])
output_t = TypeVar("output_t", bound=torch.Tensor)
"""

# Its inputs: a dataclass holding a dtype, an object holding a tensor, the rank and the world
# size, made on "cuda:<rank>" as GPU MODE's references make them.
REFERENCE = """
import dataclasses

import torch
import torch.distributed as dist
from utils import rank_device


@dataclasses.dataclass
class ScaleConfig:
    scale: float
    dtype: torch.dtype = torch.float32


class RankData:
    def __init__(self, cfg, size, gen, device):
        self.x = torch.randn(size, generator=gen, device=device, dtype=cfg.dtype)


def generate_input(size, seed, rank, world_size):
    device = rank_device(rank)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed + rank)
    cfg = ScaleConfig(scale=0.5)
    return cfg, RankData(cfg, size, gen, device), rank, world_size


def ref_kernel(data):
    cfg, rank_data, rank, world_size = data
    out = (rank_data.x * cfg.scale).to(cfg.dtype)
    dist.all_reduce(out)
    return out


def check_implementation(data, output):
    expected = ref_kernel(data)
    if output.dtype == expected.dtype and torch.allclose(output, expected, atol=1e-5):
        return True, ""
    return False, "mismatch"
"""

SUBMISSION = """
import torch
import torch.distributed as dist


def custom_kernel(data):
    cfg, rank_data, rank, world_size = data
    assert isinstance(cfg.dtype, torch.dtype) and world_size == dist.get_world_size()
    out = rank_data.x.to(cfg.dtype) * cfg.scale
    dist.all_reduce(out)
    return out
"""

# generate_input hands over its generator: nothing the ranks could be given.
HANDS_OVER_ITS_GENERATOR = """
    return cfg, RankData(cfg, size, gen, device), rank, world_size, gen
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "utils.py").write_text(UTILS)
    problem = tmp_path / "scaled_sum"
    problem.mkdir()
    for name, text in {
        "task.yml": TASK_YML,
        "task.py": TASK,
        "reference.py": REFERENCE,
        "submission.py": SUBMISSION,
    }.items():
        (problem / name).write_text(text)
    (problem / "solutions" / "correct").mkdir(parents=True)
    (problem / "solutions" / "correct" / "attributes.py").write_text(SUBMISSION)
    return problem


def test_it_validates_at_two_ranks_on_the_cpu(folder: Path) -> None:
    problem = load_problem(folder)
    report = validate(problem, example_solutions(folder), device="cpu")
    assert report.status == ValidationStatus.PASSED, report.message
    assert [check.outcome for check in report.checks] == ["ok"] * 4


def test_a_submission_reads_the_objects_attributes_on_every_rank(folder: Path) -> None:
    report = grade(load_problem(folder), SUBMISSION, mode=Mode.TEST, device="cpu")
    assert report.status == Status.PASSED, report.message + report.stderr[-2000:]


def test_inputs_that_cannot_reach_the_ranks_are_named_not_a_crash(folder: Path) -> None:
    reference = folder / "reference.py"
    text = reference.read_text()
    reference.write_text(
        text.replace(
            "    return cfg, RankData(cfg, size, gen, device), rank, world_size\n",
            HANDS_OVER_ITS_GENERATOR,
        )
    )
    report = grade(load_problem(folder), SUBMISSION, mode=Mode.TEST, device="cpu")
    assert report.status == Status.ERROR
    assert "cannot be sent to the submission's ranks" in report.message, report.message
    assert "exited" not in report.message


def test_the_objects_cross_the_channel_as_their_attributes(folder: Path) -> None:
    import torch

    class Config:
        def __init__(self) -> None:
            self.scale, self.dtype, self.shape = 0.5, torch.bfloat16, (2, 3)

    sent = (Config(), {"x": torch.ones(2)}, 1)
    blob, raws = encode(carried(sent))
    assert len(raws) == 1  # the tensor's bytes travel as bytes, not in the skeleton
    skeleton = decode(blob)
    # The harness passes the attributes on as data; it never rebuilds an object.
    assert isinstance(skeleton[0], dict)
    config = rebuilt(skeleton)[0]
    assert (config.scale, config.dtype, config.shape) == (0.5, torch.bfloat16, (2, 3))
