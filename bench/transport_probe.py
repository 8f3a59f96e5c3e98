"""What the device-resident transport rests on, measured on a GPU host before the grader
relies on it: a slab of device memory (grader/shared.py) made by this process and mapped by
a sandboxed child through a file descriptor passed over a Unix socket; how long a sandboxed
runner takes to import torch and to make its CUDA context; whether another process making
its context disturbs the timing of a kernel here; and, for the record, the phases of one
test-mode and one leaderboard-mode grading through the pipe transport.

    python -m bench.transport_probe [--out probe.json] [--skip-grading]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

import sandbox
from grader import shared
from grader.confine import runner_env, runner_isolation
from grader.hygiene import gpu_state, unclean

CHILD = r"""
import json, os, socket, sys, time
t0 = time.monotonic()
import torch
t1 = time.monotonic()
try:
    import triton
except ImportError:
    triton = None
t2 = time.monotonic()
sock = socket.socket(fileno=int(sys.argv[1]))
def say(**kw):
    sock.sendall((json.dumps(kw) + "\n").encode())
say(stage="imported", torch_s=t1 - t0, triton_s=t2 - t1)
assert sock.recv(1) == b"g"
t3 = time.monotonic()
torch.cuda.init()
torch.cuda.synchronize()
t4 = time.monotonic()
say(stage="cuda", cuda_init_s=t4 - t3)
if len(sys.argv) > 2 and sys.argv[2] == "init-only":
    sock.recv(1)
    raise SystemExit(0)
