"""Profile mode through the service against Nsight Compute's own run of the same kernels.
`kerneljudge serve` with its local sandboxed worker on this host's GPU grades each solution
in profile mode (REST, as a competitor would); its report file is downloaded and opened with
`ncu --import`; then each solution runs outside the service under `ncu` directly, on the
same public benchmark inputs with the same calls (one to warm up, three profiled), and each
kernel's median duration is set beside the service's. Afterwards: the GPU's processes.

    python -m bench.ncu_profile_check [SOLUTION ...] [--out FILE]
    # default: vectoradd's pytorch, triton and cuda_inline solutions"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.service_demo import REPO, TERMINAL, add_user, call, serving
from grader import nsight
from grader.harness import grade
from grader.hostsettings import HostSettings
from grader.problem import load_problem
from grader.profiling import NVTX_RANGE, PROFILED_CALLS
from grader.report import PROFILE_FILE

DEFAULT = ["pytorch", "triton", "cuda_inline"]
TOLERANCE = 0.05
# Outside the service: the solution's calls as the runner makes them under ncu.
OWN_RUN = """
import importlib.util, json, sys, torch
problem_dir, solution, cases = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
marks = sys.argv[4] if len(sys.argv) > 4 else "start-stop"
sys.path[:0] = [problem_dir, problem_dir + "/.."]
from reference import generate_input
spec = importlib.util.spec_from_file_location("submission", solution)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
for index, case in enumerate(cases, start=1):
    data = generate_input(**case)
    module.custom_kernel(data)
    torch.cuda.synchronize()
    if marks == "start-stop":
        torch.cuda.profiler.start()
    torch.cuda.nvtx.range_push("{range}" if marks == "plain" else f"{range} {{index}}")
    for _ in range({calls}):
        module.custom_kernel(data)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    if marks == "start-stop":
        torch.cuda.profiler.stop()
