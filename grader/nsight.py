"""Profile mode under Nsight Compute. On a GPU worker that has `ncu`, a profile grading's
runner starts under a small driver inside the same sandbox as any grading: the driver runs
`ncu` with the runner as its target, profiling only between the runner's own
cudaProfilerStart and cudaProfilerStop, which it calls around each case's profiled calls, in
an NVTX range named for the case. When the runner has exited, the driver (still inside the
sandbox: the report was written next to the submission) reads the report back with `ncu
--import`, sums it up per kernel and case, and hands the harness the summary and the
report's file descriptor over a channel of its own. The harness bounds what it receives
(`summary_from_reply`); like any profile it is its author's to read and never ranks.

    python -m grader.nsight --ncu PATH --results-fd M -- RUNNER-COMMAND   (in the sandbox)
"""

from __future__ import annotations

import argparse
import csv
import io
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grader import replies
from grader.profiling import NVTX_RANGE
from grader.protocol import recv_fd, send_fd, send_message
from grader.report import Status, Stop

TOOL = "nsight-compute"
# What a case's profile calls look like to Nsight Compute: an NVTX range of this name, its
# case's number after a space (the report's kernels are renamed by it on import).
RANGE_PREFIX = NVTX_RANGE
# In the driver's temporary folder: the sandbox's private /tmp.
REPORT_NAME = "kj-profile"
LOG_NAME = "kj-ncu.log"
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
# Kernels profiled per grading at most (each is replayed for every pass its sections need).
MAX_LAUNCHES = 300
# Kept per case and in all, and the longest name kept.
MAX_KERNELS = 50
MAX_NAME = 240
MAX_STALLS = 3
# The largest report file the harness takes.
MAX_REPORT_BYTES = 32 << 20  # as the service keeps (KJ_MAX_PROFILE_FILE_BYTES)
IMPORT_TIMEOUT_S = 120.0

DURATION = "gpu__time_duration.sum"
# The summary's figures: report column -> key.
FIGURES = {
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": "memory_pct",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "compute_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
}
COUNTS = {
    "launch__registers_per_thread": "registers_per_thread",
    "launch__block_size": "block_size",
    "launch__grid_size": "grid_size",
}
SHARED = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
STALL = re.compile(r"^smsp__average_warps?_issue_stalled_([a-z_]+?)_per_issue_active\.ratio$")
# A warp that issued is not stalled.
NOT_STALLS = frozenset({"selected"})
TIME_UNITS = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3,
              "ms": 1e3, "second": 1e6, "s": 1e6}  # fmt: skip
BYTE_UNITS = {"byte": 1, "Kbyte": 1 << 10, "Mbyte": 1 << 20, "KB": 1 << 10, "MB": 1 << 20}
# What ncu always says under --clock-control none: no reason a profile is missing.
NOTES = ("unmodified GPU clocks",)
# A worker's reasons for a torch.profiler table instead, in the report's words.
WHY_NOT = {
    "missing": "Nsight Compute (ncu) is not installed on this worker",
    "counters": "this GPU host lets only administrators read its performance counters "
    "(ERR_NVGPUCTRPERM), so Nsight Compute cannot profile here",
}


# -- the worker's side ----------------------------------------------------------------------


