"""How reports, leaderboards and lists look in a terminal: tables with each case's median
and spread, times in the unit that reads best. Text from the server or a submission is
printed as it is, never read as Rich markup."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from grader.report import Status
from server.client import figures

# Output lines of a failed submission shown under its report; --json has them all.
OUTPUT_LINES = 30
# Width of tables written to a file or a pipe, where there is no terminal to measure.
PIPE_WIDTH = 140
# A case's profile when Nsight Compute ran on the worker (grader/nsight.py), and how to read
# its table.
NCU = "nsight-compute"
NCU_LEGEND = (
    "a kernel's duration is the median of its launches; memory, compute and occupancy in % "
    "of the device's peak; registers per thread, shared bytes per block; stalls in cycles "
    "per issued instruction"
)


def console(*, stderr: bool = False) -> Console:
    """Lines are never broken (a command printed to copy, an error that is one line); tables
    fit the terminal, or ``PIPE_WIDTH``."""
    out = Console(stderr=stderr, highlight=False, soft_wrap=True)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(stderr=stderr, highlight=False, soft_wrap=True, width=PIPE_WIDTH)
    return out


def duration(seconds: float | None) -> str:
    """20.3 µs, 1.23 ms, 2.50 s, as the web pages write them; nothing where there is none."""
    return figures.duration(seconds, missing="")


def percent(fraction: float | None) -> str:
    """A speed-of-light fraction as the web pages write it: 171.2%."""
    return figures.percent(fraction, 1, missing="")


def when(stamp: str | None) -> str:
    """An ISO time from the server, in this machine's time zone, to the minute."""
    if not stamp:
        return ""
    try:
        return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return stamp


def params(case: dict[str, Any]) -> str:
    return " ".join(f"{key}={value}" for key, value in (case.get("params") or {}).items())


def labels(cases: list[dict[str, Any]]) -> list[str]:
    """Each case as "test 0", "benchmark 2": its kind and its place among that kind."""
    return figures.labels(str(case.get("kind", "case")) for case in cases)


def cases_table(cases: list[dict[str, Any]]) -> Table:
    """One row per case; the timing columns (median, min, p10–p90, cv, samples, speed of
    light) when some case was timed, and where the grader's clock ranks a case instead of
    its own figure, the median the submission's own process reported."""
    timed = any(case.get("time") for case in cases)
    raised = any(case.get("runner_time") for case in cases)
    table = Table("case", "params", "status")
    if timed:
        for column in ("median", "min", "p10–p90", "cv", "samples", "speed of light"):
            table.add_column(column)
    if raised:
        table.add_column("reported")
    for label, case in zip(labels(cases), cases, strict=True):
        timing = case.get("time") or {}
        spread = ""
        if timing.get("p10_s") is not None and timing.get("p90_s") is not None:
            spread = f"{duration(timing['p10_s'])} – {duration(timing['p90_s'])}"
        cv = timing.get("cv")
        sol = (case.get("roofline") or {}).get("sol_fraction")
        status = str(case.get("status", ""))
        row: list[str | Text] = [
            label,
            Text(params(case)),
            Text(status, style="green" if status == Status.PASSED else "red"),
        ]
        if timed:
            row += [
                duration(timing.get("median_s")),
                duration(timing.get("min_s")),
                spread,
                figures.percent(cv, 1, missing=""),
                str(timing.get("samples", "")),
                percent(sol),
            ]
        if raised:
            row.append(duration((case.get("runner_time") or {}).get("median_s")))
        table.add_row(*row)
    return table