message, fds, _, _ = socket.recv_fds(sock, 64, 1)
nbytes = int(message.decode())
from grader import shared
t5 = time.monotonic()
slab = shared.attach(fds[0], nbytes, "cuda")
t6 = time.monotonic()
values = slab.view(0, torch.float32, [slab.nbytes // 4])
total = float(values.sum())
values.mul_(2.0)
half = slab.nbytes // 2
a = slab.view(0, torch.uint8, [half])
b = slab.view(half, torch.uint8, [half])
for _ in range(3):
    b.copy_(a)
torch.cuda.synchronize()
start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(10):
    b.copy_(a)
end.record(); torch.cuda.synchronize()
copy_s = start.elapsed_time(end) / 1e3 / 10
values.fill_(2.0)
torch.cuda.synchronize()
say(stage="attached", attach_s=t6 - t5, sum=total, copy_bytes_per_s=2 * half / copy_s)
sock.recv(1)
"""


def read_line(sock: socket.socket, deadline: float) -> dict[str, Any]:
    buffer = b""
    while not buffer.endswith(b"\n"):
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(4096)
        if not chunk:
            raise RuntimeError(f"the child closed its socket (read so far: {buffer!r})")
        buffer += chunk
    return dict(json.loads(buffer))


class Child:
    """A sandboxed Python as a runner would start, with one end of a socket pair."""

    def __init__(self, root: Path, *args: str) -> None:
        work = root / "run"
        work.mkdir(parents=True)
        (work / "home").mkdir()
        (work / "tmp").mkdir()
        (work / "child.py").write_text(CHILD)
        self.sock, theirs = socket.socketpair()
        self.started = time.monotonic()
        self.process = sandbox.start(
            [sys.executable, "/kj/run/child.py", str(theirs.fileno()), *args],
            cwd=work,
            env=runner_env(work, work, "cuda", isolated=True),
            pass_fds=(theirs.fileno(),),
            isolation=runner_isolation(work, "cuda"),
        )
        theirs.close()

    def line(self, timeout_s: float = 120.0) -> dict[str, Any]:
        return read_line(self.sock, time.monotonic() + timeout_s)

    def finish(self) -> sandbox.ProcessResult:
        with contextlib.suppress(OSError):
            self.sock.sendall(b"x")
        self.process.wait(10)
        self.sock.close()
        return self.process.result()


def slab_across_sandbox(out: dict[str, Any]) -> None:
    out["unsupported"] = shared.unsupported("cuda")
    nbytes = 256 << 20
    made = time.monotonic()
    slab = shared.create(nbytes, "cuda")
    out["create_s"] = time.monotonic() - made
    slab.view(0, torch.float32, [slab.nbytes // 4]).fill_(1.0)
    torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as root:
        child = Child(Path(root))
        out["imported"] = child.line()
        out["imported"]["since_start_s"] = time.monotonic() - child.started
        child.sock.sendall(b"g")
        out["cuda"] = child.line()
        out["cuda"]["since_start_s"] = time.monotonic() - child.started
        socket.send_fds(child.sock, [str(slab.nbytes).encode()], [slab.fd])
        out["attached"] = child.line()
        out["expected_sum"] = float(slab.nbytes // 4)
        seen = slab.view(0, torch.float32, [slab.nbytes // 4])
        out["child_writes_seen"] = bool(torch.all(seen == 2.0).item())
        # GPU hygiene must tell a sandboxed runner's processes, as its cgroup lists them,
        # from a leftover: nvidia-smi must name them by the same pids.
        state = gpu_state()
        out["gpu_state_with_child"] = str(state)
        out["child_pids"] = sorted(child.process.pids())
        out["own_pids"] = [os.getpid()]
        if state is not None:
            own = frozenset({os.getpid(), *child.process.pids()})
            out["unclean_with_child_counted_out"] = unclean((0,), state, own)
        result = child.finish()
        out["child_exit"] = result.returncode
        out["child_stderr"] = result.stderr[-2000:]
    slab.close()


def add_samples(count: int, size: int) -> list[float]:
    """Event-timed fp16 adds with an L2 flush and a launch lead, as grader/timing.py does."""
    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    out = torch.empty_like(a)
    flush = torch.ones(256 << 20, dtype=torch.int8, device="cuda")
    samples = []
    for _ in range(count):
        torch.cuda.synchronize()
        torch.amax(flush)
        torch.cuda._sleep(200_000)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.add(a, b, out=out)
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / 1e3)
        time.sleep(0.002)
    return samples


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": statistics.median(ordered) * 1e6,
        "p90_us": ordered[int(0.9 * (len(ordered) - 1))] * 1e6,
        "max_us": ordered[-1] * 1e6,
        "count": len(ordered),
    }


def disturbance(out: dict[str, Any]) -> None:
    """Medians with no other process, and while two sandboxed processes make contexts."""
    for size in (1024, 8192):
        add_samples(50, size)
        quiet = add_samples(400, size)
        with tempfile.TemporaryDirectory() as root:
            children = [Child(Path(root) / str(i), "init-only") for i in range(2)]
            for child in children:
                child.line()
            for child in children:
                child.sock.sendall(b"g")
            busy = add_samples(400, size)
            for child in children:
                child.line()
                child.finish()
        out[str(size)] = {"quiet": summary(quiet), "while_contexts_made": summary(busy)}


def gradings(out: dict[str, Any]) -> None:
    from grader.harness import grade
    from grader.problem import load_problem

    root = Path(__file__).resolve().parents[1]
    problem = load_problem(root / "problems" / "vectoradd")
    code = (root / "problems" / "vectoradd" / "solutions" / "pytorch.py").read_text()
    for mode in ("test", "leaderboard"):
        report = grade(problem, code, mode=mode, device="cuda")
        out[mode] = {
            "status": report.status,
            "wall_s": report.wall_s,
            "phases": report.phases,
            "cases": [
                {"params": c.params, "samples": (c.time or {}).get("samples"),
                 "median_us": (c.time or {}).get("median_s", 0) * 1e6}
                for c in report.cases
            ],
        }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--skip-grading", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {"device": torch.cuda.get_device_name()}
    for name, step in (("slab", slab_across_sandbox), ("disturbance", disturbance)):
        results[name] = {}
        try:
            step(results[name])
        except Exception as exc:
            results[name]["error"] = f"{type(exc).__name__}: {exc}"
        print(name, json.dumps(results[name], indent=1), flush=True)
    if not args.skip_grading:
        results["grading"] = {}
        try:
            gradings(results["grading"])
        except Exception as exc:
            results["grading"]["error"] = f"{type(exc).__name__}: {exc}"
        print("grading", json.dumps(results["grading"], indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