def find_ncu(named: str) -> str | None:
    """The `ncu` this worker profiles with: `named` (the host's KJ_NCU,
    grader/hostsettings.py) when set, else PATH's, else the newest CUDA toolkit's."""
    if named:
        return named if os.access(named, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/usr/local").glob("cuda*/bin/ncu"), reverse=True):
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def sandbox_paths(ncu: str) -> list[str]:
    """The host folders `ncu` needs inside the sandbox, read-only: its install, and
    /opt/nvidia, where the CUDA toolkit's launcher finds Nsight Compute itself."""
    real = Path(os.path.realpath(ncu))
    paths = [str(real.parent.parent)]
    if os.path.isdir("/opt/nvidia"):
        paths.append("/opt/nvidia")
    return paths


def driver_argv(ncu: str, results_fd: int, runner_argv: list[str]) -> list[str]:
    """The sandbox's command for a runner profiled by `ncu`; the driver answers on
    `results_fd`, a channel of its own (the runner's closes when the runner ends)."""
    return [sys.executable, "-m", "grader.nsight", "--ncu", ncu,
            "--results-fd", str(results_fd), "--", *runner_argv]  # fmt: skip


# -- inside the sandbox: the driver ---------------------------------------------------------


def _temp(name: str) -> str:
    return os.path.join(tempfile.gettempdir(), name)


def _report_file() -> str:
    return _temp(REPORT_NAME) + ".ncu-rep"


def record_argv(ncu: str, target: list[str]) -> list[str]:
    argv = [
        ncu,
        "--clock-control", "none",
        "--profile-from-start", "off",
        "--nvtx",
        "--target-processes", "all",
        "--launch-count", str(MAX_LAUNCHES),
        "--metrics", DURATION,
        "--log-file", _temp(LOG_NAME),
        "-f", "-o", _temp(REPORT_NAME),
    ]  # fmt: skip
    for section in SECTIONS:
        argv += ["--section", section]
    return argv + target


def import_argv(ncu: str, renamed: bool) -> list[str]:
    argv = [ncu, "--import", _report_file(), "--csv", "--page", "raw"]
    argv += ["--print-units", "base"]
    return argv + (["--print-nvtx-rename", "kernel"] if renamed else [])


def drive(ncu: str, target: list[str], channel_fd: int, results_fd: int) -> None:
    """Run the runner under `ncu`; once it has exited, hand the harness the summary and the
    report on the results channel. The runner's channel is the runner's alone: the driver
    lets its copy go, so the harness sees that channel close when the runner ends."""
    with subprocess.Popen(record_argv(ncu, target), pass_fds=(channel_fd,)) as child:
        os.close(channel_fd)
        returncode = child.wait()
    message: dict[str, Any] = {"ok": True, "ncu": _collected(ncu, returncode)}
    report = Path(_report_file())
    sock = socket.socket(fileno=results_fd)
    try:
        send_message(results_fd, message)
        if message["ncu"]["report"]:
            with report.open("rb") as file:
                send_fd(sock, file.fileno())
    except OSError:
        pass  # the harness stopped listening: the grading ended without this profile


def _collected(ncu: str, returncode: int) -> dict[str, Any]:
    log_file = Path(_temp(LOG_NAME))
    log = log_file.read_text(errors="replace") if log_file.exists() else ""
    said = [
        line.strip() for line in log.splitlines() if line.startswith(("==ERROR==", "==WARNING=="))
    ]
    found: dict[str, Any] = {"returncode": returncode, "errors": said[:5], "report": False,
                             "version": _version(ncu), "cases": {}, "launches": 0}  # fmt: skip
    if not Path(_report_file()).exists():
        return found
    found["report"] = True
    try:
        named = _import(ncu, renamed=False)
        ranged = _import(ncu, renamed=True)
    except (OSError, subprocess.SubprocessError) as exc:
        found["errors"].append(f"ncu --import failed: {exc}")
        return found
    found["launches"] = len(rows_of(named)[0])
    found["cases"] = summarize(named, ranged)
    return found


def _import(ncu: str, renamed: bool) -> str:
    done = subprocess.run(import_argv(ncu, renamed), capture_output=True, text=True,
                          timeout=IMPORT_TIMEOUT_S, check=True)  # fmt: skip
    return done.stdout


def _version(ncu: str) -> str:
    try:
        done = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    found = re.search(r"Version (\S+)", done.stdout)
    return found.group(1) if found else ""


# -- reading a report's raw page ------------------------------------------------------------


def rows_of(text: str) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The raw page's kernels (one dict per launch, by column) and its units row. The CSV
    begins with a header row; a units row follows when units are printed."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    table = list(csv.reader(io.StringIO("\n".join(lines))))
    if not table:
        return [], {}
    header, body = table[0], table[1:]
    units: dict[str, str] = {}
    first = dict(zip(header, body[0], strict=False)) if body else {}
    if first and not first.get("ID", "").strip():
        units, body = first, body[1:]
    return [dict(zip(header, row, strict=False)) for row in body], units


def summarize(named_csv: str, ranged_csv: str) -> dict[str, list[dict[str, Any]]]:
    """Each case's kernels (by the NVTX range a launch was renamed to), in the order first
    launched, with their figures over that case's launches."""
    launches, units = rows_of(named_csv)
    ranged, _ = rows_of(ranged_csv)
    case_of = {row.get("ID"): _case(row.get("Kernel Name", "")) for row in ranged}
    by_case: dict[str, dict[str, list[dict[str, str]]]] = {}
    current = "0"
    for launch in launches:
        # A kernel in a range of the submission's own keeps the case launched before it.
        current = case_of.get(launch.get("ID")) or current
        name = launch.get("Kernel Name", "")[:MAX_NAME]
        by_case.setdefault(current, {}).setdefault(name, []).append(launch)
    return {
        case: [_kernel(name, group, units) for name, group in list(kernels.items())[:MAX_KERNELS]]
        for case, kernels in by_case.items()
    }


def _case(name: str) -> str | None:
    """The case of a launch renamed to its NVTX range ("kj-submission 3/void add(...)")."""
    found = re.match(re.escape(RANGE_PREFIX) + r" (\d+)(?:/|$)", name.strip())
    return found.group(1) if found else None


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.replace(",", "").strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _scaled(
    launch: dict[str, str], column: str, units: dict[str, str], table: Mapping[str, float]
) -> float | None:
    value = _number(launch.get(column))
    if value is None:
        return None
    return value * table.get(units.get(column, "").strip(), 1.0)


def _kernel(name: str, launches: list[dict[str, str]], units: dict[str, str]) -> dict[str, Any]:
    durations = [_scaled(x, DURATION, units, TIME_UNITS) for x in launches]
    timed = [d for d in durations if d is not None]
    median = statistics.median(timed) if timed else None
    # The other figures from the launch whose duration is the median's (or the first).
    typical = launches[durations.index(min(timed, key=lambda d: abs(d - median)))] if (
        timed and median is not None) else launches[0]  # fmt: skip
    kernel: dict[str, Any] = {
        "name": name,
        "launches": len(launches),
        "duration_us": median,
        "total_us": sum(timed) if timed else None,
    }
    for column, key in FIGURES.items():
        kernel[key] = _number(typical.get(column))
    for column, key in COUNTS.items():
        value = _number(typical.get(column))
        kernel[key] = int(value) if value is not None else None
    shared = [_scaled(typical, column, units, BYTE_UNITS) for column in SHARED]
    known = [value for value in shared if value is not None]
    kernel["shared_bytes_per_block"] = int(sum(known)) if known else None
    kernel["stalls"] = _stalls(launches)
    return kernel


def _stalls(launches: list[dict[str, str]]) -> list[dict[str, Any]]:
    """The reasons warps waited most, in cycles per issued instruction, over the launches."""
    totals: dict[str, list[float]] = {}
    for launch in launches:
        for column, text in launch.items():
            found = STALL.match(column)
            value = _number(text)
            if found and value is not None and found.group(1) not in NOT_STALLS:
                totals.setdefault(found.group(1), []).append(value)
    means = {reason: statistics.fmean(values) for reason, values in totals.items()}
    top = sorted(means.items(), key=lambda item: -item[1])[:MAX_STALLS]
    return [{"reason": reason, "per_issue": value} for reason, value in top if value > 0]


# -- the harness's side: what it takes from the driver --------------------------------------


def summary_from_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """The driver's summary as the report keeps it: bounded and of the expected shape. The
    driver ran beside the submission, so nothing in it is trusted beyond its shape."""
    found = reply.get("ncu")
    if not isinstance(found, dict):
        raise Stop(Status.ERROR, "the profile's driver answered without a summary")
    cases = found.get("cases")
    cases = cases if isinstance(cases, dict) else {}
    kept: dict[str, list[dict[str, Any]]] = {}
    for case, kernels in list(cases.items())[:MAX_KERNELS]:
        if isinstance(case, str) and case.isdigit() and isinstance(kernels, list):
            kept[case] = [_kept_kernel(k) for k in kernels[:MAX_KERNELS] if isinstance(k, dict)]
    errors = found.get("errors")
    errors = errors if isinstance(errors, list) else []
    returncode, launches = found.get("returncode"), found.get("launches")
    return {
        "version": str(found.get("version", ""))[:40],
        "report": found.get("report") is True,
        "returncode": returncode
        if replies.number(returncode, low=-(1 << 31), high=1 << 31) is not None
        else None,
        "launches": replies.count(launches) or 0,
        "errors": [str(line)[:500] for line in errors[:5]],
        "cases": kept,
    }


def _kept_kernel(kernel: dict[str, Any]) -> dict[str, Any]:
    def figure(key: str) -> float | None:
        return replies.number(kernel.get(key))

    def count(key: str) -> int | None:
        return replies.count(kernel.get(key))

    kept: dict[str, Any] = {"name": str(kernel.get("name", ""))[:MAX_NAME],
                            "launches": count("launches") or 0}  # fmt: skip
    for key in ("duration_us", "total_us", *FIGURES.values()):
        kept[key] = figure(key)
    for key in (*COUNTS.values(), "shared_bytes_per_block"):
        kept[key] = count(key)
    stalls = kernel.get("stalls")
    stalls = stalls if isinstance(stalls, list) else []
    kept["stalls"] = [
        {"reason": str(s.get("reason", ""))[:40], "per_issue": replies.number(s["per_issue"])}
        for s in stalls[:MAX_STALLS]
        if isinstance(s, dict) and replies.number(s.get("per_issue")) is not None
    ]
    return kept


def why_not(summary: dict[str, Any] | None, message: str = "") -> str:
    """Why a profile grading fell back to torch.profiler, for the report."""
    errors = " ".join(summary.get("errors", [])) if summary else ""
    if "ERR_NVGPUCTRPERM" in errors:
        return WHY_NOT["counters"]
    if summary is None:
        shown = message.strip().splitlines()[0] if message.strip() else "no summary came back"
        return f"Nsight Compute's run of this submission ended without a profile ({shown})"
    said = f" ({summary['errors'][0]})" if errors else ""
    if not summary.get("report"):
        code = summary.get("returncode")
        return f"Nsight Compute wrote no report (ncu exited with {code}){said}"
    if summary.get("launches"):
        return f"Nsight Compute's report holds no kernel of this submission's calls{said}"
    return f"Nsight Compute profiled no kernel of this submission's calls{said}"


def read_report(sock: socket.socket, deadline: float) -> bytes:
    """The report file the driver hands over, read through its descriptor, bounded."""
    fd = recv_fd(sock, deadline=deadline)
    try:
        size = os.fstat(fd).st_size
        if size > MAX_REPORT_BYTES:
            raise Stop(Status.ERROR, f"the Nsight Compute report of {size} bytes is over the "
                       f"{MAX_REPORT_BYTES >> 20} MiB a report may hold")  # fmt: skip
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read(MAX_REPORT_BYTES + 1)[:MAX_REPORT_BYTES]
    finally:
        os.close(fd)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="grader.nsight")
    parser.add_argument("--ncu", required=True)
    parser.add_argument("--results-fd", type=int, required=True)
    parser.add_argument("target", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    target = args.target[1:] if args.target[:1] == ["--"] else args.target
    channel = target[target.index("--channel-fd") + 1]
    drive(args.ncu, target, int(channel), args.results_fd)


if __name__ == "__main__":
    main()
