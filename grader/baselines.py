"""A problem's baselines: its reference as given ("eager") and ``torch.compile`` of it,
each graded in leaderboard mode through the same harness and sandbox as a submission, so
their scores compare with any submission's on the same machine."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from grader.report import DevicePeaks, Fingerprint, Mode, Report, Status, plain_dict

if TYPE_CHECKING:
    from grader.problem import Problem
    from grader.session import Standby

# The KernelBench module's name in a problem's files (grader/kernelbench.py's MODULE_FILE).
MODULE = "model"


class BaselineKind(StrEnum):
    EAGER = "eager"  # the reference as the problem gives it
    COMPILE = "compile"  # torch.compile of the reference, default options


KINDS = (BaselineKind.EAGER, BaselineKind.COMPILE)

# The runner never imports the problem's reference module (grader/runner.py keeps it
# private), so a GPU MODE baseline carries the reference's own text as its submission.
GPUMODE_TAIL = {
    BaselineKind.EAGER: "\n\ncustom_kernel = ref_kernel\n",
    BaselineKind.COMPILE: "\n\nimport torch as _kj_torch\n\n"
    "custom_kernel = _kj_torch.compile(ref_kernel)\n",
}
# A KernelBench module is importable by the runner (it builds ModelNew like Model).
KERNELBENCH_CODE = {
    BaselineKind.EAGER: f"from {MODULE} import Model as ModelNew\n",
    BaselineKind.COMPILE: f"""import torch
from {MODULE} import Model


class ModelNew(Model):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._kj_compiled = torch.compile(super().forward)

    def forward(self, *args):
        return self._kj_compiled(*args)
""",
}


def baseline_code(problem: Problem, kind: BaselineKind) -> str:
    """The submission.py that stands for the problem's baseline of this kind."""
    if problem.format == "kernelbench":
        return KERNELBENCH_CODE[kind]
    return problem.files["reference.py"].rstrip() + GPUMODE_TAIL[kind]


@dataclass
class BaselineReport:
    """Both baselines of one problem graded on one worker. Each is a whole leaderboard-mode
    report; one that did not pass says why in its message (``torch.compile`` needs a
    compiler the host may lack, or cannot trace the reference)."""

    problem: str
    device: str
    eager: Report
    compile: Report
    fingerprint: Fingerprint | None = None

    def of(self, kind: BaselineKind) -> Report:
        return self.eager if kind == BaselineKind.EAGER else self.compile

    def to_dict(self) -> dict[str, Any]:
        return plain_dict(self)


def machine_key(fingerprint: Fingerprint | None) -> str:
    """The machine a baseline stands for: the fingerprint without the GPU's UUID (another card
    of the same model, driver and software times the same), hashed to a short key; "unknown"
    for a worker that could not tell."""
    if fingerprint is None:
        return "unknown"
    parts = (fingerprint.device_name, fingerprint.driver, fingerprint.cuda, fingerprint.torch,
             fingerprint.triton)  # fmt: skip
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def score_of(report: Report) -> float | None:
    """A baseline's score: only a passed grading has one."""
    return report.score if report.status == Status.PASSED else None


REASON_CHARS = 400
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*: \S")


def why_not(report: Report) -> str | None:
    """Why a baseline has no score, in a line; None where it has one."""
    if score_of(report) is not None:
        return None
    # A raised error's message ends with its traceback, the exception on a line of its own
    # ("torch._inductor.exc.InductorError: InvalidCxxCompiler: No working C++ compiler
    # found ..."), which torch may follow with advice: the last such line is the reason.
    raised = [line for line in report.message.splitlines() if EXCEPTION_LINE.match(line)]
    reason = raised[-1] if raised else " ".join(report.message.split())
    reason = reason or f"its grading ended {report.status.value}"
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 4] + " ..."


def time_baselines(
    problem: Problem,
    *,
    device: str,
    secret_seed: int | None = None,
    timeout_s: float | None = None,
    peaks: DevicePeaks | None = None,
    memory_bytes: int | None = None,
    standby: Standby | None = None,
    isolate: bool = True,
    untrusted_reference: bool = False,
) -> BaselineReport:
    """Grade the eager and the compiled reference in leaderboard mode, one after the other.
    The code is the organizer's, so it is not screened; it still runs sandboxed, timed by
    the harness's clock like any submission. `untrusted_reference`: an author's problem, its
    reference kept out of this process too (grader/untrusted.py)."""
    from grader.harness import grade

    reports = {
        kind: grade(
            problem,
            baseline_code(problem, kind),
            mode=Mode.LEADERBOARD,
            device=device,
            secret_seed=secret_seed,
            timeout_s=timeout_s,
            peaks=peaks,
            memory_bytes=memory_bytes,
            standby=standby,
            isolate=isolate,
            screen=False,
            untrusted_reference=untrusted_reference,
        )
        for kind in KINDS
    }
    eager = reports[BaselineKind.EAGER]
    return BaselineReport(
        problem=problem.name,
        device=eager.device,
        eager=eager,
        compile=reports[BaselineKind.COMPILE],
        fingerprint=eager.fingerprint,
    )