def profile_tables(out: Console, cases: list[dict[str, Any]]) -> None:
    """Profile mode: each case's kernels as Nsight Compute measured them, or where it could
    not run, the heaviest torch.profiler operations per call and why there is no Nsight
    Compute profile; a multi-rank case's, one table per rank."""
    profiled = [(label, case, profile)
                for label, case in zip(labels(cases), cases, strict=True)
                for profile in [case.get("profile"), *(case.get("rank_profiles") or [])]
                if profile]  # fmt: skip
    kernels = [profile for _, _, profile in profiled if profile.get("tool") == NCU]
    operations = [profile for _, _, profile in profiled if profile.get("tool") != NCU]
    for label, case, profile in profiled:
        if profile.get("rank") is not None:
            label = f"{label}, rank {profile['rank']}"
        if profile.get("tool") == NCU:
            out.print(kernels_table(label, case, profile))
        else:
            out.print(operations_table(label, case, profile))
    if kernels:
        tool = f"Nsight Compute {kernels[0].get('version') or ''}".rstrip()
        out.print(Text(f"{tool}, {kernels[0].get('calls')} calls a case: {NCU_LEGEND}"))
    if operations:
        first = operations[0]
        out.print(Text(f"{first.get('tool')}, {first.get('calls')} calls a case, times per "
                       f"call; no Nsight Compute profile: {first.get('why_not_ncu')}"))  # fmt: skip


def kernels_table(label: str, case: dict[str, Any], profile: dict[str, Any]) -> Table:
    table = Table("kernel", "launches", "duration", "memory", "compute", "occupancy",
                  "regs", "shared B", "block × grid", "top stalls",
                  title=f"{label} ({params(case)}): Nsight Compute")  # fmt: skip
    for kernel in profile.get("kernels") or []:
        block, grid = kernel.get("block_size"), kernel.get("grid_size")
        stalls = kernel.get("stalls") or []
        table.add_row(
            Text(str(kernel.get("name", ""))),
            str(kernel.get("launches", "")),
            duration(micro(kernel.get("duration_us"))),
            pct(kernel.get("memory_pct")),
            pct(kernel.get("compute_pct")),
            pct(kernel.get("occupancy_pct")),
            given(kernel.get("registers_per_thread")),
            given(kernel.get("shared_bytes_per_block")),
            f"{block} × {grid}" if block is not None and grid is not None else "",
            Text("\n".join(f"{s.get('reason')} {s.get('per_issue', 0):.1f}" for s in stalls)),
        )
    return table


def operations_table(label: str, case: dict[str, Any], profile: dict[str, Any]) -> Table:
    calls = max(1, int(profile.get("calls") or 1))
    table = Table("operation or kernel", "on", "calls", "self CPU", "CPU total", "self GPU",
                  title=f"{label} ({params(case)}): " + figures.profiled_call(
                      profile.get("wall_us_per_call"),
                      sum(float(row.get("self_us") or 0) for row in profile.get("rows") or [])
                      / calls))  # fmt: skip
    for row in profile.get("rows") or []:
        device = row.get("self_device_us") or 0
        table.add_row(
            Text(str(row.get("name", ""))),
            str(row.get("device_type", "")),
            figures.per_call(row.get("count", 0), calls),
            duration(row.get("self_us", 0) / calls / 1e6),
            duration(row.get("total_us", 0) / calls / 1e6),
            duration(device / calls / 1e6) if device else "",
        )
    return table


def micro(value: float | None) -> float | None:
    """Microseconds (a profile's unit) in seconds."""
    return value / 1e6 if isinstance(value, int | float) else None


def pct(value: float | None) -> str:
    return f"{value:.0f}%" if isinstance(value, int | float) else ""


def given(value: object) -> str:
    return "" if value is None else str(value)


