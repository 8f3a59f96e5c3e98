"""How close can a clock the submission's process cannot touch come to a kernel's device
time? Measures, per benchmark case of a built-in problem's solution, on one GPU:

- `runner`: the runner's own median (grader.timing: L2 flushed, events around each call);
- `host`: a batch of back-to-back calls on fresh sets, timed on the harness's host clock
  from before its input copy to the runner's reply (what grader/clock.py does), less the
  copy at the bandwidth measured and the fastest empty exchange;
- `gated`: the same batch timed by events in the harness's own CUDA context: the runner
  queues its calls behind a wait on a flag in shared device memory, the harness's stream
  records an event, copies the inputs in, raises the flag, waits for the runner's stream to
  raise another after its last call, and records a second event; the copy and an empty
  gated batch are subtracted. No host round trip, no wake-up of the runner, no Python of
  the harness's lies in that span;
- `gated+arena`: the same, the calls allocating from a memory pool whose memory is a slab
  the harness maps too, so that an output returned as a new tensor is read where it lies
  instead of being copied into a result slot inside the span.

A probe, not the grader: two plain processes (no sandbox), the solution imported by the
runner, outputs checked against the reference on a few sets per batch. Usage on a GPU host:
`python3 -m bench.gated_clock_probe [--problems vectoradd rmsnorm matmul] [--batches 5]`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
import yaml

from grader import shared
from grader.gate import DONE, GO, Arena, StreamOps, copies_alone_s
from grader.protocol import recv_fd, recv_message, send_fd, send_message
from grader.staging import Layout, Sets
from grader.timing import Timer

ROOT = Path(__file__).resolve().parent.parent

BATCH_S = 0.05
MAX_CALLS = 2000
MAX_BYTES = 8 << 30
L2_TIMES = 4
GATE_BYTES = 2 << 20
ARENA_SPARE = 1 << 30
OUT = ""
CAL_BYTES = 64 << 20
WRITTEN = {"vectoradd": {"data[2]"}, "rmsnorm": {"data[2]"}}


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _problem_path(problem: str) -> None:
    for p in (ROOT / "problems" / problem, ROOT / "problems"):
        sys.path.insert(0, str(p))


# -- the runner ---------------------------------------------------------------------------


def runner_main(fd: int, problem: str, solution: str) -> None:
    os.environ["KJ_DEVICE"] = "cuda"
    _problem_path(problem)
    sock = socket.socket(fileno=fd)
    torch.cuda.init()
    reference = _load(ROOT / "problems" / problem / "reference.py", "reference")
    kernel = _load(
        ROOT / "problems" / problem / "solutions" / f"{solution}.py", "sub"
    ).custom_kernel
    ops = StreamOps()
    timer = Timer("cuda")
    slabs: dict[int, shared.Slab] = {}
    sets: dict[int, Sets] = {}
    arena: Arena | None = None
    gate = 0
    held: list[torch.Tensor] = []
    arenas: list[Arena] = []
    cal: tuple[torch.Tensor, torch.Tensor] | None = None
    send_message(sock.fileno(), {"ok": True})
    while True:
        request = recv_message(sock.fileno())
        op = request["op"]
        reply: dict[str, Any] = {"ok": True}
        if op == "exit":
            sock.close()
            os._exit(0)  # torch frees the pools' blocks at exit, past the callbacks' life
        if op == "attach":
            slab = shared.attach(recv_fd(sock), request["nbytes"], "cuda")
            slabs[request["slab"]] = slab
            if request.get("role") == "gate":
                gate = slab.raw.data_ptr()
            elif request.get("role") == "arena":
                arena = Arena(slab)
                arenas.append(arena)  # its callbacks live as long as torch may call them
        elif op == "layout":
            s = Sets(
                slabs[request["slab"]], Layout.from_message(request["layout"]), request["sets"]
            )
            for i in range(s.count):
                s.data(i)
            sets[request["slab"]] = s
        elif op == "drop":
            sets.pop(request["slab"], None)
            slabs.pop(request["slab"]).close()
        elif op == "time":
            data = reference.generate_input(**request["case"])
            samples, _ = timer.time_case(kernel, data, budget_s=3.0, max_samples=200)
            reply["median_s"] = statistics.median(samples.seconds)
        elif op == "batch":  # host-timed, as grader/clock.py
            s = sets[request["slab"]]
            reply["outputs"] = [s.deposit(i, kernel(s.data(i))) for i in range(s.count)]
            torch.cuda.synchronize()
        elif op == "gated":
            held.clear()  # the last batch's outputs, read by the harness since
            s = sets.get(request["slab"])  # type: ignore[assignment]
            seq, count, use_arena = request["seq"], request["count"], bool(request["arena"])
            stream = torch.cuda.current_stream().cuda_stream
            outputs: list[Any] = []
            pool = torch.cuda.use_mem_pool(arena.pool) if use_arena and arena else nullcontext()
            with pool:
                ops.wait(stream, gate + GO, seq)
                for i in range(count):
                    out = kernel(s.data(i))
                    offset = (
                        arena.offset(out)
                        if use_arena and arena and isinstance(out, torch.Tensor)
                        else None
                    )
                    if offset is None:
                        outputs.append(s.deposit(i, out))
                    else:
                        held.append(out)
                        outputs.append(["arena", offset])
                ops.write(stream, gate + DONE, seq)
            torch.cuda.synchronize()
            reply["outputs"] = outputs
        elif op == "windows":
            held.clear()
            s = sets.get(request["slab"])  # type: ignore[assignment]
            seq0, count, use_arena = request["seq"], request["count"], bool(request["arena"])
            empty = bool(request.get("empty"))
            trusted = bool(request.get("calibrate"))
            stream = torch.cuda.current_stream().cuda_stream
            if request.get("spin_s"):
                side = torch.cuda.Stream()
                with torch.cuda.stream(side):
                    torch.cuda._sleep(int(request["spin_s"] * 1.98e9))
            if trusted and cal is None:
                cal = (torch.ones(CAL_BYTES, dtype=torch.uint8, device="cuda"),
                       torch.empty(CAL_BYTES, dtype=torch.uint8, device="cuda"))  # fmt: skip
            outputs = []
            pool = torch.cuda.use_mem_pool(arena.pool) if use_arena and arena else nullcontext()
            with pool:
                for i in range(count):
                    ops.wait(stream, gate + GO, seq0 + i)
                    if trusted and cal is not None:
                        cal[1].copy_(cal[0])
                    elif not empty:
                        out = kernel(s.data(i))
                        offset = arena.offset(out) if use_arena and arena else None
                        if offset is None:
                            outputs.append(s.deposit(i, out))
                        else:
                            held.append(out)
                            outputs.append(["arena", offset])
                    ops.write(stream, gate + DONE, seq0 + i)
            torch.cuda.synchronize()
            reply["outputs"] = outputs
        send_message(sock.fileno(), reply)


# -- the harness --------------------------------------------------------------------------


class Channel:
    def __init__(self, problem: str, solution: str) -> None:
        self.sock, theirs = socket.socketpair()
        import subprocess

        runner = ["-m", "bench.gated_clock_probe", "--runner", str(theirs.fileno())]
        self.child = subprocess.Popen(
            [sys.executable, *runner, problem, solution],
            pass_fds=(theirs.fileno(),),
            cwd=ROOT,
        )
        theirs.close()
        self.ids = 0
        self.recv()

    def send(self, message: dict[str, Any]) -> None:
        send_message(self.sock.fileno(), message)

    def recv(self) -> dict[str, Any]:
        reply = recv_message(self.sock.fileno(), deadline=time.monotonic() + 120)
        assert isinstance(reply, dict) and reply.get("ok"), reply
        return reply

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        return self.recv()

    def attach(self, slab: shared.Slab, role: str = "sets") -> int:
        self.ids += 1
        self.send({"op": "attach", "slab": self.ids, "nbytes": slab.nbytes, "role": role})
        send_fd(self.sock, slab.fd)
        self.recv()
        return self.ids

    def close(self) -> None:
        self.send({"op": "exit"})
        self.child.wait(30)


def _private(nbytes: int) -> shared.Slab:
    return shared.Slab("cuda", nbytes, -1, torch.empty(nbytes, dtype=torch.uint8, device="cuda"))


def _spread(values: list[float]) -> dict[str, float]:
    mean = statistics.fmean(values)
    cv = statistics.pstdev(values) / mean if mean > 0 and len(values) > 1 else 0.0
    return {"min_us": min(values) * 1e6, "median_us": statistics.median(values) * 1e6, "cv": cv}


def _copy_bandwidth() -> float:
    a = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    best = float("inf")
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        b.copy_(a)
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return 2 * a.numel() / best  # bytes moved (read + write) per second


def probe(problem: str, solution: str, batches: int, modes: list[str]) -> list[dict[str, Any]]:
    os.environ["KJ_DEVICE"] = "cuda"
    _problem_path(problem)
    for name in ("task", "utils", "reference"):
        sys.modules.pop(name, None)
    reference = _load(ROOT / "problems" / problem / "reference.py", "reference")
    spec = yaml.safe_load((ROOT / "problems" / problem / "task.yml").read_text())
    tol = spec.get("tolerance") or {"rtol": 2e-2, "atol": 2e-2}
    ops = StreamOps()
    hs = torch.cuda.Stream()
    rescue = torch.cuda.Stream()
    bandwidth = _copy_bandwidth()
    channel = Channel(problem, solution)
    gate = shared.create(GATE_BYTES, "cuda")
    gate.raw.zero_()
    torch.cuda.synchronize()
    channel.attach(gate, "gate")
    gate_ptr = gate.raw.data_ptr()
    l2 = int(torch.cuda.get_device_properties(0).L2_cache_size)
    seq = 0
    pings = []
    for _ in range(20):
        started = time.perf_counter()
        channel.ask({"op": "ping"})
        pings.append(time.perf_counter() - started)
    round_trip = min(pings)

    def landed_reply() -> dict[str, Any]:
        """The runner's reply, the harness's stream synchronized after it; if none comes, the
        gate is opened from a rescue stream first so that the harness's stream is not left
        waiting on it."""
        try:
            reply: dict[str, Any] = channel.recv()
        except BaseException:
            with torch.cuda.stream(rescue):
                ops.write(rescue.cuda_stream, gate_ptr + DONE, seq)
            raise
        hs.synchronize()
        return reply

    def gated(slab_id: int, slab: shared.Slab | None, image: shared.Slab | None, read: int,
              count: int, arena: bool) -> tuple[dict[str, Any], float, float]:  # fmt: skip
        nonlocal seq
        seq += 1
        channel.send({"op": "gated", "slab": slab_id, "seq": seq, "count": count, "arena": arena})
        events = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        with torch.cuda.stream(hs):
            events[0].record()
            if slab is not None and image is not None and read:
                slab.raw[:read].copy_(image.raw[:read])
            events[1].record()
            ops.write(hs.cuda_stream, gate_ptr + GO, seq)
            ops.wait(hs.cuda_stream, gate_ptr + DONE, seq)
            events[2].record()
        reply = landed_reply()
        return (
            reply,
            events[0].elapsed_time(events[1]) / 1e3,
            events[1].elapsed_time(events[2]) / 1e3,
        )

    flush = torch.ones(2 * l2, dtype=torch.int8, device="cuda")

    def windowed(slab_id: int, slab: shared.Slab | None, image: shared.Slab | None,
                 layout: Layout | None, count: int, **extra: Any,
                 ) -> tuple[dict[str, Any], list[float], list[float]]:  # fmt: skip
        """Per call: the set's inputs copied in, L2 flushed, then the call between two
        events of the harness's stream. Returns the reply, the windows, and the harness's
        own time between windows (copy and flush)."""
        nonlocal seq
        seq0 = seq + 1
        seq += count
        channel.send({"op": "windows", "slab": slab_id, "seq": seq0, "count": count,
                      "arena": True, **extra})  # fmt: skip
        marks = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(count)]
        rb = layout.read_bytes if layout is not None else 0
        with torch.cuda.stream(hs):
            for i, (before, begin, end) in enumerate(marks):
                before.record()
                if slab is not None and image is not None and rb:
                    slab.raw[i * rb : (i + 1) * rb].copy_(image.raw[i * rb : (i + 1) * rb])
                torch.amax(flush)
                begin.record()
                ops.write(hs.cuda_stream, gate_ptr + GO, seq0 + i)
                ops.wait(hs.cuda_stream, gate_ptr + DONE, seq0 + i)
                end.record()
        reply = landed_reply()
        windows = [b.elapsed_time(e) / 1e3 for _, b, e in marks]
        between = [a.elapsed_time(b) / 1e3 for a, b, _ in marks]
        return reply, windows, between

    # The window's own cost: a trusted 64 MiB copy in the runner's windows, against the
    # same copy timed in the harness's own context after the same flush.
    src = torch.ones(CAL_BYTES, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    alone = copies_alone_s(dst, src, flush, 30)
    cal_windows: list[float] = []
    for _ in range(3):
        _, w, _ = windowed(0, None, None, None, 40, calibrate=True)
        cal_windows += w[5:]
    window_cost = statistics.fmean(cal_windows) - statistics.median(alone)
    calibration = {
        "copy_alone_us": statistics.median(alone) * 1e6,
        "copy_in_window_us": statistics.fmean(cal_windows) * 1e6,
        "window_cost_us": window_cost * 1e6,
        "window_sd_us": statistics.pstdev(cal_windows) * 1e6,
    }
    print(json.dumps({"calibration": calibration}), flush=True)
    _, empty_windows, _ = windowed(0, None, None, None, 200, empty=True)
    empty_windows = empty_windows[10:]
    empty_mean = statistics.fmean(empty_windows)
    empties = []
    for _ in range(10):
        _, _, work = gated(0, None, None, 0, 0, False)
        empties.append(work)
    empty = min(empties)
    rows: list[dict[str, Any]] = []
    written = WRITTEN.get(problem, set())
    for case in spec["benchmarks"]:
        runner_s = channel.ask({"op": "time", "case": case})["median_s"]
        data0 = reference.generate_input(**case)
        expected = reference.ref_kernel(tuple(t.clone() for t in data0))
        layout = Layout.of(data0, expected, written)
        del data0, expected
        per_set = layout.set_bytes
        count = max(1, min(MAX_CALLS, int(BATCH_S / max(runner_s, 1e-7))))
        count = max(count, min(MAX_CALLS, -(-L2_TIMES * l2 // per_set)))
        count = max(1, min(count, MAX_BYTES // per_set))
        slab = shared.create(count * per_set, "cuda")
        slab_id = channel.attach(slab)
        channel.ask({"op": "layout", "slab": slab_id, "sets": count, "layout": layout.to_message()})
        out_bytes = sum(shared.aligned(p.nbytes) for p in layout.results)
        arena_slab = shared.create(count * out_bytes + ARENA_SPARE, "cuda")
        channel.attach(arena_slab, "arena")
        image = _private(count * per_set)
        sets, pristine = Sets(slab, layout, count), Sets(image, layout, count)
        read = layout.read_part(count)[1]
        row: dict[str, Any] = {
            "problem": problem, "solution": solution, "case": case, "calls": count,
            "runner_us": runner_s * 1e6, "empty_gate_us": empty * 1e6,
            "round_trip_us": round_trip * 1e6, "calibration": calibration,
            "copy_bandwidth_gbs": bandwidth / 1e9,
            "empty_window": {"mean_us": empty_mean * 1e6, "min_us": min(empty_windows) * 1e6,
                             "max_us": max(empty_windows) * 1e6,
                             "sd_us": statistics.pstdev(empty_windows) * 1e6},
        }  # fmt: skip
        made = 0
        for mode in modes:
            per_call: list[float] = []
            from_e0: list[float] = []
            copies: list[float] = []
            for b in range(batches + 1):
                for i in range(count):
                    made += 1
                    data = reference.generate_input(**{**case, "seed": 1_000_000 + made})
                    pristine.write(i, data, written)
                rest = slice(read, count * per_set)
                slab.raw[rest].copy_(image.raw[rest])
                torch.cuda.synchronize()
                if mode.startswith("windows"):
                    spin = {"spin_s": 0.05 + 0.002 * count} if mode == "windows+spin" else {}
                    reply, windows, between = windowed(slab_id, slab, image, layout, count, **spin)
                    value = statistics.fmean(windows) - window_cost
                    e0_value = statistics.median(windows) - window_cost
                    copies.append(max(between))
                elif mode == "host":
                    started = time.perf_counter()
                    slab.raw[:read].copy_(image.raw[:read])
                    torch.cuda.synchronize()
                    copied = time.perf_counter() - started
                    reply = channel.ask({"op": "batch", "slab": slab_id})
                    span = time.perf_counter() - started
                    copy_s = min(2 * read / bandwidth, copied)
                    value = (span - round_trip - copy_s) / count
                    e0_value = value
                else:
                    reply, copy_s, work_s = gated(
                        slab_id, slab, image, read, count, mode == "gated+arena"
                    )
                    value = (work_s - empty) / count
                    e0_value = (copy_s + work_s - empty - 2 * read / bandwidth) / count
                    copies.append(copy_s)
                wrong = _check(
                    reference, tol, sets, pristine, arena_slab, layout, reply["outputs"], count
                )
                if b == 0:
                    continue  # a new slab's first batch
                per_call.append(value)
                from_e0.append(e0_value)
                row.setdefault(f"{mode}_wrong", 0)
                row[f"{mode}_wrong"] += wrong
            row[mode] = _spread(per_call)
            row[f"{mode}_ratio"] = statistics.median(per_call) / runner_s
            if mode.startswith("windows"):
                row[f"{mode}_median"] = _spread(from_e0)
                row[f"{mode}_between_max_us"] = max(copies) * 1e6
            elif mode != "host":
                row[f"{mode}_from_start"] = _spread(from_e0)
                row[f"{mode}_copy_us"] = statistics.median(copies) * 1e6
                row[f"{mode}_copy_model_us"] = 2 * read / bandwidth * 1e6
        print(json.dumps(row), flush=True)
        rows.append(row)
        if OUT:
            Path(OUT).write_text(json.dumps(rows, indent=1))
        del sets, pristine, image
        channel.ask({"op": "drop", "slab": slab_id})
        slab.close()
    channel.close()
    return rows


def _check(reference: Any, tol: dict[str, float], sets: Sets, pristine: Sets,
           arena: shared.Slab, layout: Layout, outputs: list[Any], count: int) -> int:  # fmt: skip
    """Wrong outputs among the last and three others."""
    import random

    wrong = 0
    for index in {count - 1, *random.sample(range(count), min(3, count))}:
        described = outputs[index]
        if isinstance(described, list) and described and described[0] == "arena":
            p = layout.results[0]
            from grader.protocol import DTYPES

            got = arena.view(described[1], DTYPES[p.dtype], p.shape).clone()
        else:
            got = sets.output(index, described)
        data = tuple(t.clone() for t in pristine.data(index))
        want = reference.ref_kernel(data)
        ok = isinstance(got, torch.Tensor) and torch.allclose(
            got.float(),
            want.float(),
            rtol=float(tol.get("rtol", 2e-2)),
            atol=float(tol.get("atol", 2e-2)),
        )
        wrong += 0 if ok else 1
    return wrong


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--runner":
        runner_main(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--problems",
        nargs="*",
        default=["vectoradd:pytorch", "rmsnorm:pytorch", "rmsnorm:triton", "matmul:pytorch"],
    )
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--modes", nargs="*", default=["gated+arena", "windows", "windows+spin"])
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    global OUT
    rows = []
    for item in args.problems:
        problem, _, solution = item.partition(":")
        OUT = f"{args.out}.{problem}.{solution}" if args.out else ""
        rows += probe(problem, solution or "pytorch", args.batches, args.modes)


if __name__ == "__main__":
    main()
