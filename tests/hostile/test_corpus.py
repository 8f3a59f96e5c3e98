"""The hostile corpus: every case under cases/ is graded as a worker would grade it, and
must get its expected verdict without leaking a canary or leaving anything behind.

Each case file starts with `# key: value` lines (see README.md). The grading runs in the
rig (rig.py) inside its own pid namespace, so a case that kills what it can reaches only
its own grading."""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.hostile.conftest import Canaries
from tests.hostile.rig import RESULT_PREFIX

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CASES = sorted((HERE / "cases").glob("[0-9]*_*.py"), key=lambda path: int(path.name.split("_")[0]))
STATUSES = ("passed", "failed", "error", "timeout", "rejected")
KEYS = ("threat", "problem", "mode", "device", "expect", "max_speedup", "message", "leftover")
KEYS_EXTRA = ("defence", "timeout_s")
DEFAULT_TIMEOUT_S = 40.0
# The rig's own start-up (torch import) and the harness's kill and clean-up, on top.
RIG_SLACK_S = 45.0
ESCAPE_MARK = "KJ-ESCAPE"  # what a case prints when it obtained something it should not
OUTPUT_CAP = 64 * 1024 + 200  # the runner's stdout and stderr are each capped at 64 KiB
MESSAGE_CAP = 4000 + 10
QUICK: dict[str, dict[str, Any]] = {
    "vectoradd": {
        "tests": [{"size": 127, "seed": 4242}, {"size": 64, "seed": 7}],
        "benchmarks": [{"size": 96, "seed": 11}, {"size": 160, "seed": 12}],
    },
    "vectorsum": {
        "tests": [{"size": 1023, "seed": 4242}, {"size": 4097, "seed": 1001}],
        "benchmarks": [{"size": 8192, "seed": 11}, {"size": 65536, "seed": 12}],
    },
    "matmul": {
        "tests": [
            {"m": 127, "n": 65, "k": 33, "seed": 5236},
            {"m": 64, "n": 64, "k": 64, "seed": 1},
        ],
        "benchmarks": [
            {"m": 128, "n": 128, "k": 128, "seed": 11},
            {"m": 192, "n": 160, "k": 128, "seed": 12},
        ],
    },
}  # fmt: skip
# On a GPU the ranked figure is a window's mean less a window's own cost (about 0.3 ms of the
# harness's copy and flush, calibrated to within about 1%): calls of 2-3 µs move by tens of
# percent between gradings, so the timing cases there compare a forged time with an honest
# one at calls of tens of µs, where two gradings agree within a few percent.
QUICK_CUDA_BENCHMARKS: dict[str, list[dict[str, int]]] = {
    "vectoradd": [{"size": 4096, "seed": 11}, {"size": 6144, "seed": 12}],
    "matmul": [
        {"m": 2048, "n": 2048, "k": 2048, "seed": 11},
        {"m": 3072, "n": 2048, "k": 2048, "seed": 12},
    ],
}
QUICK_BUDGET_S = 0.3
# Catalogue lines shown by several gradings in a row rather than one case file.
OUTSIDE_THE_CASES = {
    29: "test_ranked_inputs.py (learn in one grading, answer in the next) and "
    "test_ranked_disclosure.py (what a ranked run prints reaches only organizers)",
}


@dataclass
class Case:
    path: Path
    threats: list[int]
    problem: str = "vectoradd"
    mode: str = "leaderboard"
    device: str = "cpu"
    expect: set[str] = field(default_factory=set)
    max_speedup: float | None = None
    message: str | None = None
    leftover: str | None = None
    defence: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def code(self) -> str:
        return self.path.read_text()


def parse_expect(text: str) -> set[str]:
    """`failed`, a comma-separated list such as `passed, rejected`, or `not-passed`."""
    wanted: set[str] = set()
    for word in (w.strip() for w in text.split(",")):
        if word == "not-passed":
            wanted |= set(STATUSES) - {"passed"}
        elif word in STATUSES:
            wanted.add(word)
        else:
            raise ValueError(f"unknown expected status {word!r}")
    return wanted


