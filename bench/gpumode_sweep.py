"""Every problem folder of a local checkout of GPU MODE's reference-kernels through the
validation an upload gets (`grader.validate.validate`), on this host's CPU or GPU: a table
of each example solution's verdict against what its folder name promises
(`solutions/correct/*` should pass, `solutions/wrong/*` should fail; the template
`submission.py` should pass where a problem ships no solutions) and the reason for any
other outcome.

    python -m bench.gpumode_sweep CHECKOUT [--device cpu|cuda] [--timeout S] [--json PATH]
                                  [--resume] [--only PATTERN ...] [--commit SHA]
                                  [--memory-gib N] [--jobs N] [--declare YAML]

CHECKOUT is the checkout (or its `problems/` folder). Each problem is validated in a
process of its own, stopped after `--timeout` seconds; `--memory-gib` caps that process's
heap (the reference's inputs are made there, and GPU-sized ones can fill a CPU host's
memory). `--json` is rewritten after each problem, and `--resume` sweeps only the problems
it does not hold yet. `--jobs N` validates N problems at once (a GPU host's cores and
memory allow it; their timings then share the device, which the verdicts do not rest on).
`--declare` names a YAML file mapping problem globs to task.yml keys an organizer would add
(bench/gpumode_declared.yml: `requires` with the device a problem runs on alone); they are
added to the matching problems' task.yml as loaded, and the row says so. Each row keeps test
mode's short limit that validation derived (or task.yml set) and the reference's own time on
the test cases it came from.
Needs only torch, pyyaml and this repository's `grader/` and
`sandbox/`; the sandbox's bubblewrap is found on PATH or at $KJ_BWRAP.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fnmatch
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import yaml

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = "submission.py"
DEFAULT_TIMEOUT_S = 900.0
REASON_CHARS = 300
T = TypeVar("T")
STEP_MARK = "kj-sweep step: "  # what the child says on stderr as each step begins


@dataclass
class Verdict:
    """One example solution: what its folder name promises and what it got."""

    path: str
    expected: str  # "pass" | "fail"
    outcome: str  # "ok" | "problem" | "skipped"
    status: str
    message: str = ""


@dataclass
class Row:
    problem: str
    device: str
    outcome: str  # "as promised" | "needs" | "problem" | "refused" | "timeout" | "error"
    reason: str = ""
    reference: list[Verdict] = field(default_factory=list)  # the reference's own checks
    solutions: list[Verdict] = field(default_factory=list)
    wall_s: float = 0.0
    declared: dict[str, Any] = field(default_factory=dict)  # task.yml keys added by --declare
    test_cases_timeout_s: float | None = None  # test mode's short limit, as validation set it
    reference_test_cases_s: float | None = None  # the reference's test cases, in test mode


def problem_folders(checkout: Path) -> list[Path]:
    root = checkout / "problems" if (checkout / "problems").is_dir() else checkout
    return sorted(path.parent.resolve() for path in root.rglob("task.yml"))


def problem_label(folder: Path, checkout: Path) -> str:
    root = checkout / "problems" if (checkout / "problems").is_dir() else checkout
    return folder.relative_to(root.resolve()).as_posix()


# -- one problem, in a process of its own ---------------------------------------------------


def announce(step: str) -> None:
    print(f"{STEP_MARK}{step}", file=sys.stderr, flush=True)


def last_step(err: str) -> str:
    steps = [line[len(STEP_MARK) :] for line in err.splitlines() if line.startswith(STEP_MARK)]
    return steps[-1] if steps else ""


def declared_keys(declared: dict[str, Any], label: str) -> dict[str, Any]:
    """The task.yml keys that --declare's file (`declared`, glob -> keys) adds to this
    problem (the first glob that matches), or none."""
    for pattern, keys in declared.items():
        if fnmatch.fnmatch(label, pattern):
            return dict(keys)
    return {}


def validate_one(
    folder: Path,
    label: str,
    device: str,
    memory_gib: float | None,
    declared: dict[str, Any] | None = None,
) -> Row:
    """Load the folder as an upload does (with the `declared` keys added to its task.yml),
    then validate it with its example solutions."""
    if memory_gib:
        limit = int(memory_gib * (1 << 30))
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    from grader.problem import ProblemError, example_solutions, load_problem
    from grader.validate import validate

    started = time.monotonic()
    try:
        problem = load_problem(folder)
    except ProblemError as exc:
        reason = str(exc).replace(f"{folder}/", "")
        return Row(label, device, "refused", reason, wall_s=time.monotonic() - started)
    if declared:
        problem = replace(problem, spec={**problem.spec, **declared})
    solutions = example_solutions(folder)
    if not solutions and problem.submission_template:
        solutions = {TEMPLATE: problem.submission_template}
    report = validate(problem, solutions, device=device, on_step=announce)
    row = Row(
        label,
        device,
        "",
        wall_s=time.monotonic() - started,
        declared=declared or {},
        test_cases_timeout_s=report.test_cases_timeout_s,
        reference_test_cases_s=report.reference_test_cases_s,
    )
    for check in report.checks:
        verdict = Verdict(check.name, check.expected, check.outcome, check.status, check.message)
        (row.reference if check.kind == "reference" else row.solutions).append(verdict)
    if report.status == "passed":
        row.outcome = "as promised"
        skipped = [v.path for v in row.solutions if v.outcome == "skipped"]
        if skipped:
            shown = ", ".join(path.removeprefix("solutions/") for path in skipped)
            row.reason = f"skipped (needs CUDA): {shown}"
    elif report.status == "needs":
        row.outcome, row.reason = "needs", report.message
    else:
        row.outcome, row.reason = "problem", report.message
    return row


# -- the sweep -------------------------------------------------------------------------------


def run_bounded(command: list[str], timeout_s: float) -> tuple[int | None, str, str]:
    """Run `command` from the repository in a session of its own, stopped with whatever it
    started after `timeout_s`: its exit status (None: it was stopped), stdout and stderr."""
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO, start_new_session=True
    )
    try:
        out, err = child.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        return None, out.decode(errors="replace"), err.decode(errors="replace")
    return child.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def pending(
    items: Iterable[tuple[T, str]], done: Collection[str], only: Sequence[str]
) -> list[tuple[T, str]]:
    """The (item, label) pairs a sweep has still to do: not done, and matching one of the
    globs of `only` where it names any."""
    return [
        (item, label)
        for item, label in items
        if label not in done
        and (not only or any(fnmatch.fnmatch(label, pattern) for pattern in only))
    ]


def run_one(
    folder: Path,
    label: str,
    device: str,
    timeout_s: float,
    memory_gib: float | None,
    declared: dict[str, Any] | None = None,
) -> Row:
    """Validate one problem in a child process (its own session, so that stopping it stops
    whatever it started)."""
    command = [sys.executable, "-m", "bench.gpumode_sweep", "--one", str(folder.resolve())]
    command += ["--label", label, "--device", device]
    if memory_gib:
        command += ["--memory-gib", str(memory_gib)]
    if declared:
        command += ["--declared-json", json.dumps(declared)]
    started = time.monotonic()
    returncode, out, err = run_bounded(command, timeout_s)
    if returncode is None:
        step = last_step(err)
        return Row(
            label,
            device,
            "timeout",
            f"validation did not finish within {timeout_s:g} s"
            + (f" (in: {step})" if step else ""),
            wall_s=time.monotonic() - started,
        )
    lines = out.strip().splitlines()
    if returncode != 0 or not lines:
        step = last_step(err)
        tail = [line for line in err.strip().splitlines() if not line.startswith(STEP_MARK)]
        killed = " (killed: out of memory?)" if returncode == -signal.SIGKILL else ""
        reason = f"the sweep's child exited with {returncode}{killed}"
        reason += (f" in: {step}" if step else "") + ": " + " | ".join(tail[-3:])
        return Row(label, device, "error", reason, wall_s=time.monotonic() - started)
    raw = json.loads(lines[-1])
    for key in ("reference", "solutions"):
        raw[key] = [Verdict(**verdict) for verdict in raw.get(key, [])]
    return Row(**raw)


def shown_solution(verdict: Verdict) -> str:
    name = verdict.path.removeprefix("solutions/")
    if verdict.path == TEMPLATE:
        name += " (template)"
    mark = {"ok": "as promised", "problem": "NOT as promised", "skipped": "skipped"}
    return f"{name}: {verdict.status or '-'}, {mark.get(verdict.outcome, verdict.outcome)}"


def one_line(text: str) -> str:
    """The reason in a table cell: a traceback's first and last lines (what failed, and
    the exception), the whole of it in the JSON."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) > 2:
        lines = [lines[0], "...", lines[-1]]
    flat = " ".join(" ".join(lines).split())
    return flat if len(flat) <= REASON_CHARS else flat[: REASON_CHARS - 3] + "..."


