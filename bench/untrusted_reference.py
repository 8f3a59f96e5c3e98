"""What grading an author's problem costs: the same problem and solution graded with its
reference trusted (in the harness's process) and untrusted (in a sandbox of its own,
grader/untrusted.py), alternating, in each mode asked for; prints and writes each grading's
wall time and the reference's phases ("reference", "inputs" in the report), their medians
and the untrusted grading's median over the trusted one's. Feeds docs/benchmarks.md, "An
author's reference in its own sandbox".

    python -m bench.untrusted_reference [--problem vectoradd] [--solution pytorch]
        [--modes test,leaderboard] [--rounds 5] [--device cpu|cuda] [--out FILE]"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from bench.provenance import provenance
from grader.harness import grade
from grader.problem import BUILTIN_DIR, load_problem

PHASES = ("reference", "inputs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="vectoradd")
    parser.add_argument("--solution", default="pytorch")
    parser.add_argument("--modes", default="test,leaderboard")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    problem = load_problem(args.problem)
    code = (BUILTIN_DIR / args.problem / "solutions" / f"{args.solution}.py").read_text()
    results: dict[str, Any] = {"args": vars(args) | {"out": str(args.out)}, "modes": {}}
    for mode in args.modes.split(","):
        runs: dict[str, list[dict[str, Any]]] = {"trusted": [], "untrusted": []}
        for _ in range(args.rounds):
            for kind in runs:
                started = time.monotonic()
                report = grade(
                    problem, code, mode=mode, device=args.device,
                    untrusted_reference=kind == "untrusted",
                )  # fmt: skip
                runs[kind].append({
                    "status": report.status.value,
                    "wall_s": time.monotonic() - started,
                    **{phase: report.phases.get(phase, 0.0) for phase in PHASES},
                })  # fmt: skip
        medians = {
            kind: {key: statistics.median(run[key] for run in done) for key in ("wall_s", *PHASES)}
            for kind, done in runs.items()
        }
        results["modes"][mode] = {
            "runs": runs,
            "medians": medians,
            "untrusted_over_trusted": medians["untrusted"]["wall_s"] / medians["trusted"]["wall_s"],
            "statuses": sorted({run["status"] for done in runs.values() for run in done}),
        }
        print(
            f"{mode}: trusted {medians['trusted']}, untrusted {medians['untrusted']}, "
            f"ratio {results['modes'][mode]['untrusted_over_trusted']:.2f}",
            flush=True,
        )
    results["provenance"] = provenance()
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
