"""Profile mode under Nsight Compute (grader.nsight): what a report's raw page becomes, what
the harness keeps of a driver's answer, and the whole path through the sandbox on this
CPU with a stand-in `ncu` that runs its target as the real one does and answers `--import`
with a raw page written here. The real ncu on a GPU: bench/ncu_profile_check.py."""

from __future__ import annotations

import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from grader import harness, nsight
from grader.problem import Problem
from grader.report import PROFILE_FILE, Report, Stop

STALL = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
COLUMNS = [
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Device", "CC", "gpu__time_duration.sum",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
    "launch__block_size", "launch__grid_size", "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic", STALL.format("long_scoreboard"),
    STALL.format("selected"), STALL.format("wait"), STALL.format("barrier"),
    STALL.format("math_pipe_throttle"),
]  # fmt: skip
UNITS = ["", "", "", "", "", "", "", "", "", "nsecond", "%", "%", "%", "register/thread", "",
         "", "byte", "Kbyte", "", "", "", "", ""]  # fmt: skip
ADD = "void at::native::vectorized_elementwise_kernel<4, CUDAFunctorOnSelf_add<float>>(int)"
HELPER = "my_helper(float*, int)"
# (ID, kernel, its NVTX range, duration in ns): case 1's three calls, a kernel in a range
# of the submission's own, case 2's call. Renamed on import, a launch's name is its range's,
# a slash, and its own (as ncu 2025.3 writes it).
LAUNCHES = [
    (0, ADD, "kj-submission 1", "44,384"),
    (1, ADD, "kj-submission 1", "44,000"),
    (2, ADD, "kj-submission 1", "45,100"),
    (3, HELPER, "my-range", "1,200"),
    (4, ADD, "kj-submission 2", "90,000"),
]


def raw_page(renamed: bool) -> str:
    def line(values: list[str]) -> str:
        return ",".join(f'"{value}"' for value in values)

    rows = [line(COLUMNS), line(UNITS)]
    for launch_id, kernel, nvtx, duration in LAUNCHES:
        figures = ["83.5", "12.25", "81.9", "32", "128", "4096", "0", "1", "3.5", "0.9",
                   "1.25", "0", "0.5"]  # fmt: skip
        rows.append(line([str(launch_id), "4242", "python3", "127.0.0.1",
                          f"{nvtx}/{kernel}" if renamed else kernel, "1", "7", "0", "9.0", duration,
                          *figures]))  # fmt: skip
    return "==PROF== Disconnected\n" + "\n".join(rows) + "\n"


def test_a_reports_raw_page_becomes_each_cases_kernels() -> None:
    cases = nsight.summarize(raw_page(False), raw_page(True))
    assert set(cases) == {"1", "2"}
    add, helper = cases["1"]
    assert (add["name"], add["launches"]) == (ADD, 3)
    assert add["duration_us"] == pytest.approx(44.384)  # ns, with a thousands separator
    assert add["total_us"] == pytest.approx(44.384 + 44.0 + 45.1)
    assert (add["memory_pct"], add["compute_pct"], add["occupancy_pct"]) == (83.5, 12.25, 81.9)
    assert (add["registers_per_thread"], add["block_size"], add["grid_size"]) == (32, 128, 4096)
    assert add["shared_bytes_per_block"] == 1024  # 0 bytes static, 1 Kbyte dynamic
    # The top reasons warps waited, most first; "selected" (it issued) is no stall.
    assert [s["reason"] for s in add["stalls"]] == ["long_scoreboard", "wait", "math_pipe_throttle"]
    # In a range of the submission's own: still the case it was launched in.
    assert (helper["name"], helper["launches"]) == (HELPER, 1)
    ((later,),) = [cases["2"]]
    assert later["duration_us"] == pytest.approx(90.0)


def test_the_harness_keeps_only_a_bounded_well_formed_summary() -> None:
    kernel = {"name": "k" * 10_000, "launches": 3, "duration_us": float("nan"),
              "total_us": -1.0, "memory_pct": True, "registers_per_thread": 2.5,
              "stalls": [{"reason": "wait", "per_issue": "1"}, {"reason": "x" * 99,
                                                                 "per_issue": 2.0}]}  # fmt: skip
    reply = {"ncu": {"version": "v" * 100, "report": "yes", "errors": ["e" * 9999] * 9,
                     "cases": {"1": [kernel] * 500, "../x": [kernel], "2": "many"}}}  # fmt: skip
    kept = nsight.summary_from_reply(reply)
    assert set(kept["cases"]) == {"1"} and len(kept["cases"]["1"]) == nsight.MAX_KERNELS
    first = kept["cases"]["1"][0]
    assert len(first["name"]) == nsight.MAX_NAME
    assert first["duration_us"] is None and first["total_us"] is None
    assert first["memory_pct"] is None and first["registers_per_thread"] is None
    assert first["stalls"] == [{"reason": "x" * 40, "per_issue": 2.0}]
    assert kept["report"] is False and len(kept["version"]) == 40
    assert len(kept["errors"]) == 5 and all(len(e) == 500 for e in kept["errors"])
    with pytest.raises(Stop):
        nsight.summary_from_reply({"ok": True})


