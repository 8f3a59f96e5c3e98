"""The cross-check's batches traced inside real gradings (grader.harness.grade, the runner in
its own process, sandboxed or not): for each timed batch, an empty round trip just before
it, the batch as the cross-check times it, the same batch again at once, and again after
20 ms of idleness, each per call, with the SM clock read before the batch. Tells a cost
that every batch pays (a round trip, the runner's own work) from one paid after idleness.

    python bench/crosscheck_trace.py rmsnorm triton [--no-sandbox] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import crosscheck
from grader.calibrate import measure_peaks
from grader.harness import grade
from grader.problem import BUILTIN_DIR, load_problem

IDLE_S = 0.02
traced: list[dict[str, Any]] = []
_timed_batch = crosscheck._timed_batch
_cross_check = crosscheck.cross_check
current: dict[str, Any] = {}


def _clock_mhz() -> float | None:
    try:
        return float(torch.cuda.clock_rate())
    except Exception:
        return None


def _traced_batch(session: Any, sets: Any, image: Any, slab_id: int, kind: str) -> Any:
    ping = min(session.request({"op": "ping"}).wall_s for _ in range(3))
    clock = _clock_mhz() if kind == "cuda" else None
    outputs, (wall, cpu) = _timed_batch(session, sets, image, slab_id, kind)
    # The same sets again: the runner writes the same outputs, which are checked afterwards.
    again = session.request({"op": "batch", "slab": slab_id}).wall_s
    time.sleep(IDLE_S)
    idle_clock = _clock_mhz() if kind == "cuda" else None
    after_idle = session.request({"op": "batch", "slab": slab_id}).wall_s
    n = sets.count
    traced.append({
        "case": current.get("case"), "sets": n, "ping_us": ping * 1e6, "clock_mhz": clock,
        "idle_clock_mhz": idle_clock,
        "batch_us": wall / n * 1e6, "again_us": again / n * 1e6,
        "after_idle_us": after_idle / n * 1e6, "cpu_us": cpu / n * 1e6 if cpu else None,
    })  # fmt: skip
    return outputs, (wall, cpu)


def _traced_cross_check(problem: Any, session: Any, setup: Any, *rest: Any, **kw: Any) -> Any:
    current["case"] = setup.case
    return _cross_check(problem, session, setup, *rest, **kw)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("problem")
    parser.add_argument("solutions", nargs="+")
    parser.add_argument("--mode", default="leaderboard")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--no-sandbox", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    crosscheck._timed_batch = _traced_batch
    crosscheck.cross_check = _traced_cross_check
    peaks = measure_peaks(args.device)
    problem = load_problem(args.problem)
    rows = []
    for name in args.solutions:
        code = (BUILTIN_DIR / args.problem / "solutions" / f"{name}.py").read_text()
        traced.clear()
        report = grade(problem, code, mode=args.mode, device=args.device, peaks=peaks,
                       secret_seed=7, isolate=not args.no_sandbox)  # fmt: skip
        where = "unsandboxed" if args.no_sandbox else "sandboxed"
        print(f"{args.problem}/{name} ({where}): {report.status} {report.message[:200]}")
        for case in report.cases:
            if not case.time:
                continue
            own = case.time.get("harness_per_call_s")
            print(f"  {case.params}: median {case.time['median_s'] * 1e6:.1f} µs, "
                  f"cross-check {own * 1e6 if own else 0:.1f} µs a call")  # fmt: skip
            for batch in (b for b in traced if b["case"] == case.params):
                print("    " + "  ".join(
                    f"{k.removesuffix('_us')} {v:.1f}" for k, v in batch.items()
                    if isinstance(v, float)))  # fmt: skip
        rows.append({"solution": name, "sandboxed": not args.no_sandbox,
                     "status": report.status, "batches": list(traced),
                     "cases": [{"params": c.params, "time": c.time}
                               for c in report.cases]})  # fmt: skip
        if traced:
            ratio = statistics.median(b["batch_us"] / b["again_us"] for b in traced)
            print(f"  batch over the same batch again at once: median {ratio:.2f}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    main()
