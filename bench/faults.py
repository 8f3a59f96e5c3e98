"""Faults under load: the scenario of tests/integration/test_faults.py with more
submissions. A PostgreSQL cluster and a Redis server of its own, `kerneljudge serve` and
grading workers on this machine; a careful client submits (each request under its own
Idempotency-Key, sent again on a 503 or a connection error) while a worker is killed
mid-grading, Redis is stopped and started, and PostgreSQL is stopped and started. Prints
what the client saw and what the database holds, and writes it as JSON.

    python -m bench.faults --submissions 1000 --workers 2 --out faults.json
    python -m bench.faults --submissions 300 --appendonly

Needs PostgreSQL's server binaries, redis-server and bubblewrap (the workers' sandbox).
The rig is rig/faults.py."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.provenance import provenance
from rig.faults import (
    FAULT_SETTINGS,
    FAULTS,
    Fault,
    Outcome,
    gradings_run,
    production_install,
    run_scenario,
    tails_on_failure,
)

REPO = Path(__file__).resolve().parent.parent


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="grading workers (CPU)")
    parser.add_argument(
        "--appendonly", action="store_true", help="Redis with `appendonly yes` (default: none)"
    )
    parser.add_argument(
        "--pace", type=float, default=0.5, help="seconds between two submissions' first tries"
    )
    parser.add_argument(
        "--faults",
        type=lambda value: [f for f in value.split(",") if f],
        default=list(FAULTS),
        help=f"comma-separated, in order, of: {', '.join(FAULTS)}",
    )
    parser.add_argument("--outage", type=float, default=10.0, help="seconds Redis or PG is down")
    parser.add_argument(
        "--drain-timeout", type=float, default=3 * 3600, help="longest wait for the verdicts, s"
    )
    parser.add_argument("--logs", type=Path, help="keep every process's log in this folder")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    if unknown := set(args.faults) - set(FAULTS):
        parser.error(f"unknown faults: {', '.join(sorted(unknown))}")
    return args


def fault_summary(fault: Fault) -> dict[str, Any]:
    said = sorted({f"{s.status_code} {s.status}, page {s.page_status_code}" for s in fault.samples})
    summary: dict[str, Any] = {
        "fault": fault.name,
        "seconds": round(fault.ended - fault.started, 1),
        "api_said": said,
    }
    if fault.killed:
        summary["killed"] = fault.killed
        summary["interrupted_gradings"] = sorted(fault.victims)
    if fault.held_before or fault.held_after:
        summary["jobs_held_before"] = len(fault.held_before)
        summary["jobs_held_after"] = len(fault.held_after)
        summary["jobs_kept"] = len(fault.held_before & fault.held_after)
    return summary


def results(outcome: Outcome, gradings: int, elapsed_s: float) -> dict[str, Any]:
    return {
        "tally": outcome.tally.summary(),
        "gradings_run": gradings,
        "every_verdict_after_last_202_s": round(outcome.drain_s, 1),
        "faults": [fault_summary(fault) for fault in outcome.faults],
        "elapsed_s": round(elapsed_s, 1),
        "settings": FAULT_SETTINGS,
    }


def print_table(result: dict[str, Any]) -> None:
    tally = result["tally"]
    rows = [
        ("accepted (202)", f"{tally['accepted']} of {tally['submitted']}"),
        ("recorded (verdicts)", f"{tally['recorded']} {tally['verdicts']}"),
        ("duplicate rows per key", tally["duplicates"]),
        ("accepted keys with no row", tally["accepted_without_row"]),
        ("rows without a 202", tally["rows_without_202"]),
        ("stuck queued/running", tally["stuck"]),
        (
            "202 to verdict, median / max",
            f"{tally['median_202_to_verdict_s']} s / {tally['slowest_202_to_verdict_s']} s",
        ),
        ("client answers", tally["client_answers"]),
        ("unexpected answers (500, ...)", tally["unexpected_answers"]),
        ("outbox rows sent more than once", tally["outbox_sent_twice"]),
        ("gradings run", result["gradings_run"]),
        ("all verdicts in after the last 202", f"{result['every_verdict_after_last_202_s']} s"),
    ]
    print("\n| what | value |\n| --- | --- |")
    for what, value in rows:
        print(f"| {what} | {value} |")
    for fault in result["faults"]:
        print(f"- {fault}")


def main() -> None:
    args = parse_args()
    root = Path(tempfile.mkdtemp(prefix="kj-faults-"))
    began = time.monotonic()
    result: dict[str, Any] = {
        "provenance": provenance(
            gpu=shutil.which("nvidia-smi") is not None, load_average_at_start=os.getloadavg()
        ),
        "args": vars(args) | {"out": None},
    }
    try:
        with (
            tails_on_failure(root / "logs"),
            production_install(root, workers=args.workers, appendonly=args.appendonly) as install,
        ):
            outcome = run_scenario(
                install,
                submissions=args.submissions,
                pace_s=args.pace,
                faults=args.faults,
                outage_s=args.outage,
                drain_timeout_s=args.drain_timeout,
            )
            gradings = gradings_run(install)
    finally:
        if args.logs:
            shutil.copytree(root / "logs", args.logs, dirs_exist_ok=True)
        shutil.rmtree(root, ignore_errors=True)
    result.update(results(outcome, gradings, time.monotonic() - began))
    print_table(result)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