print("own run done")
"""


# Ways of telling ncu which kernels are the submission's: (script marks, ncu's options).
VARIANTS = {
    "start-stop": ("start-stop", ["--profile-from-start", "off", "--nvtx"]),
    "include-each": ("ranges", ["--nvtx", "--nvtx-include", f"{NVTX_RANGE} 1/",
                                "--nvtx-include", f"{NVTX_RANGE} 2/"]),
    "include-regex": ("ranges", ["--nvtx", "--nvtx-include", f"regex:{NVTX_RANGE} [0-9]+/"]),
    "include-plain": ("plain", ["--nvtx", "--nvtx-include", f"{NVTX_RANGE}/"]),
}  # fmt: skip


def variants(ncu: str, solution: Path, cases: list[dict[str, Any]], root: Path) -> dict:
    """How many kernels ncu profiles under each way of marking the calls (two cases)."""
    script = root / "own_run.py"
    script.write_text(OWN_RUN.format(range=NVTX_RANGE, calls=PROFILED_CALLS))
    found = {}
    for name, (marks, options) in VARIANTS.items():
        report = root / f"variant-{name}"
        done = subprocess.run(
            [ncu, "--clock-control", "none", *options, "--metrics", nsight.DURATION, "-f", "-o",
             str(report), sys.executable, str(script), str(REPO / "problems" / "vectoradd"),
             str(solution), json.dumps(cases[:2]), marks],
            capture_output=True, text=True, timeout=200,
        )  # fmt: skip
        page = subprocess.run(
            [ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "raw", "--print-units",
             "base", "--print-nvtx-rename", "kernel"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        launches, _ = nsight.rows_of(page.stdout)
        found[name] = {"rc": done.returncode, "launches": len(launches),
                       "renamed": sorted({x.get("Kernel Name", "") for x in launches})[:4],
                       "ncu_said": [line for line in done.stdout.splitlines()
                                    if line.startswith("==")][-6:],
                       "import_head": page.stdout[:300], "stderr": done.stderr[-300:]}  # fmt: skip
        print("variant", name, json.dumps(found[name])[:1500])
    return found


def download(url: str, token: str, path: Path) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        data = response.read()
    path.write_bytes(data)
    return len(data)


def opens(ncu: str, path: Path) -> dict[str, Any]:
    """Whether `ncu --import` reads the file, and how many kernels it lists."""
    done = subprocess.run(
        [ncu, "--import", str(path), "--csv", "--page", "raw"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    launches, _ = nsight.rows_of(done.stdout)
    columns = set(launches[0]) if launches else set()
    wanted = [nsight.DURATION, *nsight.FIGURES, *nsight.COUNTS, *nsight.SHARED]
    return {"rc": done.returncode, "kernels": len(launches), "stderr": done.stderr[-400:],
            "missing_columns": [c for c in wanted if c not in columns],
            "stall_columns": sum(bool(nsight.STALL.match(c)) for c in columns)}  # fmt: skip


def own_run(ncu: str, solution: Path, cases: list[dict[str, Any]], root: Path) -> dict[str, Any]:
    script = root / "own_run.py"
    script.write_text(OWN_RUN.format(range=NVTX_RANGE, calls=PROFILED_CALLS))
    report = root / f"own-{solution.stem}"
    record = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--nvtx",
              "--metrics", nsight.DURATION, "-f", "-o", str(report)]  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        [*record, sys.executable, str(script), str(REPO / "problems" / "vectoradd"),
         str(solution), json.dumps(cases)],
        capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    pages = []
    for renamed in (False, True):
        argv = [ncu, "--import", f"{report}.ncu-rep", "--csv", "--page", "raw"]
        argv += ["--print-units", "base"] + (["--print-nvtx-rename", "kernel"] if renamed else [])
        pages.append(subprocess.run(argv, capture_output=True, text=True, timeout=120).stdout)
    return {"rc": done.returncode, "wall_s": time.monotonic() - started,
            "stderr": done.stderr[-600:], "cases": nsight.summarize(*pages)}  # fmt: skip


def compare(service: list[dict[str, Any]], own: dict[str, list[dict[str, Any]]]) -> list[dict]:
    rows = []
    for index, case in enumerate(service, start=1):
        theirs = {k["name"]: k for k in own.get(str(index), [])}
        for kernel in (case.get("profile") or {}).get("kernels", []):
            other = theirs.get(kernel["name"])
            ours, ncu_us = kernel.get("duration_us"), (other or {}).get("duration_us")
            ratio = ours / ncu_us if ours and ncu_us else None
            rows.append({"case": case["params"], "kernel": kernel["name"][:90],
                         "service_us": ours, "ncu_us": ncu_us, "ratio": ratio,
                         "within": ratio is not None and abs(ratio - 1) <= TOLERANCE,
                         "memory_pct": kernel.get("memory_pct"),
                         "occupancy_pct": kernel.get("occupancy_pct"),
                         "registers": kernel.get("registers_per_thread"),
                         "stalls": kernel.get("stalls")})  # fmt: skip
    return rows


def gpu_processes() -> str:
    done = subprocess.run(
        ["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
        capture_output=True, text=True,
    )  # fmt: skip
    memory = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader"],
        capture_output=True, text=True,
    )  # fmt: skip
    return f"processes: [{done.stdout.strip()}] memory used: {memory.stdout.strip()}"


def through_service(
    ncu: str, env: dict[str, str], token: str, names: list[str], root: Path
) -> dict[str, Any]:
    """Each solution submitted in profile mode to `kerneljudge serve`, its report polled
    and its report file downloaded and opened."""
    graded: dict[str, Any] = {}
    with serving(env, root / "serve.log") as base:
        ids = {}
        for name in names:
            code = (REPO / "problems" / "vectoradd" / "solutions" / f"{name}.py").read_text()
            body = {"problem": "vectoradd", "code": code, "mode": "profile"}
            ids[name] = call("POST", f"{base}/api/v1/submissions", token, body)["id"]
        for name, sid in ids.items():
            started = time.monotonic()
            while (report := call("GET", f"{base}/api/v1/submissions/{sid}", token))[
                "status"
            ] not in TERMINAL:
                time.sleep(1)
            entry = shown(name, report, time.monotonic() - started)
            if (report.get("files") or {}).get(PROFILE_FILE):
                saved = root / f"service-{name}.ncu-rep"
                url = f"{base}/api/v1/submissions/{sid}/files/{PROFILE_FILE}"
                entry["downloaded_bytes"] = download(url, token, saved)
                entry["import"] = opens(ncu, saved)
                print("   report file:", entry["downloaded_bytes"], "bytes; ncu --import:",
                      entry["import"])  # fmt: skip
            graded[name] = entry
    return graded


def graded_here(ncu: str, names: list[str], root: Path) -> dict[str, Any]:
    """Each solution graded in profile mode by grader.harness.grade in this process (the
    sandbox as a worker's), its report file written out and opened."""
    problem = load_problem("vectoradd")
    graded: dict[str, Any] = {}
    for name in names:
        code = (REPO / "problems" / "vectoradd" / "solutions" / f"{name}.py").read_text()
        started = time.monotonic()
        report = grade(problem, code, mode="profile", device="cuda")
        entry = shown(name, report.to_dict(), time.monotonic() - started)
        if PROFILE_FILE in report.files:
            saved = root / f"here-{name}.ncu-rep"
            saved.write_bytes(report.files[PROFILE_FILE])
            entry["import"] = opens(ncu, saved)
            print("   report file:", saved.stat().st_size, "bytes; ncu --import:",
                  entry["import"])  # fmt: skip
        entry["stderr"] = report.stderr[-1500:]
        graded[name] = entry
    return graded


def shown(name: str, report: dict[str, Any], waited_s: float) -> dict[str, Any]:
    print(f"\n== {name}: {report['status']} after {waited_s:.1f} s | {report['message'][:400]}")
    print("   phases:", {k: round(v, 2) for k, v in (report.get("phases") or {}).items()})
    print("   stderr:", report.get("stderr", "")[-600:])
    for case in report["cases"]:
        profile = case.get("profile") or {}
        print("  ", case["params"], profile.get("tool"), profile.get("why_not_ncu", ""),
              [(k["name"][:60], k["duration_us"]) for k in profile.get("kernels", [])])  # fmt: skip
    return {"status": report["status"], "message": report["message"], "waited_s": waited_s,
            "files": report.get("files"), "phases": report.get("phases"),
            "cases": report["cases"]}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("solutions", nargs="*", default=DEFAULT)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--variants",
        action="store_true",
        help="first: how many kernels each way of marking the calls profiles",
    )
    parser.add_argument(
        "--direct",
        action="store_true",
        help="grade with grader.harness.grade in this process, not the service",
    )
    args = parser.parse_args()
    ncu = nsight.find_ncu(HostSettings.from_env().ncu)
    if ncu is None:
        print("no ncu on this host")
        return 1
    root = Path(tempfile.mkdtemp(prefix="kj-ncu-check-"))
    data_dir = root / "data"
    env = {**os.environ, "KJ_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"}
    cases = load_problem("vectoradd").benchmarks_for("cuda")
    print("ncu:", ncu, nsight._version(ncu), "| before:", gpu_processes())
    results: dict[str, Any] = {"ncu": ncu, "solutions": {}}
    if args.variants:
        first = REPO / "problems" / "vectoradd" / "solutions" / f"{args.solutions[0]}.py"
        results["variants"] = variants(ncu, first, cases, root)
    if args.direct:
        results["solutions"] = graded_here(ncu, args.solutions, root)
    else:
        token = add_user(env, "profiler")
        results["solutions"] = through_service(ncu, env, token, args.solutions, root)
    results["after_service"] = gpu_processes()
    print("\nafter the gradings:", results["after_service"])
    failures = 0
    for name, entry in results["solutions"].items():
        if entry["status"] != "passed":
            failures += 1
            continue
        solution = REPO / "problems" / "vectoradd" / "solutions" / f"{name}.py"
        own = own_run(ncu, solution, cases, root)
        entry["own_run"] = {k: v for k, v in own.items() if k != "cases"}
        entry["compare"] = compare(entry["cases"], own["cases"])
        print(f"\n== {name}: ncu's own run rc {own['rc']} in {own['wall_s']:.1f} s")
        for row in entry["compare"]:
            ratio = f"{row['ratio']:.4f}" if row["ratio"] else "-"
            print(f"   {row['case']} {row['kernel']}: service {row['service_us']} µs, "
                  f"ncu {row['ncu_us']} µs, ratio {ratio}, mem {row['memory_pct']}%, "
                  f"occupancy {row['occupancy_pct']}%, regs {row['registers']}, "
                  f"stalls {row['stalls']}")  # fmt: skip
        failures += not entry["compare"] or not all(row["within"] for row in entry["compare"])
    results["after_all"] = gpu_processes()
    print("\nafter all:", results["after_all"])
    if args.out:
        args.out.write_text(json.dumps(results, indent=1, default=str))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
