"""The test rig's harness process: grades one hostile case and checks what it left behind.

`test_corpus.py` starts this under `unshare --pid --fork --mount-proc`, so a case that kills
every process it can (`kill(-1)`, its parent's group) reaches only this grading, never the
test session or the machine. The rig is the stand-in for a worker: its environment and HOME
hold the canaries, and it calls `grader.harness.grade()` exactly as a worker does. The
namespace is the rig's safety net, not a grader defence: every check is on the report.

Input: the job as JSON on stdin. Output: one line `RIG-RESULT <json>` on stdout.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import inspect
import json
import os
import pwd
import shutil
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

RESULT_PREFIX = "RIG-RESULT "
# Where a planted file would survive the grading: the shared temp folders and the homes.
_SCAN_DEPTH = 5
_IPC_CREAT = 0o1000
_IPC_RMID = 0


def quick_variant(problem: Any, quick: dict[str, Any]) -> Any:
    """The problem with few, small cases and a short timing budget (fast on a CPU)."""
    spec = dict(problem.spec)
    spec["tests"] = quick["tests"]
    spec["benchmarks"] = quick["benchmarks"]
    spec.pop("cpu_benchmarks", None)
    spec["case_time_budget_s"] = quick["budget_s"]
    return dataclasses.replace(problem, spec=spec)


def sysv_key(marker: str) -> int:
    """The SysV IPC key a case derives from its marker (cases use the same formula)."""
    return zlib.crc32(marker.encode()) & 0x7FFFFFFF


def _scan_roots() -> list[Path]:
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    roots = [Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]
    roots += [Path(os.environ.get("HOME", "/nonexistent")), home / ".triton", home / ".cache"]
    return [root for root in dict.fromkeys(roots) if root.is_dir()]


def _walk(root: Path, depth: int = 0) -> list[Path]:
    found: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return found
    for entry in entries:
        found.append(Path(entry.path))
        with contextlib.suppress(OSError):
            if depth < _SCAN_DEPTH and entry.is_dir(follow_symlinks=False):
                found += _walk(Path(entry.path), depth + 1)
    return found


def leftovers(marker: str) -> list[str]:
    """Everything carrying `marker` that outlived the grading: processes, files, IPC."""
    found: list[str] = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker.encode() in (proc / "cmdline").read_bytes():
                found.append(f"process {proc.name}")
    for root in _scan_roots():
        found += [f"file {path}" for path in _walk(root) if marker in path.name]
    key = str(sysv_key(marker))
    with contextlib.suppress(OSError):
        for line in Path("/proc/sysvipc/shm").read_text().splitlines()[1:]:
            if line.split()[:1] == [key]:
                found.append(f"SysV shared memory key {key}")
    with contextlib.suppress(OSError):
        if marker in Path("/proc/net/unix").read_text():
            found.append("unix socket")
    return sorted(set(found))


def clean_up(marker: str) -> None:
    """Remove what a case planted, so one run of the corpus does not affect the next."""
    for root in _scan_roots():
        for path in sorted(_walk(root), key=lambda p: len(p.parts), reverse=True):
            if marker not in path.name:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
    libc = ctypes.CDLL(None, use_errno=True)
    shm_id = libc.shmget(sysv_key(marker), 0, 0)
    if shm_id >= 0:
        libc.shmctl(shm_id, _IPC_RMID, None)


def grade_job(job: dict[str, Any]) -> dict[str, Any]:
    from grader.calibrate import DevicePeaks
    from grader.harness import grade
    from grader.problem import load_problem

    problem = quick_variant(load_problem(job["problem"]), job["quick"])
    peaks = DevicePeaks.from_dict(job["peaks"]) if job.get("peaks") else None
    # Static screening is a second layer only: the corpus grades with it off, so that every
    # case meets the runtime defences (tests/grader covers the screening itself).
    layers = {"screen": False} if "screen" in inspect.signature(grade).parameters else {}
    report = grade(
        problem,
        job["code"],
        mode=job["mode"],
        device=job["device"],
        secret_seed=int(os.environ["KJ_SECRET_SEED"]),
        timeout_s=float(job["timeout_s"]),
        peaks=peaks,
        **layers,
    )
    left: list[str] = []
    marker = job.get("leftover")
    if marker:
        time.sleep(0.5)  # processes killed at the end of grading take a moment to go
        left = leftovers(marker)
        clean_up(marker)
    return {"report": report.to_dict(), "leftovers": left}


def main() -> None:
    job = json.load(sys.stdin)
    # This process is the namespace's init; the grading runs in a child of it, so that a
    # case's kill(-1) can reach the harness, as it could on a real worker.
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.setsid()  # a worker's harness leads its own process group, as under a service
            result = grade_job(job)
            sys.stdout.write(RESULT_PREFIX + json.dumps(result) + "\n")
            sys.stdout.flush()
            code = 0
        finally:
            os._exit(code)
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