def table(rows: list[Row]) -> str:
    """A Markdown table: one row per problem."""
    lines = [
        "| problem | device | outcome | example solutions (verdict, against the folder name) "
        "| reason |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        solutions = "; ".join(shown_solution(v) for v in row.solutions) or "-"
        reason = one_line(row.reason).replace("|", "\\|") or "-"
        if row.declared:
            reason += f" (declared in task.yml: {json.dumps(row.declared, separators=(',', ':'))})"
        lines.append(f"| `{row.problem}` | {row.device} | {row.outcome} | {solutions} | {reason} |")
    return "\n".join(lines)


def load_rows(path: Path, device: str) -> list[Row]:
    """The rows an earlier run on this device wrote to `path` (to resume it)."""
    if not path.is_file():
        return []
    record = json.loads(path.read_text())
    rows = []
    for raw in record.get("rows", []):
        for key in ("reference", "solutions"):
            raw[key] = [Verdict(**verdict) for verdict in raw.get(key, [])]
        if raw.get("device") == device:
            rows.append(Row(**raw))
    return rows


def save_rows(path: Path, commit: str, device: str, rows: list[Row]) -> None:
    record = {"commit": commit, "device": device, "rows": [asdict(row) for row in rows]}
    scratch = path.with_name(path.name + ".part")
    scratch.write_text(json.dumps(record, indent=2) + "\n")
    scratch.replace(path)


def sweep(
    todo: list[tuple[Path, str]],
    rows: list[Row],
    *,
    device: str,
    timeout_s: float,
    memory_gib: float | None,
    jobs: int,
    json_path: Path | None,
    commit: str,
    declared: dict[str, dict[str, Any]] | None = None,
    budget_s: float | None = None,
) -> list[Row]:
    """Validate each (path, label) of `todo` in a process of its own, `jobs` at once, adding
    its row to `rows` and rewriting `json_path` after each; the rows, sorted by problem.
    A path is a problem folder or a KernelBench module (grader.problem.load_problem).
    No problem starts once `budget_s` seconds have passed: those left have no row, so that
    a run resumed from `json_path` sweeps them."""
    deadline = time.monotonic() + budget_s if budget_s is not None else math.inf

    def in_budget(path: Path, label: str) -> Row | None:
        if time.monotonic() > deadline:
            return None
        return run_one(path, label, device, timeout_s, memory_gib, (declared or {}).get(label))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        running = [pool.submit(in_budget, path, label) for path, label in todo]
        for future in concurrent.futures.as_completed(running):
            row = future.result()
            if row is None:
                continue
            print(f"{row.problem}: {row.outcome} ({row.wall_s:.0f} s)", file=sys.stderr, flush=True)
            rows.append(row)
            if json_path is not None:
                save_rows(json_path, commit, device, rows)
    return sorted(rows, key=lambda row: row.problem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpumode_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", type=Path, help="reference-kernels checkout")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per problem")
    parser.add_argument("--json", type=Path, help="the rows as JSON, written after each problem")
    parser.add_argument(
        "--resume", action="store_true", help="keep the rows --json already holds; sweep the rest"
    )
    parser.add_argument("--only", nargs="*", default=[], help="problems matching these globs")
    parser.add_argument("--commit", default="", help="the checkout's commit, for the record")
    parser.add_argument("--memory-gib", type=float, help="heap limit of each problem's process")
    parser.add_argument("--jobs", type=int, default=1, help="problems validated at once")
    parser.add_argument("--declare", type=Path, help="YAML: problem glob -> task.yml keys to add")
    parser.add_argument("--declared-json", help=argparse.SUPPRESS)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        declared = json.loads(args.declared_json) if args.declared_json else None
        row = validate_one(
            args.one, args.label or args.one.name, args.device, args.memory_gib, declared
        )
        print(json.dumps(asdict(row)), flush=True)
        return 0
    if args.checkout is None:
        parser.error("give the reference-kernels checkout")
    if args.resume and args.json is None:
        parser.error("--resume needs --json")
    rows = load_rows(args.json, args.device) if args.resume else []
    done = {row.problem for row in rows}
    folders = problem_folders(args.checkout)
    todo = pending(((f, problem_label(f, args.checkout)) for f in folders), done, args.only)
    declarations = (yaml.safe_load(args.declare.read_text()) or {}) if args.declare else {}
    rows = sweep(
        todo,
        rows,
        device=args.device,
        timeout_s=args.timeout,
        memory_gib=args.memory_gib,
        jobs=args.jobs,
        json_path=args.json,
        commit=args.commit,
        declared={label: declared_keys(declarations, label) for _, label in todo},
    )
    at = f" at {args.commit}" if args.commit else ""
    print(f"reference-kernels{at}, validated on {args.device} ({platform.node()})\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
