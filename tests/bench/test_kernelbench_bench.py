"""The KernelBench benchmark scripts' own parts: the candidates and their manifest, the
sweep's and the side-by-side's tables from canned results, and loading KernelBench's eval
module where its checkout is present (.ext/KernelBench, never in a fresh clone)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench import kernelbench_candidates as candidates
from bench import kernelbench_side_by_side as side
from bench import kernelbench_sweep as sweep
from bench.gpumode_sweep import Row

REPO = Path(__file__).resolve().parents[2]
CHECKOUT = REPO / ".ext" / "KernelBench"
needs_checkout = pytest.mark.skipif(
    not (CHECKOUT / "KernelBench" / "level1").is_dir(), reason="no .ext/KernelBench here"
)

STAND_IN_MODULE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, *inputs):
        return inputs[0]


def get_inputs():
    return [torch.rand(4, 4)]


def get_init_inputs():
    return []
"""


def fake_checkout(root: Path) -> Path:
    """A checkout holding a stand-in module at every label the candidates use."""
    for spec in candidates.SPECS:
        path = root / "KernelBench" / f"{spec.label}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STAND_IN_MODULE)
    return root


def test_the_manifest_holds_over_a_hundred_candidates_of_every_kind(tmp_path: Path) -> None:
    made = candidates.write_candidates(fake_checkout(tmp_path / "kb"), tmp_path / "out")
    assert len(made) >= 100
    kinds = Counter(c.kind for c in made)
    assert set(kinds) == set(candidates.KINDS)
    assert kinds["reference"] == len(candidates.SPECS)
    hacks = Counter(c.name for c in made if c.kind == "hack")
    assert all(hacks[name] >= 3 for name in candidates.HACK_VERDICTS), hacks
    assert sum(c.backend == candidates.TRITON for c in made) >= 5
    listed = candidates.load_manifest(tmp_path / "out")
    assert [c.id for c in listed] == [c.id for c in made]
    for candidate in listed:
        assert candidate.expected in ("pass", "fail", "flag"), candidate.id
        assert candidate.kernelbench in ("pass", "fail"), candidate.id
        assert candidate.kerneljudge in ("pass", "fail", "flag"), candidate.id
        assert candidate.why, candidate.id
        text = (tmp_path / "out" / candidate.file).read_text()
        compile(text, candidate.file, "exec")
        assert text.startswith(f"# KernelBench candidate {candidate.id}: kind {candidate.kind}")
        assert "class ModelNew(Model)" in text and candidates.MARK in text


@pytest.mark.parametrize("real", [False, pytest.param(True, marks=needs_checkout)])
def test_the_candidates_screen_as_their_expected_verdicts_say(tmp_path: Path, real: bool) -> None:
    """Our side's expectation rests on the static screening where it finds something: a
    rejection is a fail, a flag a flag unless the candidate fails on running; honest
    kernels (and the modules as published, where the checkout is here) screen clean. The
    run on a GPU shows the rest."""
    from grader.screen import screen

    checkout = CHECKOUT if real else fake_checkout(tmp_path / "kb")
    made = candidates.write_candidates(checkout, tmp_path / "out")
    for candidate in made:
        found = screen((tmp_path / "out" / candidate.file).read_text())
        if found.rejections:
            assert candidate.kerneljudge == "fail", candidate.id
        elif found.flags:  # flagged, unless it fails on running
            assert candidate.kerneljudge in ("flag", "fail"), candidate.id
        elif candidate.kind in ("reference", "correct", "slower"):
            assert candidate.kerneljudge == "pass", candidate.id


@needs_checkout
def test_every_candidate_of_the_real_modules_compiles(tmp_path: Path) -> None:
    made = candidates.write_candidates(CHECKOUT, tmp_path)
    for candidate in made:
        compile((tmp_path / candidate.file).read_text(), candidate.file, "exec")


