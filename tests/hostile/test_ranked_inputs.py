"""Learning the ranked run in advance (catalogue line 29): a submission that prints the
ranked inputs and their answers in one grading, and answers from that table in the next.
Each leaderboard-mode grading draws its inputs from the secret seed mixed with a fresh
nonce, so the table never matches again; fixing the nonce, as a grader without one would,
shows the attack working. Graded in the corpus rig, as a worker grades."""

from __future__ import annotations

import re
from typing import Any

from tests.hostile.conftest import Canaries
from tests.hostile.test_corpus import QUICK, REPO, Rig, rig, run_in_rig

__all__ = ["rig"]  # the corpus rig, one per module

PROBLEM = "vectorsum"
# A lookup that misses computes like the honest solution, plus the cost of its key: it may
# be a little slower than the honest score, never faster by more than timing noise.
NOISE = 1.25

# Each prints once per distinct input (warm-up calls repeat one input thousands of times),
# and only its first inputs: the report keeps 64 KiB of stdout, and a grading's batches
# hand over thousands of input sets.
LEARNER = """
import torch

SEEN = set()

def custom_kernel(data):
    key = (data.numel(), tuple(round(v, 7) for v in data[:4].tolist()))
    answer = data.double().sum().float()
    if key not in SEEN and len(SEEN) < 400:
        SEEN.add(key)
        print("KJ-TABLE", repr((key, float(answer))), flush=True)
    return answer
"""

LOOKUP = """
import torch

TABLE = dict(__TABLE__)
SEEN = set()

def custom_kernel(data):
    key = (data.numel(), tuple(round(v, 7) for v in data[:4].tolist()))
    hit = key in TABLE
    if key not in SEEN:
        SEEN.add(key)
        print("KJ-LOOKUP", "hit" if hit else "miss", flush=True)
    if hit:
        return torch.tensor(TABLE[key], dtype=torch.float32)
    return torch.sum(data)
"""

DIGESTS = """
import hashlib
import torch

SEEN = set()

def custom_kernel(data):
    digest = hashlib.sha256(data.numpy().tobytes()).hexdigest()
    size = data.numel()
    if (size, digest) not in SEEN and sum(1 for n, _ in SEEN if n == size) < 5:
        SEEN.add((size, digest))
        print("KJ-INPUT", digest, flush=True)
    return torch.sum(data)
"""


def grade(rig: Rig, peaks: dict[str, Any], code: str, mode: str, nonce: int | None) -> dict:
    result = run_in_rig(
        rig, peaks, problem=PROBLEM, code=code, mode=mode, device="cpu", timeout_s=60, nonce=nonce
    )
    assert "rig_failure" not in result, result["rig_failure"]
    report: dict[str, Any] = result["report"]
    assert report["status"] == "passed", report["message"]
    return report


def learn_then_look_up(
    rig: Rig, peaks: dict[str, Any], nonce: int | None
) -> tuple[dict[str, Any], int, int]:
    """The two-step attack: the report of the lookup grading, and its hits and misses."""
    learned = grade(rig, peaks, LEARNER, "leaderboard", nonce)["stdout"]
    table = [line.split(" ", 1)[1] for line in learned.splitlines() if line.startswith("KJ-TABLE")]
    assert len(table) >= 10, learned[-2000:]
    code = LOOKUP.replace("__TABLE__", "[" + ", ".join(table) + "]")
    report = grade(rig, peaks, code, "leaderboard", nonce)
    calls = re.findall(r"KJ-LOOKUP (hit|miss)", report["stdout"])
    return report, calls.count("hit"), calls.count("miss")


def test_a_repeated_ranked_input_would_be_answered_from_a_table(
    rig: Rig, canaries: Canaries, cpu_peaks: dict[str, Any]
) -> None:
    """What the nonce prevents: with the same nonce twice (inputs repeating between
    gradings, as they did before), the second grading's ranked inputs are found in the
    table (a miss is an input set past the last one the table holds)."""
    _, hits, misses = learn_then_look_up(rig, cpu_peaks, nonce=1234)
    assert hits >= 100, (hits, misses)


def test_a_table_learned_from_one_grading_never_matches_the_next(
    rig: Rig, canaries: Canaries, cpu_peaks: dict[str, Any]
) -> None:
    report, hits, misses = learn_then_look_up(rig, cpu_peaks, nonce=None)
    assert hits == 0 and misses > 0, (hits, misses)
    # The honest solution graded now, beside the lookup: a 2-core machine's load moves a
    # score of tens of microseconds by more than NOISE between one minute and the next.
    code = (REPO / "problems" / PROBLEM / "solutions" / "pytorch.py").read_text()
    honest = grade(rig, cpu_peaks, code, "leaderboard", None)["score"]
    assert report["score"] >= honest / NOISE, (report["score"], honest)


def input_digests(report: dict[str, Any]) -> set[str]:
    return set(re.findall(r"KJ-INPUT ([0-9a-f]{64})", report["stdout"]))


def test_two_leaderboard_gradings_see_disjoint_inputs(
    rig: Rig, canaries: Canaries, cpu_peaks: dict[str, Any]
) -> None:
    first = input_digests(grade(rig, cpu_peaks, DIGESTS, "leaderboard", None))
    second = input_digests(grade(rig, cpu_peaks, DIGESTS, "leaderboard", None))
    assert len(first) >= 10 and len(second) >= 10
    assert not first & second


def test_benchmark_mode_inputs_stay_the_public_ones(
    rig: Rig, canaries: Canaries, cpu_peaks: dict[str, Any]
) -> None:
    """Test and benchmark cases are public (their seeds are in task.yml), so the inputs a
    benchmark case is timed on stay fixed: a competitor can reproduce them, and a lookup of
    them earns no rank. The grader's own clock runs on fresh sets no one can know before."""
    first = input_digests(grade(rig, cpu_peaks, DIGESTS, "benchmark", None))
    second = input_digests(grade(rig, cpu_peaks, DIGESTS, "benchmark", None))
    public = len(QUICK[PROBLEM]["benchmarks"])
    assert len(first & second) == public
    assert len(first - second) >= public and len(second - first) >= public