FAKE_NCU = '''#!{python}
"""A stand-in for ncu: records by running its target, imports by printing a raw page."""
import json, os, subprocess, sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2099.1.0.0 (build 1)")
    sys.exit(0)
if "--import" in args:
    pages = json.loads({pages!r})
    sys.stdout.write(pages["renamed" if "--print-nvtx-rename" in args else "named"])
    sys.exit(0)
valued = {{"--clock-control", "--profile-from-start", "--target-processes", "--launch-count",
          "--metrics", "--log-file", "-o", "--section"}}
options, index = {{}}, 0
while args[index].startswith("-"):
    if args[index] in valued:
        options[args[index]] = args[index + 1]
        index += 2
    else:
        index += 1
done = subprocess.run(args[index:], close_fds=False)
with open(options["--log-file"], "w") as log:
    log.write({log!r})
if {writes_report!r}:
    with open(options["-o"] + ".ncu-rep", "wb") as report:
        report.write(b"NCU-REPORT " + json.dumps(options).encode())
sys.exit(done.returncode)
'''


def fake_ncu(root: Path, *, log: str = "==PROF== Connected\n", writes_report: bool = True) -> str:
    import json

    pages = json.dumps({"named": raw_page(False), "renamed": raw_page(True)})
    ncu = root / "nsight" / "bin" / "ncu"
    ncu.parent.mkdir(parents=True)
    ncu.write_text(FAKE_NCU.format(python=sys.executable, pages=pages, log=log,
                                   writes_report=writes_report))  # fmt: skip
    ncu.chmod(ncu.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(ncu)


ProfileUnder = Callable[..., Report]


@pytest.fixture
def profile_under(
    monkeypatch: pytest.MonkeyPatch, quick_vectoradd: Problem, solution: Callable[[str, str], str]
) -> ProfileUnder:
    """Grades vectoradd's pytorch solution, and any code added after it, in profile mode on
    this CPU with the given ncu, as a GPU worker's grading would."""
    monkeypatch.setattr(harness, "_ncu_refused", [])

    def grade(ncu: str, added: str = "") -> Report:
        monkeypatch.setattr(harness, "_profiler", lambda mode, kind: (ncu, ""))
        code = solution("vectoradd", "pytorch") + added
        return harness.grade(quick_vectoradd, code, mode="profile", device="cpu")

    return grade


def test_a_profile_under_nsight_compute_names_each_kernel_and_hands_over_the_report(
    tmp_path: Path, profile_under: ProfileUnder
) -> None:
    report = profile_under(fake_ncu(tmp_path), "\nprint('hello from the submission')\n")
    assert report.status == "passed", report.message + report.stderr
    assert "nsight-compute" in report.message and "never ranks" in report.message
    first, second = (case.profile for case in report.cases)
    assert first is not None and second is not None
    assert first.tool == "nsight-compute" and first.version == "2099.1.0.0"
    assert first.kernels is not None and second.kernels is not None
    assert [k["name"] for k in first.kernels] == [ADD, HELPER]
    assert second.kernels[0]["duration_us"] == pytest.approx(90.0)
    # The report file ncu wrote in the sandbox's private /tmp, read through its descriptor,
    # with the options the runner was profiled under.
    data = report.contents[PROFILE_FILE]
    assert data.startswith(b"NCU-REPORT ")
    assert b'"--profile-from-start": "off"' in data and b'"--clock-control": "none"' in data
    assert b'"-o": "/tmp/kj-profile"' in data
    assert report.to_dict()["files"] == {PROFILE_FILE: {"bytes": len(data)}}
    assert "hello from the submission" in report.stdout


def test_where_the_counters_are_for_administrators_the_profile_is_torch_profilers_saying_so(
    tmp_path: Path, profile_under: ProfileUnder
) -> None:
    refused = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access\n"
    report = profile_under(fake_ncu(tmp_path, log=refused, writes_report=False))
    assert report.status == "passed", report.message + report.stderr
    for case in report.cases:
        assert case.profile is not None and case.profile.tool == "torch.profiler"
        assert case.profile.why_not_ncu == nsight.WHY_NOT["counters"]
        assert case.profile.rows
    assert report.files == {}
    # This host is known now: the next profile goes to torch.profiler at once.
    assert harness._ncu_refused == [nsight.WHY_NOT["counters"]]


def test_a_submission_that_breaks_under_nsight_compute_still_gets_a_profile(
    tmp_path: Path, profile_under: ProfileUnder
) -> None:
    """A stand-in whose target cannot start (a broken ncu install, say): the grading runs
    again with torch.profiler and says what ended the first run."""
    broken = tmp_path / "broken" / "bin" / "ncu"
    broken.parent.mkdir(parents=True)
    broken.write_text(f"#!{sys.executable}\nimport sys\nsys.exit(3)\n")
    broken.chmod(0o755)
    report = profile_under(str(broken))
    assert report.status == "passed", report.message + report.stderr
    why = report.cases[0].profile.why_not_ncu if report.cases[0].profile else ""
    assert why is not None
    assert why.startswith("Nsight Compute's run of this submission ended without a profile")
