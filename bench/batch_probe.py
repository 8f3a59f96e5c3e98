"""Where the cross-check's per-call time goes, piece by piece, in this process (no sandbox,
built-in solutions only): for each of a problem's ranked cases, the timer's median on one
set (as the runner times it), then batches of back-to-back calls on as many fresh sets as
the cross-check takes, timed on the wall clock with the device synchronised around them:

- `plain`: the sets in ordinary tensors, the kernel alone;
- `slab`: the sets in a shared slab (grader/shared.py, as the runner sees them), the kernel
  alone;
- `slab+deposit`: the same, each output left in its set as the runner's batch does;
- `events`: each call's device time inside the `slab` batch (CUDA events, no L2 flush);
- `launch`: each call's host time inside it (the call returning, not its kernels ending);
- `copy`: the batch's inputs copied into the slab, against the time the cross-check
  subtracts for it (its bytes at the measured copy bandwidth).

    python bench/batch_probe.py rmsnorm pytorch triton [--device cuda] [--out FILE]
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import crosscheck, shared
from grader.calibrate import measure_peaks
from grader.devicemap import harness_device_map
from grader.expected import ProblemSide
from grader.inputs import clone_data
from grader.problem import BUILTIN_DIR, load_problem
from grader.report import PhaseClock
from grader.runner import plain_output
from grader.staging import Layout, Sets
from grader.timing import Timer

REPEATS = 3


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _wall(device: str, work: Callable[[], None]) -> float:
    """The fastest of REPEATS runs of `work`, synchronised on both sides."""
    best = float("inf")
    for _ in range(REPEATS):
        _sync(device)
        started = time.perf_counter()
        work()
        _sync(device)
        best = min(best, time.perf_counter() - started)
    return best


def _events_and_launch(
    device: str, kernel: Callable[[Any], Any], datas: list[Any]
) -> tuple[float | None, float]:
    """Median device time and median host time of the calls of one back-to-back batch."""
    _sync(device)
    host: list[float] = []
    marks: list[tuple[Any, Any]] = []
    for data in datas:
        begin = torch.cuda.Event(enable_timing=True) if device == "cuda" else None
        end = torch.cuda.Event(enable_timing=True) if device == "cuda" else None
        if begin is not None:
            begin.record()
        started = time.perf_counter()
        kernel(data)
        host.append(time.perf_counter() - started)
        if end is not None:
            end.record()
            marks.append((begin, end))
    _sync(device)
    events = [b.elapsed_time(e) / 1e3 for b, e in marks]
    return (statistics.median(events) if events else None), statistics.median(host)


def probe_case(
    side: ProblemSide, kernel: Callable[[Any], Any], case: dict[str, Any], device: str,
    copy_bytes_per_s: float,
) -> dict[str, Any]:  # fmt: skip
    setup = side.prepare(case)
    timer = Timer(device)
    samples, _ = timer.time_case(kernel, setup.data, budget_s=2.0, max_samples=60)
    median = statistics.median(samples.seconds)
    layout = Layout.of(setup.data, setup.expected, setup.written)
    count = crosscheck.batch_size(device, median, layout.set_bytes)
    datas = [side.generate(case, crosscheck.FIRST_REPEAT + i) for i in range(count)]
    plain = [clone_data(d) for d in datas]
    slab = shared.create(count * layout.set_bytes, device)
    image = shared.Slab(device, slab.nbytes, -1, torch.empty_like(slab.raw))
    try:
        sets, pristine = Sets(slab, layout, count), Sets(image, layout, count)
        for i, data in enumerate(datas):
            pristine.write(i, data, setup.written)
        start, length = layout.read_part(count)
        end = count * layout.set_bytes
        slab.raw[start:end].copy_(image.raw[start:end])
        views = [sets.data(i) for i in range(count)]

        def plain_batch() -> None:
            for data in plain:
                kernel(data)

        def slab_batch() -> None:
            for data in views:
                kernel(data)

        def deposit_batch() -> None:
            for i in range(count):
                sets.deposit(i, plain_output(kernel(sets.data(i))))

        def copy_in() -> None:
            slab.raw[start : start + length].copy_(image.raw[start : start + length])

        for work in (plain_batch, slab_batch, deposit_batch):
            work()  # the first batch of each kind pays for what is made once
        events_s, launch_s = _events_and_launch(device, kernel, views)
        row = {
            "case": case,
            "sets": count,
            "set_mb": layout.set_bytes / 1e6,
            "median_us": median * 1e6,
            "samples": len(samples.seconds),
            "plain_us": _wall(device, plain_batch) / count * 1e6,
            "slab_us": _wall(device, slab_batch) / count * 1e6,
            "slab_deposit_us": _wall(device, deposit_batch) / count * 1e6,
            "events_us": events_s * 1e6 if events_s is not None else None,
            "launch_us": launch_s * 1e6,
            "copy_us": _wall(device, copy_in) / count * 1e6,
            "copy_subtracted_us": 2 * length / copy_bytes_per_s / count * 1e6,
        }
    finally:
        slab.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("solutions", nargs="+")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    device = args.device
    peaks = measure_peaks(device)
    problem = load_problem(args.problem)
    results: list[dict[str, Any]] = []
    with harness_device_map(device), tempfile.TemporaryDirectory(prefix="kj-probe-") as root:
        folder = Path(root)
        for name, text in problem.files.items():
            (folder / name).write_text(text)
        sys.path.insert(0, str(folder))
        side = ProblemSide(problem, device, 12345, PhaseClock({}))
        side.load(folder)
        for solution in args.solutions:
            source = BUILTIN_DIR / args.problem / "solutions" / f"{solution}.py"
            (folder / f"kj_probe_{solution}.py").write_text(source.read_text())
            kernel = importlib.import_module(f"kj_probe_{solution}").custom_kernel
            for case in problem.benchmarks_for(device):
                row = {"solution": solution, **probe_case(side, kernel, case, device,
                                                          peaks.copy_bytes_per_s)}  # fmt: skip
                results.append(row)
                shown = "  ".join(
                    f"{k.removesuffix('_us')} {v:.1f}" for k, v in row.items()
                    if k.endswith("_us") and v is not None
                )  # fmt: skip
                print(f"{solution} {case} sets={row['sets']}: {shown}  (µs a call)", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
