"""Can Nsight Compute profile a submission's own calls on this GPU host, outside the sandbox
and inside it? A target script runs a few kernels inside an NVTX range and one outside it;
each ncu run is asked for the range's kernels only, and the report is read back with
`ncu --import`. What profile mode needs to know before it is built on this host.

    python -m bench.ncu_probe [--out FILE]"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sandbox
from grader.confine import RUN_DIR, runner_env, runner_isolation

TARGET = """
import torch
x = torch.randn(4096, 4096, device="cuda")
y = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
(x * 3).sum()  # outside the range: must not be profiled
torch.cuda.nvtx.range_push("kj-submission")
for _ in range(3):
    z = x + y
torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print("target done", float(z[0, 0]) == float(x[0, 0] + y[0, 0]))
"""
METRICS = ",".join(
    [
        "gpu__time_duration.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__registers_per_thread",
    ]
)


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/usr/local").glob("cuda*/bin/ncu")):
        return str(candidate)
    return None


CSV_MARK = "--- kj-ncu-csv ---"


def ncu_argv(ncu: str, report: str) -> list[str]:
    return [
        ncu,
        "--clock-control", "none",
        "--nvtx", "--nvtx-include", "kj-submission/",
        "--target-processes", "all",
        "--metrics", METRICS,
        "-f", "-o", report,
    ]  # fmt: skip


def read_report(ncu: str, report: str) -> dict[str, Any]:
    done = subprocess.run(
        [ncu, "--import", report, "--csv", "--page", "raw", "--metrics", METRICS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return {"rc": done.returncode, "csv_head": lines[:6], "rows": max(0, len(lines) - 2),
            "stderr": done.stderr[-800:]}  # fmt: skip


def outside(ncu: str, root: Path) -> dict[str, Any]:
    target = root / "target.py"
    report = str(root / "outside")
    started = time.monotonic()
    done = subprocess.run(
        [*ncu_argv(ncu, report), sys.executable, str(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    result: dict[str, Any] = {
        "rc": done.returncode,
        "wall_s": time.monotonic() - started,
        "stdout": done.stdout[-1500:],
        "stderr": done.stderr[-1500:],
    }
    if Path(report + ".ncu-rep").exists():
        result["report"] = read_report(ncu, report + ".ncu-rep")
    return result


def inside(ncu: str, root: Path, seccomp: bool) -> dict[str, Any]:
    work = root / ("in-seccomp" if seccomp else "in-plain")
    work.mkdir()
    (work / "target.py").write_text(TARGET)
    ncu_root = str(Path(os.path.realpath(ncu)).parent.parent)
    os.environ["KJ_SANDBOX_RO_PATHS"] = ":".join(
        [p for p in os.environ.get("KJ_SANDBOX_RO_PATHS", "").split(":") if p]
        + [ncu_root]
        # ncu's launcher finds the Nsight Compute install under /opt/nvidia
        + [p for p in ("/opt/nvidia",) if os.path.isdir(p)]
    )
    isolation = dataclasses.replace(runner_isolation(work, "cuda"), seccomp=seccomp)
    env = runner_env(work, work, "cuda", isolated=True)
    env["PATH"] = os.pathsep.join([str(Path(ncu).parent), env["PATH"]])
    # The run folder is read-only inside: ncu writes its report to the sandbox's private
    # /tmp, and reads it back there (a profile mode would hand the file out the same way).
    record = ncu_argv(ncu, "/tmp/inside")
    show = [ncu, "--import", "/tmp/inside.ncu-rep", "--csv", "--page", "raw"]
    show += ["--metrics", METRICS]
    (work / "driver.py").write_text(
        "import subprocess, sys\n"
        f"done = subprocess.run({record!r} + [sys.executable, {RUN_DIR + '/target.py'!r}])\n"
        f"print('{CSV_MARK}', flush=True)\n"
        f"subprocess.run({show!r})\n"
        "sys.exit(done.returncode)\n"
    )
    started = time.monotonic()
    done = sandbox.run(
        [sys.executable, f"{RUN_DIR}/driver.py"],
        cwd=work,
        env=env,
        timeout_s=300,
        isolation=isolation,
    )
    result: dict[str, Any] = {
        "rc": done.returncode,
        "wall_s": time.monotonic() - started,
        "stdout": done.stdout[-1500:],
        "stderr": done.stderr[-1500:],
        "ncu_root": ncu_root,
    }
    _, marked, csv = done.stdout.partition(CSV_MARK)
    if marked:
        lines = [line for line in csv.splitlines() if line.strip()]
        result["stdout"] = done.stdout.partition(CSV_MARK)[0][-1500:]
        result["report"] = {"csv_head": lines[:6], "rows": max(0, len(lines) - 2)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    ncu = find_ncu()
    results: dict[str, Any] = {"ncu": ncu}
    if ncu is None:
        print("no ncu on this host")
    else:
        version = subprocess.run([ncu, "--version"], capture_output=True, text=True)
        results["version"] = version.stdout.strip().splitlines()[-1:]
        with tempfile.TemporaryDirectory(prefix="kj-ncu-") as folder:
            root = Path(folder)
            (root / "target.py").write_text(TARGET)
            results["outside"] = outside(ncu, root)
            results["inside_seccomp"] = inside(ncu, root, seccomp=True)
            if results["inside_seccomp"].get("report") is None:
                results["inside_plain"] = inside(ncu, root, seccomp=False)
    print(json.dumps(results, indent=1))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