def report(out: Console, result: dict[str, Any]) -> None:
    """A grading's verdict: the per-case table, the warnings its numbers call for (as the
    web page words them), the status, the score at full precision, a ranked run's standing
    on its leaderboard (as the page words it), the message, each failing case's message
    once, and for a submission that did not pass the end of its output."""
    cases = result.get("cases") or []
    status = str(result.get("status", ""))
    if cases:
        out.print(cases_table(cases))
        profile_tables(out, cases)
        warm = result.get("mode") == "benchmark" and result.get("gpu") == "cpu"
        judged = figures.judge_figures(
            figures.figures_of(cases), scored=result.get("score") is not None, warm_inputs=warm
        )
        for warning in judged.warnings:
            out.print(Text(f"⚠ {warning.title}: {warning.said}", style="yellow"))
            out.print(Text(f"What to do: {warning.advice}", style="yellow"))
    out.print(Text.assemble("status: ", (status, "green" if status == Status.PASSED else "red")))
    score = result.get("score")
    if score is not None:
        out.print(
            f"score: {duration(score)} ({score!r} s: the geometric mean of the benchmark "
            "cases' medians)"
        )
    standing = figures.Standing.of(result)
    if standing is not None:
        out.print(Text(standing.line()))
    gains = result.get("speedup") or {}
    if gains.get("eager") is not None:
        over_compile = gains.get("compile")
        out.print(
            f"speedup: {speedup(gains['eager'])} over the reference as given"
            + (f", {speedup(over_compile)} over torch.compile" if over_compile is not None else "")
        )
    message = str(result.get("message") or "")
    failing = [
        (label, case, str(case.get("message") or ""))
        for label, case in zip(labels(cases), cases, strict=True)
        if case.get("status") != Status.PASSED and case.get("message")
    ]
    if status == Status.FAILED and failing:
        # The message lists the first few failing cases; every one is listed here, once.
        message = message.split("\n", 1)[0]
    if message:
        out.print(Text(message))
    for label, case, said in failing:
        if said in message:
            continue
        # The grader's case message names its case ("case size=8: ..."): no second name.
        out.print(Text(said if said.startswith("case ") else f"{label} ({params(case)}): {said}"))
    if result.get("flags"):
        out.print(Text(f"flags: {', '.join(map(str, result['flags']))}"))
    if status not in (Status.PASSED, Status.QUEUED, Status.RUNNING):
        for stream in ("stdout", "stderr"):
            text = str(result.get(stream) or "").rstrip()
            # An error's message is often the traceback its stderr holds.
            if text and text.strip() not in message:
                lines = text.splitlines()
                cut = f", its last {OUTPUT_LINES} lines" if len(lines) > OUTPUT_LINES else ""
                out.print(Text(f"the submission's {stream}{cut}:", style="bold"))
                out.print(Text("\n".join(lines[-OUTPUT_LINES:])))


def submission_heading(submission: dict[str, Any]) -> Text:
    return Text(
        f"submission {submission.get('id')}: {submission.get('problem')} "
        f"(version {submission.get('problem_version')}), {submission.get('mode')} mode on "
        f"{submission.get('gpu')}, by {submission.get('user')}"
    )


SHORT_CALLS_NOTE = (
    "≈: most of the score's cases time calls under 50 µs on the GPU, whose time moves by a "
    "few percent from one process to the next: it cannot rank finer than that"
)
RANKS_SCALED_NOTE = (
    "↓: graded on fewer ranks than the problem asks for, its worker offering fewer GPUs: "
    "compare it only with entries graded at the same size"
)


def speedup(value: Any) -> str:
    """A speedup as a factor (1.8×), or a dash where there is none."""
    return f"{value:.2f}×" if isinstance(value, int | float) else "—"


BASELINE_NAMES = {"eager": "reference (eager)", "compile": "reference (torch.compile)"}