def parse_case(path: Path) -> Case:
    header: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        if key.strip() not in KEYS + KEYS_EXTRA:
            raise ValueError(f"{path.name}: unknown header key {key.strip()!r}")
        header[key.strip()] = value.strip()
    for needed in ("threat", "expect", "defence"):
        if not header.get(needed):
            raise ValueError(f"{path.name}: the header has no {needed!r}")
    case = Case(
        path=path,
        threats=[int(t) for t in header["threat"].split(",")],
        expect=parse_expect(header["expect"]),
        defence=header["defence"],
    )
    for key in ("problem", "mode", "device", "message", "leftover"):
        if key in header:
            setattr(case, key, header[key])
    if "max_speedup" in header:
        case.max_speedup = float(header["max_speedup"])
    if "timeout_s" in header:
        case.timeout_s = float(header["timeout_s"])
    return case


def quick_cases(problem: str, device: str = "cpu") -> dict[str, Any]:
    if problem in QUICK:
        cases = {**QUICK[problem], "budget_s": QUICK_BUDGET_S}
        if device == "cuda" and problem in QUICK_CUDA_BENCHMARKS:
            cases["benchmarks"] = QUICK_CUDA_BENCHMARKS[problem]
        return cases
    from grader.problem import load_problem

    loaded = load_problem(problem)
    return {
        "tests": loaded.tests[:2],
        "benchmarks": loaded.benchmarks_for("cpu")[:1],
        "budget_s": QUICK_BUDGET_S,
    }


class Rig:
    """The rig (rig.py), one per test module, in a pid namespace of its own; it is started
    again after a job that did not answer in time."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self.jobs = 0
        self._buffer = b""

    def _start(self) -> subprocess.Popen[bytes]:
        unshare = shutil.which("unshare")
        assert unshare, "the corpus needs util-linux's unshare to contain the rig"
        argv = [unshare, "--pid", "--fork", "--mount-proc", "--kill-child"]
        self._buffer = b""
        return subprocess.Popen(
            [*argv, sys.executable, str(HERE / "rig.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
            env=self.env,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout):
                if stream is not None:
                    stream.close()
            self.process = None

    def grade(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        assert self.process.stdin is not None and self.process.stdout is not None
        self.jobs += 1
        job = {**job, "id": self.jobs}
        self.process.stdin.write((json.dumps(job) + "\n").encode())
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout_s
        fd = self.process.stdout.fileno()
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                text = line.decode(errors="replace")
                if text.startswith(RESULT_PREFIX):
                    result: dict[str, Any] = json.loads(text[len(RESULT_PREFIX) :])
                    if result.pop("id", None) == job["id"]:
                        return result
            left = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.stop()
                return {"rig_failure": f"the harness process did not finish in {timeout_s} s"}
            chunk = os.read(fd, 65536)
            if not chunk:
                self.stop()
                return {"rig_failure": "the rig ended without a report"}
            self._buffer += chunk


def run_in_rig(
    rig: Rig,
    peaks: dict[str, Any] | None,
    *,
    problem: str,
    code: str,
    mode: str,
    device: str,
    timeout_s: float,
    leftover: str | None = None,
    nonce: int | None = None,
    sequence: list[str] | None = None,
) -> dict[str, Any]:
    """Grade in a fresh harness process of the rig; the report as a dict, or a dict with
    `rig_failure` when the harness process itself did not survive. `nonce` fixes what a
    worker draws afresh for every leaderboard-mode grading. `sequence`: codes graded one
    after another by that one harness process instead of `code` (each report in `reports`),
    as a worker's pool process grades one job after another."""
    job = {
        "problem": problem,
        "quick": quick_cases(problem, device),
        "code": code,
        "mode": mode,
        "device": device,
        "timeout_s": timeout_s,
        "peaks": peaks if device == "cpu" else None,
        "leftover": leftover,
        "nonce": nonce,
        "sequence": sequence,
    }
    return rig.grade(job, len(sequence or [code]) * timeout_s + RIG_SLACK_S)


@pytest.fixture(scope="module")
def rig(canaries: Canaries) -> Iterator[Rig]:
    started = Rig(canaries.env)
    try:
        yield started
    finally:
        started.stop()