@needs_checkout
def test_kernelbench_eval_loads_without_the_packages_it_never_uses() -> None:
    """In a process of its own: the stand-ins must not reach this one's modules."""
    code = (
        "import inspect, json; from pathlib import Path\n"
        "from bench.kernelbench_side_by_side import kernelbench_eval\n"
        f"module, stood_in = kernelbench_eval(Path({str(CHECKOUT)!r}))\n"
        "params = inspect.signature(module.eval_kernel_against_ref).parameters\n"
        "print(json.dumps(sorted(params)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    params = set(json.loads(done.stdout.strip().splitlines()[-1]))
    passed = {"seed_num", "num_correct_trials", "num_perf_trials", "measure_performance",
              "timing_method", "build_dir", "device", "backend", "precision",
              "check_for_excessive_speedup"}  # fmt: skip
    assert passed <= params


def test_the_sweep_lists_modules_in_kernelbench_order(tmp_path: Path) -> None:
    level = tmp_path / "KernelBench" / "level1"
    level.mkdir(parents=True)
    for name in ("10_B.py", "2_A.py", "1_C.py", "notes.py"):
        (level / name).write_text(STAND_IN_MODULE)
    labels = [sweep.module_label(path) for path in sweep.modules(tmp_path, (1,))]
    assert labels == ["level1/1_C", "level1/2_A", "level1/10_B"]


def test_the_sweep_table_counts_outcomes_per_level_and_lists_the_rest() -> None:
    rows = [
        Row("level1/1_A", "cuda", "as promised"),
        Row("level1/2_B", "cuda", "problem", "the reference's outputs differ between runs"),
        Row("level2/1_C", "cuda", "timeout", "validation did not finish within 240 s"),
        Row("level2/3_D", "cuda", "as promised"),
    ]
    text = sweep.table(rows)
    assert "| level | problems | as promised | problem | timeout |" in text
    assert "| level1 | 2 | 1 | 1 | 0 |" in text
    assert "| level2 | 2 | 1 | 0 | 1 |" in text
    assert "| all | 4 | 2 | 1 | 1 |" in text
    assert "| `level1/2_B` | problem | the reference's outputs differ between runs |" in text
    assert "level1/1_A" not in text


def kb_result(correct: bool, runtime: float = 1.0, reference: float = 2.0) -> dict[str, object]:
    return {"compiled": True, "correctness": correct, "runtime": runtime,
            "ref_runtime": reference, "metadata": {"correctness_trials": "(5 / 5)"}}  # fmt: skip


def ours(status: str, score: float | None = 1e-3, flags: tuple[str, ...] = ()) -> dict[str, object]:
    report = {"status": status, "score_s": score, "message": "", "flags": list(flags)}
    return {"test": {**report, "score_s": None}, "leaderboard": report}


def canned_row(cid: str, kind: str, kb: dict[str, object], mine: dict[str, object],
               expect_kb: str, expect_ours: str) -> dict[str, object]:  # fmt: skip
    return {"id": cid, "problem": cid.rsplit("/", 1)[0], "kind": kind, "name": cid,
            "expected": expect_ours, "expect_kernelbench": expect_kb,
            "expect_kerneljudge": expect_ours, "why": "the reason",
            "kernelbench": kb, "kerneljudge": mine}  # fmt: skip


def test_the_side_by_side_table_shows_agreement_speedups_and_disagreements() -> None:
    record = {
        "baselines": {"level1/1_A": {"status": "passed", "score_s": 2e-3}},
        "results": [
            canned_row("level1/1_A/reference_model", "reference", kb_result(True), ours("passed"),
                       "pass", "pass"),
            canned_row("level1/1_A/wrong_zeros", "wrong", kb_result(False), ours("failed"),
                       "fail", "fail"),
            canned_row("level1/1_A/hack_patched_allclose", "hack", kb_result(True, 0.1),
                       ours("rejected"), "pass", "fail"),
            canned_row("level1/1_A/hack_side_stream", "hack", kb_result(True, 0.01),
                       ours("passed", flags=("screening: line 4: uses torch.cuda.Stream: x",)),
                       "pass", "flag"),
            canned_row("level1/1_A/hack_surprise", "hack", kb_result(False), ours("passed"),
                       "fail", "fail"),
        ],
    }  # fmt: skip
    text = side.table(record)
    assert "| reference | 1 | 1 | 0 | 0 | 0 | 0 | 1/1 | 1/1 |" in text
    assert "| wrong | 1 | 0 | 1 | 0 | 0 | 0 | 1/1 | 1/1 |" in text
    assert "| hack | 3 | 1 | 0 | 1 | 1 | 0 | 3/3 | 2/3 |" in text
    # both pass: KernelBench 2.0 / 1.0 beside ours 2e-3 / 1e-3
    assert "| `level1/1_A/reference_model` | 2.00 | 2.00 | 1.00 |" in text
    assert "| `level1/1_A/hack_side_stream` (flagged) | 200.00 | 2.00 | 100.00 |" in text
    disagreement = next(line for line in text.splitlines() if "hack_patched_allclose" in line)
    assert "pass: correct (5 / 5)" in disagreement and "fail: test: rejected" in disagreement
    surprise = next(line for line in text.splitlines() if "hack_surprise" in line)
    assert "NOT as expected" in surprise


def test_a_harness_that_did_not_run_or_crashed_is_not_compared() -> None:
    assert side.agreement("", "pass") == "not compared"
    assert side.agreement("error", "fail") == "not compared"
    assert side.their_verdict({"error": "did not finish within 240 s"})[0] == "error"
    assert side.their_verdict({"compiled": False, "metadata": {}})[0] == "fail"
    assert side.our_verdict({"test": {"status": "failed", "message": "output 0"}}) == (
        "fail",
        "test: failed: output 0",
    )
