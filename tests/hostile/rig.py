"""The test rig's harness processes: each grades one hostile case and checks what it left.

`test_corpus.py` starts this once per test module under `unshare --pid --fork --mount-proc`,
so a case that kills every process it can (`kill(-1)`, its parent's group) reaches only its
own grading, never the test session or the machine. This process is the namespace's init:
it imports the grader once, then forks a fresh harness process for every job (as a worker
forks a pool process per grading), and after each job kills whatever else is left in the
namespace. The rig stands in for a worker: its environment and HOME hold the canaries, and
the harness calls `grader.harness.grade()` exactly as a worker does. The namespace is the
rig's safety net, not a grader defence: every check is on the report.

Input: one job as JSON per line on stdin (with `sequence`, several codes graded in turn by one
harness process). Output: one line `RIG-RESULT <json>` per job.
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
import signal
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
    layers: dict[str, Any] = (
        {"screen": False} if "screen" in inspect.signature(grade).parameters else {}
    )
    if job.get("nonce") is not None:
        # Only to show what a repeated ranked input would allow; a worker never passes one.
        layers["nonce"] = int(job["nonce"])
    # A sequence is graded one after another in this one harness process, with the runners
    # kept started for the next grading, as a worker's pool process grades a batch's items.
    codes = job.get("sequence") or [job["code"]]
    if job.get("sequence"):
        from grader.session import Standby

        layers["standby"] = Standby()
    try:
        reports = [
            grade(
                problem,
                code,
                mode=job["mode"],
                device=job["device"],
                secret_seed=int(os.environ["KJ_SECRET_SEED"]),
                timeout_s=float(job["timeout_s"]),
                peaks=peaks,
                **layers,
            ).to_dict()
            for code in codes
        ]
    finally:
        if "standby" in layers:
            layers["standby"].close()
    left: list[str] = []
    marker = job.get("leftover")
    if marker:
        time.sleep(0.5)  # processes killed at the end of grading take a moment to go
        left = leftovers(marker)
        clean_up(marker)
    return {"report": reports[-1], "reports": reports, "leftovers": left}


def _result_line(result: dict[str, Any]) -> None:
    os.write(1, (RESULT_PREFIX + json.dumps(result) + "\n").encode())


def _run_job(job: dict[str, Any]) -> None:
    """Grade `job` in a fresh child (the harness); answer for it even if it dies."""
    child = os.fork()
    if child == 0:
        code = 1
        try:
            os.setsid()  # a worker's harness leads its own process group, as under a service
            _result_line({"id": job["id"], **grade_job(job)})
            code = 0
        finally:
            os._exit(code)
    status = 0
    while True:
        try:
            pid, status = os.waitpid(-1, 0)  # orphans of the namespace come to its init too
        except ChildProcessError:
            break
        if pid == child:
            break
    if os.waitstatus_to_exitcode(status) != 0:
        _result_line(
            {
                "id": job["id"],
                "rig_failure": f"the harness process died (status {status}) without a report",
            }
        )
    # Whatever the case left in this namespace goes before the next one; the init itself
    # is not signalled by kill(-1).
    with contextlib.suppress(ProcessLookupError):
        os.kill(-1, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def main() -> None:
    import grader.harness  # noqa: F401  (imported once, before the fork of every harness)

    for line in sys.stdin:
        if line.strip():
            _run_job(json.loads(line))


if __name__ == "__main__":
    main()
