"""GPU MODE's `amd_distributed` problems (all2all, ag-gemm, gemm-rs) through the validation an
upload gets (`grader.validate.validate`), on this host's device, as a worker host offering
world sizes up to `--world-size` grades them (`KJ_WORLD_SIZES`: their task.yml asks for 8
ranks, each case then runs on `--world-size`; their files stay as published). One JSON line
per problem: the verdict, the cases validated, the time and, where it failed, why; `--out`
gets the lines and where they came from.

    python -m bench.amd_distributed --root .ext/amd_distributed --world-size 2 --out FILE.json
                                    [--device cpu|cuda] [--commit SHA] [--only NAME ...]

ROOT is their `problems/amd_distributed` folder (`bench/outside/README.md`); `--commit`
names the commit it came from, for the record. Results in docs/problems.md.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import torch

from bench.provenance import provenance
from grader.hostsettings import WORLD_SIZES_ENV
from grader.problem import ProblemError, example_solutions, load_problem
from grader.report import ValidationStatus
from grader.validate import validate

PROBLEMS = ("all2all", "ag-gemm", "gemm-rs")
REASON_CHARS = 2000


def validate_one(folder: Path, world_size: int, device: str) -> dict[str, Any]:
    """One problem's line: loaded as an upload is, validated at `world_size`."""
    started = time.monotonic()
    line: dict[str, Any] = {"problem": folder.name, "world_size": world_size, "device": device}
    os.environ[WORLD_SIZES_ENV] = str(world_size)
    try:
        problem = load_problem(folder)
    except ProblemError as exc:
        return {**line, "status": "refused", "reason": str(exc), "wall_s": 0.0}
    report = validate(problem, example_solutions(folder), device=device)
    line |= {
        "status": str(report.status),
        "cases": {"test": len(problem.tests), "benchmark": len(problem.benchmarks_for(device))},
        "wall_s": round(time.monotonic() - started, 1),
        "checks": [
            {"name": c.name, "outcome": c.outcome, "wall_s": round(c.wall_s, 1)}
            for c in report.checks
        ],
    }
    if report.status != ValidationStatus.PASSED:
        line["reason"] = report.message[:REASON_CHARS]
    return line


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.amd_distributed", description=__doc__)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", choices=("cpu", "cuda"))
    parser.add_argument("--commit", default="", help="the commit ROOT was taken from")
    parser.add_argument("--only", nargs="*", choices=PROBLEMS, default=list(PROBLEMS))
    args = parser.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    lines = []
    for name in args.only:
        line = validate_one(args.root / name, args.world_size, device)
        print(json.dumps(line), flush=True)
        lines.append(line)
        record = {"problems_commit": args.commit, "results": lines}
        args.out.write_text(json.dumps({**record, "provenance": provenance()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