def leaderboard(out: Console, board: dict[str, Any]) -> None:
    entries = board.get("entries") or []
    baselines = board.get("baselines") or []
    heading = f"{board.get('problem')} on {board.get('gpu')}: {board.get('total', len(entries))}"
    heading += " ranked" + (
        f" (versions {board['from_version']} and later)" if board.get("from_version") else ""
    )
    out.print(Text(heading))
    if entries or baselines:
        table = Table(
            "rank", "user", "score", "seconds", "speed of light", "vs eager", "vs compile",
            "submission", "at",
        )  # fmt: skip
        for entry in entries:
            sol = entry.get("sol_fraction")
            mark = (" ≈" if entry.get("short_calls") else "") + (
                " ↓" if entry.get("ranks_scaled") else ""
            )
            gains = entry.get("speedup") or {}
            table.add_row(
                str(entry.get("rank")),
                Text(str(entry.get("user"))),
                duration(entry.get("score")) + mark,
                repr(entry.get("score")),
                percent(sol),
                speedup(gains.get("eager")),
                speedup(gains.get("compile")),
                str(entry.get("submission_id")),
                when(entry.get("submitted_at")),
            )
        # Baselines are marked rows, never ranked: "base" where a rank would be.
        for row in baselines:
            kind = str(row.get("kind"))
            score = row.get("score")
            table.add_row(
                "base",
                Text(BASELINE_NAMES.get(kind, kind)),
                duration(score) if score is not None else "none",
                repr(score) if score is not None else "",
                "",
                "",
                "",
                "",
                when(row.get("timed_at")),
            )
        out.print(table)
        if any(entry.get("short_calls") for entry in entries):
            out.print(Text(SHORT_CALLS_NOTE))
        if any(entry.get("ranks_scaled") for entry in entries):
            out.print(Text(RANKS_SCALED_NOTE))
        for row in baselines:
            if row.get("why_not"):
                name = BASELINE_NAMES.get(str(row.get("kind")), str(row.get("kind")))
                out.print(Text(f"{name} has no score: {row['why_not']}"))
    you = board.get("you")
    if you:
        out.print(Text(f"you: rank {you.get('rank')}, {duration(you.get('score'))}"))


def problems(out: Console, listed: list[dict[str, Any]]) -> None:
    table = Table("problem", "version", "gpus", "status", "opens", "deadline")
    for problem in listed:
        table.add_row(
            Text(str(problem.get("name"))),
            str(problem.get("version")),
            ", ".join(problem.get("gpu_types") or []),
            str(problem.get("status", "")),
            when(problem.get("starts_at")),
            when(problem.get("deadline")) or "none",
        )
    out.print(table)


def submissions(out: Console, listed: list[dict[str, Any]]) -> None:
    table = Table("id", "problem", "mode", "gpu", "status", "score", "submitted", "finished")
    for row in listed:
        status = str(row.get("status", ""))
        table.add_row(
            str(row.get("id")),
            Text(str(row.get("problem"))),
            str(row.get("mode")),
            str(row.get("gpu")),
            Text(status, style="green" if status == Status.PASSED else ""),
            duration(row.get("score")),
            when(row.get("created_at")),
            when(row.get("finished_at")),
        )
    out.print(table)


def standings(out: Console, board: dict[str, Any]) -> None:
    """A competition's standings: rank, team, members, total, and each problem's rank and
    score; the caller's row marked, disqualified teams with their reason."""
    state = "frozen" if board.get("frozen") else "final" if board.get("final") else "live"
    out.print(
        Text(
            f"{board.get('title')} ({board.get('competition')}): {board.get('status')}, "
            f"{board.get('scoring')} on {board.get('gpu')}, {state}; closes "
            f"{when(board.get('closes_at'))}"
        )
    )
    names = [str(problem.get("name")) for problem in board.get("problems") or []]
    table = Table("rank", "team", "members", "total", *names)
    for row in board.get("rows") or []:
        cells = row.get("problems") or {}
        mark = " (you, live)" if row.get("live") else " (you)" if row.get("yours") else ""
        rank = row.get("rank")
        total = row.get("total")
        table.add_row(
            str(rank) if rank is not None else "—",
            Text(f"{row.get('team')}{mark}"),
            Text(" ".join(row.get("members") or [])),
            f"{total:.4g}" if isinstance(total, int | float) else "",
            *(
                f"#{cells[name].get('rank')} {duration(cells[name].get('score'))}"
                if name in cells
                else ""
                for name in names
            ),
        )
    out.print(table)
    for row in board.get("rows") or []:
        disqualified = row.get("disqualified")
        if disqualified:
            out.print(Text(f"{row.get('team')} is disqualified: {disqualified.get('reason')}"))
    for note in board.get("notes") or []:
        out.print(Text(str(note)))