_HONEST: dict[tuple[str, str, str], float] = {}


def honest_score(
    rig: Rig,
    peaks: dict[str, Any],
    problem: str,
    mode: str,
    device: str = "cpu",
    again: bool = False,
) -> float:
    """The score of the problem's example PyTorch solution, graded in this session on the
    same device as the case; `again`: graded once more now, beside the case, and the lower
    of the two kept (an earlier grading on a busier machine must not pass a case as forged)."""
    key = (problem, mode, device)
    if key not in _HONEST or again:
        code = (REPO / "problems" / problem / "solutions" / "pytorch.py").read_text()
        result = run_in_rig(
            rig, peaks, problem=problem, code=code, mode=mode, device=device, timeout_s=60
        )
        report = result.get("report") or {}
        assert report.get("status") == "passed", f"honest solution: {result}"
        _HONEST[key] = min(float(report["score"]), _HONEST.get(key, math.inf))
    return _HONEST[key]


def texts_of(report: dict[str, Any]) -> dict[str, str]:
    texts = {name: str(report.get(name) or "") for name in ("stdout", "stderr", "message")}
    texts["flags"] = "\n".join(report.get("flags") or [])
    texts["case messages"] = "\n".join(c.get("message") or "" for c in report.get("cases", []))
    return texts


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_hostile_case(path: Path, canaries: Canaries, rig: Rig, cpu_peaks: dict[str, Any]) -> None:
    case = parse_case(path)
    if case.device == "cuda" and not torch.cuda.is_available():
        pytest.skip("a CUDA case: it runs on the GPU host")
    result = run_in_rig(
        rig,
        cpu_peaks,
        problem=case.problem,
        code=case.code,
        mode=case.mode,
        device=case.device,
        timeout_s=case.timeout_s,
        leftover=case.leftover,
    )
    assert "rig_failure" not in result, result.get("rig_failure")
    report = result["report"]
    texts = texts_of(report)
    leaks = {where: canaries.leaks(text) for where, text in texts.items()}
    assert not any(leaks.values()), f"canary or secret seed leaked: {leaks}\n{texts}"
    escapes = [where for where, text in texts.items() if ESCAPE_MARK in text]
    assert not escapes, f"the case obtained what it should not ({escapes}):\n{texts}"
    assert report["status"] in case.expect, (
        f"status {report['status']!r}, expected one of {sorted(case.expect)}; "
        f"defence: {case.defence}\nmessage: {report['message']}\nflags: {report['flags']}\n"
        f"stdout: {report['stdout'][-2000:]}\nstderr: {report['stderr'][-2000:]}"
    )
    if case.message:
        assert case.message in report["message"], report["message"]
    assert len(report["stdout"]) <= OUTPUT_CAP and len(report["stderr"]) <= OUTPUT_CAP
    assert len(report["message"]) <= MESSAGE_CAP
    assert not result["leftovers"], f"left behind after grading: {result['leftovers']}"
    if case.max_speedup is not None and report["status"] == "passed":
        honest = honest_score(rig, cpu_peaks, case.problem, case.mode, case.device)
        if report["score"] < honest / case.max_speedup:
            honest = honest_score(rig, cpu_peaks, case.problem, case.mode, case.device, True)
        assert report["score"] >= honest / case.max_speedup, (
            f"score {report['score']:.3g} s is more than {case.max_speedup:g}x better than the "
            f"honest {honest:.3g} s: a forged time passed; flags: {report['flags']}"
        )


def test_corpus_covers_every_threat_line() -> None:
    covered = {t for path in CASES for t in parse_case(path).threats} | set(OUTSIDE_THE_CASES)
    every = set(range(1, 40))
    assert covered >= every, f"uncovered lines: {sorted(every - covered)}"
    assert len(CASES) >= 45


def test_every_case_is_in_the_security_docs_table() -> None:
    table = (REPO / "docs" / "security.md").read_text()
    missing = [path.stem for path in CASES if f"| `{path.stem}` |" not in table]
    assert not missing, f"docs/security.md does not list: {missing}"
