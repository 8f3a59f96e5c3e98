"""Every module of KernelBench's levels (a checkout of ScalingIntelligence/KernelBench, its
`KernelBench/level1` .. `level4` folders) made into a problem of ours, unchanged
(grader/kernelbench.py), and put through the validation an upload gets, on this host's CPU
or GPU: whether each behaves as promised (its reference runs on every case and grading it as
a submission, KernelBench's template `class ModelNew(Model)`, passes in test and benchmark
mode) and the reason where it does not.

    python -m bench.kernelbench_sweep CHECKOUT [--levels 1 2 3 4] [--device cpu|cuda]
                                      [--timeout S] [--json PATH] [--resume]
                                      [--only GLOB ...] [--jobs N] [--commit SHA]
                                      [--memory-gib N] [--budget-s S] [--table]

CHECKOUT is the checkout's root (holding `KernelBench/`), brought in as
bench/outside/README.md says and never committed. The machinery is bench/gpumode_sweep.py's:
each problem validated in a process of its own, stopped after `--timeout` seconds, `--json`
rewritten after each problem, `--resume` sweeping only the problems it does not hold yet,
`--jobs` problems at once, none started after `--budget-s` seconds. `--only` takes globs over
labels such as `level1/19_ReLU`.
`--table` prints the Markdown table of a finished `--json` without sweeping: the count of
each outcome per level, then every problem that did not behave as promised, with its reason.
Needs only torch, pyyaml and this repository's `grader/` and `sandbox/`.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from collections import Counter
from pathlib import Path

from bench.gpumode_sweep import DEFAULT_TIMEOUT_S, Row, load_rows, one_line, pending, sweep

LEVELS = (1, 2, 3, 4)
AS_PROMISED = "as promised"
# The outcomes in the order the table lists them (gpumode_sweep's Row.outcome).
OUTCOMES = (AS_PROMISED, "needs", "problem", "refused", "timeout", "error")


def module_label(path: Path) -> str:
    """`level1/19_ReLU` for KernelBench/level1/19_ReLU.py."""
    return f"{path.parent.name}/{path.stem}"


def level_of(label: str) -> str:
    return label.split("/", 1)[0]


def modules(checkout: Path, levels: tuple[int, ...] = LEVELS) -> list[Path]:
    """The modules of the given levels, in KernelBench's own order (by problem number)."""
    root = checkout / "KernelBench" if (checkout / "KernelBench").is_dir() else checkout
    found: list[Path] = []
    for level in levels:
        folder = root / f"level{level}"
        if not folder.is_dir():
            raise SystemExit(f"{folder}: no such folder (is {checkout} KernelBench's checkout?)")
        numbered = [path for path in folder.glob("*.py") if path.stem.split("_")[0].isdigit()]
        found += sorted(numbered, key=lambda path: int(path.stem.split("_")[0]))
    return found


def problem_number(label: str) -> tuple[str, int]:
    level, _, name = label.partition("/")
    head = name.split("_")[0]
    return level, int(head) if head.isdigit() else 0


def table(rows: list[Row]) -> str:
    """Counts of each outcome per level, then one line per problem that is not as promised."""
    counts: dict[str, Counter[str]] = {}
    for row in rows:
        counts.setdefault(level_of(row.problem), Counter())[row.outcome] += 1
    shown = [o for o in OUTCOMES if any(c[o] for c in counts.values())]
    shown += sorted({o for c in counts.values() for o in c} - set(shown))
    lines = [
        "| level | problems | " + " | ".join(shown) + " |",
        "| --- | --- | " + " | ".join("---" for _ in shown) + " |",
    ]
    for level in sorted(counts, key=lambda name: int(name.removeprefix("level") or 0)):
        count = counts[level]
        cells = " | ".join(str(count[o]) for o in shown)
        lines.append(f"| {level} | {sum(count.values())} | {cells} |")
    total = sum(counts.values(), Counter())
    lines.append(f"| all | {len(rows)} | " + " | ".join(str(total[o]) for o in shown) + " |")
    others = sorted(
        (r for r in rows if r.outcome != AS_PROMISED), key=lambda r: problem_number(r.problem)
    )
    if others:
        lines += ["", "| problem | outcome | reason |", "| --- | --- | --- |"]
        for row in others:
            reason = one_line(row.reason).replace("|", "\\|") or "-"
            lines.append(f"| `{row.problem}` | {row.outcome} | {reason} |")
    return "\n".join(lines)


def recorded(path: Path) -> tuple[str, str, list[Row]]:
    """The commit, device and rows a sweep wrote to `path`."""
    record = json.loads(path.read_text())
    device = str(record.get("device", ""))
    return str(record.get("commit", "")), device, load_rows(path, device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernelbench_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", nargs="?", type=Path, help="KernelBench's checkout")
    parser.add_argument("--levels", nargs="*", type=int, default=list(LEVELS), choices=LEVELS)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per problem")
    parser.add_argument("--json", type=Path, help="the rows as JSON, written after each problem")
    parser.add_argument(
        "--resume", action="store_true", help="keep the rows --json already holds; sweep the rest"
    )
    parser.add_argument("--only", nargs="*", default=[], help="labels matching these globs")
    parser.add_argument("--jobs", type=int, default=1, help="problems validated at once")
    parser.add_argument("--commit", default="", help="the checkout's commit, for the record")
    parser.add_argument("--memory-gib", type=float, help="heap limit of each problem's process")
    parser.add_argument("--budget-s", type=float, help="start no problem after this many seconds")
    parser.add_argument("--table", action="store_true", help="print --json's table and stop")
    args = parser.parse_args(argv)
    if args.table:
        if args.json is None or not args.json.is_file():
            parser.error("--table needs --json naming a sweep's output")
        commit, device, rows = recorded(args.json)
        at = f" at {commit}" if commit else ""
        print(f"KernelBench{at}, validated on {device}\n")
        print(table(rows))
        return 0
    if args.checkout is None:
        parser.error("give KernelBench's checkout")
    if args.resume and args.json is None:
        parser.error("--resume needs --json")
    rows = load_rows(args.json, args.device) if args.resume and args.json.is_file() else []
    done = {row.problem for row in rows}
    labelled = ((path, module_label(path)) for path in modules(args.checkout, tuple(args.levels)))
    todo = pending(labelled, done, args.only)
    rows = sweep(
        todo,
        rows,
        device=args.device,
        timeout_s=args.timeout,
        memory_gib=args.memory_gib,
        jobs=args.jobs,
        json_path=args.json,
        commit=args.commit,
        budget_s=args.budget_s,
    )
    at = f" at {args.commit}" if args.commit else ""
    print(f"KernelBench{at}, validated on {args.device} ({platform.node()})\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
