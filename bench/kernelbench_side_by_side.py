"""KernelBench's own harness and ours on the same candidate files (bench/kernelbench_candidates.py):
each one's verdict, and where both pass, the speedup each reports over the reference.

    python -m bench.kernelbench_side_by_side CHECKOUT [--candidates DIR] [--device cuda|cpu]
        [--json PATH] [--resume] [--only GLOB ...] [--kinds KIND ...] [--ours-only]
        [--timeout S] [--correct-trials 5] [--perf-trials 100] [--commit SHA] [--budget-s S]
        [--table]

The candidates are written to DIR (default .ext/kernelbench_candidates) from CHECKOUT, a
checkout of ScalingIntelligence/KernelBench (bench/outside/README.md); each harness grades
each candidate in a fresh process of its own, stopped after `--timeout` seconds.

- KernelBench's: `eval_kernel_against_ref` from the checkout's src/kernelbench/eval.py, as its
  scripts/eval_from_generations.py calls it: 5 correctness trials, 100 timed trials on CUDA
  events, the reference timed after the candidate on the same inputs (its excessive-speedup
  check, which also gives the reference's time); the speedup is the reference's mean over
  the candidate's. Backend "triton" for a Triton candidate (loaded from a file), "cuda" for
  the others (exec'd). It needs CUDA. The package's `__init__` imports `utils`, which imports
  python-dotenv, tqdm, openai and litellm at module level, and eval.py imports requests; none
  is used on this path, so each one the host lacks is entered in `sys.modules` as an empty
  stand-in (its names raise if called) before the import, and the record says which. Their
  files are never edited. pydantic (eval.py's result type), numpy and torch are real.
- Ours: `grader.harness.grade` in the sandbox on the same device, test mode then, where it
  passed, leaderboard mode; the speedup is the score of the problem's eager baseline
  (grader/baselines.py: `Model` itself as the submission, graded once per problem in
  leaderboard mode) over the candidate's. A pass carrying a screening flag is a "flag".

`--json` is rewritten after each candidate, no candidate starts after `--budget-s` seconds,
and `--resume` skips the candidates `--json` holds;
`--table` prints the Markdown tables of a finished `--json`: per kind, how the verdicts agree
(both pass, both fail, only one passes), the speedups where both pass and their ratio, and
every disagreement with both harnesses' messages and the reason the manifest expects it.
On a CPU, `--ours-only --device cpu` runs our side only, skipping candidates that need CUDA.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import platform
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

from bench.gpumode_sweep import one_line, run_bounded
from bench.kernelbench_candidates import (
    DEFAULT_PERF_TRIALS,
    KINDS,
    Candidate,
    load_manifest,
    module_path,
    write_candidates,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CANDIDATES = REPO / ".ext" / "kernelbench_candidates"
DEFAULT_TIMEOUT_S = 600.0
CORRECT_TRIALS = 5  # KernelBench's scripts/eval_from_generations.py
SEED = 42  # eval_kernel_against_ref's default seed_num
MARK = "kj-side-by-side: "  # the child's result line on stdout, after whatever it printed
MESSAGE_CHARS = 1500
# What KernelBench's package imports at module level but never calls on eval's path: each
# missing one stands in as a module whose names raise when called (load_dotenv is called).
UNUSED_IMPORTS = {
    "dotenv": ("load_dotenv",),
    "tqdm": ("tqdm",),
    "openai": ("OpenAI",),
    "litellm": ("completion",),
    "requests": (),
}
PASSING = ("pass", "flag")
VERDICTS = (*PASSING, "fail")


# -- KernelBench's side (in a child process) ------------------------------------------------


def _unused(module: str, name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        if (module, name) == ("dotenv", "load_dotenv"):
            return False
        raise RuntimeError(f"{module}.{name} stands in for an absent package")

    return call


def kernelbench_eval(checkout: Path) -> tuple[types.ModuleType, list[str]]:
    """KernelBench's eval module from the checkout's src/, and the packages stood in for."""
    import importlib
    import importlib.util

    stood_in = []
    for module, names in UNUSED_IMPORTS.items():
        if importlib.util.find_spec(module) is None:
            stand_in = types.ModuleType(module)
            for name in names:
                setattr(stand_in, name, _unused(module, name))
            sys.modules[module] = stand_in
            stood_in.append(module)
    sys.path.insert(0, str(checkout / "src"))
    return importlib.import_module("kernelbench.eval"), stood_in


def their_grading(
    checkout: Path, candidate: Path, module: Path, backend: str, correct: int, perf: int
) -> dict[str, Any]:
    import torch

    kb_eval, stood_in = kernelbench_eval(checkout)
    with tempfile.TemporaryDirectory(prefix="kj-kb-build-") as build:
        result = kb_eval.eval_kernel_against_ref(
            module.read_text(),
            candidate.read_text(),
            seed_num=SEED,
            num_correct_trials=correct,
            num_perf_trials=perf,
            measure_performance=True,
            timing_method="cuda_event",
            build_dir=build,
            device=0,
            backend=backend,
            precision=torch.float32,
            check_for_excessive_speedup=True,
        )
    if result is None:  # its own word for a lock-file clash while compiling: try again
        return {"stood_in": stood_in, "retry": True}
    raw = result.model_dump()
    raw["metadata"] = kb_eval.check_metadata_serializable_all_types(raw.get("metadata", {}))
    return {"stood_in": stood_in, **raw}


# -- our side (in a child process) -----------------------------------------------------------


def report_summary(report: Any) -> dict[str, Any]:
    from grader.report import flag_codes

    return {
        "status": report.status.value,
        "score_s": report.score,
        "message": report.message[:MESSAGE_CHARS],
        "flags": [flag[:300] for flag in report.flags],
        "flag_codes": flag_codes(report.flags),
    }


def our_baseline(module: Path, device: str, peaks: dict[str, Any] | None) -> dict[str, Any]:
    """The problem's eager baseline in leaderboard mode, and this device's peaks."""
    from grader.baselines import BaselineKind, baseline_code
    from grader.calibrate import measure_peaks
    from grader.harness import grade
    from grader.problem import load_problem
    from grader.report import DevicePeaks, Mode

    measured = DevicePeaks.from_dict(peaks) if peaks else measure_peaks(device)
    problem = load_problem(module)
    code = baseline_code(problem, BaselineKind.EAGER)
    report = grade(
        problem, code, mode=Mode.LEADERBOARD, device=device, peaks=measured, screen=False
    )
    return {"peaks": measured.to_dict(), **report_summary(report)}


def our_grading(
    candidate: Path, module: Path, device: str, peaks: dict[str, Any] | None
) -> dict[str, Any]:
    from grader.harness import grade
    from grader.problem import load_problem
    from grader.report import DevicePeaks, Mode, Status

    measured = DevicePeaks.from_dict(peaks) if peaks else None
    problem, code = load_problem(module), candidate.read_text()
    test = grade(problem, code, mode=Mode.TEST, device=device, peaks=measured)
    out: dict[str, Any] = {"test": report_summary(test)}
    if test.status == Status.PASSED:
        ranked = grade(problem, code, mode=Mode.LEADERBOARD, device=device, peaks=measured)
        out["leaderboard"] = report_summary(ranked)
    return out


# -- verdicts and tables ---------------------------------------------------------------------


def their_verdict(kb: dict[str, Any] | None) -> tuple[str, str]:
    """KernelBench's verdict (pass, fail, error, or "" where not run) and its message."""
    if not kb:
        return "", ""
    if "error" in kb:
        return "error", kb["error"]
    meta = kb.get("metadata") or {}
    if not kb.get("compiled"):
        return "fail", f"did not compile: {meta.get('compilation_error', '')}"
    if not kb.get("correctness"):
        keys = ("runtime_error", "correctness_issue", "max_difference", "correctness_trials")
        shown = "; ".join(f"{k}: {meta[k]}" for k in keys if k in meta)
        return "fail", f"incorrect: {shown}"
    note = "excessive speedup warned" if meta.get("excessive_speedup") else ""
    return "pass", f"correct {meta.get('correctness_trials', '')}; {note}".strip("; ")


def kernelbench_speedup(kb: dict[str, Any] | None) -> float | None:
    if not kb or not kb.get("correctness"):
        return None
    runtime, reference = kb.get("runtime", -1.0), kb.get("ref_runtime", -1.0)
    return reference / runtime if runtime > 0 and reference > 0 else None


def our_verdict(ours: dict[str, Any] | None) -> tuple[str, str]:
    """Our verdict (pass, flag, fail, error, or "" where not run) and its message."""
    if not ours:
        return "", ""
    if "error" in ours:
        return "error", ours["error"]
    for mode in ("test", "leaderboard"):
        report = ours.get(mode)
        if report and report["status"] != "passed":
            return "fail", f"{mode}: {report['status']}: {report['message']}"
    ranked = ours.get("leaderboard") or {}
    screened = [flag for flag in ranked.get("flags", []) if flag.startswith("screening: ")]
    if screened:
        return "flag", "; ".join(screened)
    return "pass", ""


def our_speedup(ours: dict[str, Any] | None, baseline: dict[str, Any] | None) -> float | None:
    score = ((ours or {}).get("leaderboard") or {}).get("score_s")
    base = (baseline or {}).get("score_s")
    return (
        base / score
        if score and base and (ours or {})["leaderboard"]["status"] == "passed"
        else None
    )


def agreement(kb: str, ours: str) -> str:
    if not kb or not ours or "error" in (kb, ours):
        return "not compared"
    if kb in PASSING and ours in PASSING:
        return "both pass"
    if kb not in PASSING and ours not in PASSING:
        return "both fail"
    return "only KernelBench passes" if kb in PASSING else "only KernelJudge passes"


AGREEMENTS = (
    "both pass",
    "both fail",
    "only KernelBench passes",
    "only KernelJudge passes",
    "not compared",
)


def cell(text: str) -> str:
    return one_line(text).replace("|", "\\|") or "-"


def shown(value: float | None) -> str:
    return f"{value:.2f}" if value else "-"


def table(record: dict[str, Any]) -> str:
    """The Markdown tables of a side-by-side record (see the module's docstring)."""
    rows = record.get("results", [])
    baselines = record.get("baselines", {})
    lines = [
        "| kind | candidates | " + " | ".join(AGREEMENTS) + " | KernelBench as expected "
        "| KernelJudge as expected |",
        "| --- | --- | " + " | ".join("---" for _ in AGREEMENTS) + " | --- | --- |",
    ]
    speedups, disagreements = [], []
    for kind in KINDS:
        of_kind = [row for row in rows if row["kind"] == kind]
        if not of_kind:
            continue
        counts = dict.fromkeys(AGREEMENTS, 0)
        kb_right = ours_right = kb_run = ours_run = 0
        for row in of_kind:
            kb, kb_message = their_verdict(row.get("kernelbench"))
            ours, ours_message = our_verdict(row.get("kerneljudge"))
            agreed = agreement(kb, ours)
            counts[agreed] += 1
            kb_run += bool(kb)
            ours_run += bool(ours)
            kb_right += kb in VERDICTS and (kb in PASSING) == (row["expect_kernelbench"] in PASSING)
            ours_right += bool(ours) and ours == row["expect_kerneljudge"]
            if agreed == "both pass" or (not kb and ours in PASSING):
                theirs = kernelbench_speedup(row.get("kernelbench"))
                mine = our_speedup(row.get("kerneljudge"), baselines.get(row["problem"]))
                speedups.append((row["id"], theirs, mine, ours))
            elif agreed.startswith("only"):
                disagreements.append((row, kb, kb_message, ours, ours_message))
        cells = " | ".join(str(counts[a]) for a in AGREEMENTS)
        lines.append(
            f"| {kind} | {len(of_kind)} | {cells} | {kb_right}/{kb_run} | {ours_right}/{ours_run} |"
        )
    if speedups:
        lines += [
            "",
            "| candidate (both pass) | KernelBench speedup | KernelJudge speedup "
            "| ratio (KernelBench / ours) |",
            "| --- | --- | --- | --- |",
        ]
        ratios = []
        for cid, theirs, mine, ours in speedups:
            ratio = theirs / mine if theirs and mine else None
            ratios += [ratio] if ratio else []
            flagged = " (flagged)" if ours == "flag" else ""
            lines.append(f"| `{cid}`{flagged} | {shown(theirs)} | {shown(mine)} | {shown(ratio)} |")
        if ratios:
            middle = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
            lines.append(f"| geometric mean of {len(ratios)} ratios | | | {middle:.2f} |")
    if disagreements:
        lines += [
            "",
            "| candidate | KernelBench | KernelJudge | expected of each, and why |",
            "| --- | --- | --- | --- |",
        ]
        for row, kb, kb_message, ours, ours_message in disagreements:
            foreseen = (kb in PASSING) == (row["expect_kernelbench"] in PASSING) and ours == row[
                "expect_kerneljudge"
            ]
            expected = (
                f"KernelBench {row['expect_kernelbench']}, KernelJudge "
                f"{row['expect_kerneljudge']}: {row['why']}"
            )
            if not foreseen:
                expected = "NOT as expected; " + expected
            lines.append(
                f"| `{row['id']}` | {kb}: {cell(kb_message)} | {ours}: "
                f"{cell(ours_message)} | {cell(expected)} |"
            )
    return "\n".join(lines)


# -- the run ---------------------------------------------------------------------------------


def child(arguments: list[str], timeout_s: float) -> dict[str, Any]:
    """Run this module with `arguments` in a fresh process (its own session, stopped with
    whatever it started after `timeout_s`); its result line, or why there is none."""
    command = [sys.executable, "-m", "bench.kernelbench_side_by_side", *arguments]
    started = time.monotonic()
    returncode, out, err = run_bounded(command, timeout_s)
    if returncode is None:
        return {"error": f"did not finish within {timeout_s:g} s", "wall_s": timeout_s}
    wall = round(time.monotonic() - started, 1)
    results = [line for line in out.splitlines() if line.startswith(MARK)]
    if returncode != 0 or not results:
        tail = err.strip().splitlines()[-4:]
        return {"error": f"exited with {returncode}: " + " | ".join(tail), "wall_s": wall}
    return {**json.loads(results[-1][len(MARK) :]), "wall_s": wall}


def save(path: Path | None, record: dict[str, Any]) -> None:
    if path is None:
        return
    scratch = path.with_name(path.name + ".part")
    scratch.write_text(json.dumps(record, indent=1) + "\n")
    scratch.replace(path)


def chosen(candidates: list[Candidate], only: list[str], kinds: list[str]) -> list[Candidate]:
    return [
        c
        for c in candidates
        if (not only or any(fnmatch.fnmatch(c.id, pattern) for pattern in only))
        and (not kinds or c.kind in kinds)
    ]


def run(args: argparse.Namespace) -> dict[str, Any]:
    folder: Path = args.candidates
    write_candidates(args.checkout, folder, args.perf_trials, args.commit)
    record: dict[str, Any] = {"results": [], "baselines": {}}
    if args.resume and args.json is not None and args.json.is_file():
        record = json.loads(args.json.read_text())
    record.update(
        commit=args.commit,
        device=args.device,
        host=platform.node(),
        correct_trials=args.correct_trials,
        perf_trials=args.perf_trials,
    )
    done = {row["id"] for row in record["results"]}
    todo = [c for c in chosen(load_manifest(folder), args.only, args.kinds) if c.id not in done]
    peaks = next((b["peaks"] for b in record["baselines"].values() if b.get("peaks")), None)
    deadline = time.monotonic() + args.budget_s if args.budget_s else math.inf
    for candidate in todo:
        if time.monotonic() > deadline:
            print("the budget is spent: --resume goes on", file=sys.stderr, flush=True)
            break
        module = module_path(args.checkout, candidate.problem)
        row: dict[str, Any] = {
            "id": candidate.id,
            "problem": candidate.problem,
            "kind": candidate.kind,
            "name": candidate.name,
            "expected": candidate.expected,
            "expect_kernelbench": candidate.kernelbench,
            "expect_kerneljudge": candidate.kerneljudge,
            "why": candidate.why,
        }
        path = folder / candidate.file
        if candidate.cuda_only and args.device != "cuda":
            row["skipped"] = "needs CUDA"
        else:
            if not args.ours_only:
                row["kernelbench"] = child(
                    [
                        "--child",
                        "kernelbench",
                        "--candidate",
                        str(path),
                        "--module",
                        str(module),
                        "--kb-checkout",
                        str(args.checkout),
                        "--backend",
                        candidate.backend,
                        "--correct-trials",
                        str(args.correct_trials),
                        "--perf-trials",
                        str(args.perf_trials),
                    ],
                    args.timeout,
                )
            if candidate.problem not in record["baselines"]:
                baseline = child(
                    [
                        "--child",
                        "baseline",
                        "--module",
                        str(module),
                        "--device",
                        args.device,
                        *peaks_argument(peaks),
                    ],
                    args.timeout,
                )
                record["baselines"][candidate.problem] = baseline
                peaks = peaks or baseline.get("peaks")
            row["kerneljudge"] = child(
                [
                    "--child",
                    "kerneljudge",
                    "--candidate",
                    str(path),
                    "--module",
                    str(module),
                    "--device",
                    args.device,
                    *peaks_argument(peaks),
                ],
                args.timeout,
            )
        kb, _ = their_verdict(row.get("kernelbench"))
        ours, _ = our_verdict(row.get("kerneljudge"))
        print(
            f"{candidate.id}: KernelBench {kb or '-'}, KernelJudge {ours or '-'}",
            file=sys.stderr,
            flush=True,
        )
        record["results"].append(row)
        save(args.json, record)
    return record


def peaks_argument(peaks: dict[str, Any] | None) -> list[str]:
    return ["--peaks-json", json.dumps(peaks)] if peaks else []


def run_child(args: argparse.Namespace) -> int:
    candidate, module = args.candidate, args.module
    peaks = json.loads(args.peaks_json) if args.peaks_json else None
    if args.child == "kernelbench":
        result = their_grading(
            args.kb_checkout, candidate, module, args.backend, args.correct_trials, args.perf_trials
        )
    elif args.child == "baseline":
        result = our_baseline(module, args.device, peaks)
    else:
        result = our_grading(candidate, module, args.device, peaks)
    print(MARK + json.dumps(result, default=str), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kernelbench_side_by_side", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("checkout", nargs="?", type=Path, help="KernelBench's checkout")
    parser.add_argument("--candidates", type=Path, default=DEFAULT_CANDIDATES)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--json", type=Path, help="the record, rewritten after each candidate")
    parser.add_argument("--resume", action="store_true", help="skip candidates --json holds")
    parser.add_argument("--only", nargs="*", default=[], help="candidate ids matching globs")
    parser.add_argument("--kinds", nargs="*", default=[], choices=KINDS)
    parser.add_argument("--ours-only", action="store_true", help="leave KernelBench's side out")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per child")
    parser.add_argument("--correct-trials", type=int, default=CORRECT_TRIALS)
    parser.add_argument("--perf-trials", type=int, default=DEFAULT_PERF_TRIALS)
    parser.add_argument("--commit", default="", help="the checkout's commit, for the record")
    parser.add_argument("--budget-s", type=float, help="start no candidate after this many s")
    parser.add_argument("--table", action="store_true", help="print --json's tables and stop")
    parser.add_argument(
        "--child", choices=("kernelbench", "kerneljudge", "baseline"), help=argparse.SUPPRESS
    )
    parser.add_argument("--candidate", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--module", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--kb-checkout", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--backend", default="cuda", help=argparse.SUPPRESS)
    parser.add_argument("--peaks-json", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return run_child(args)
    if args.table:
        if args.json is None or not args.json.is_file():
            parser.error("--table needs --json naming a side-by-side record")
        print(table(json.loads(args.json.read_text())))
        return 0
    if args.checkout is None:
        parser.error("give KernelBench's checkout")
    if args.device != "cuda" and not args.ours_only:
        parser.error("KernelBench's harness needs CUDA: on a CPU, pass --ours-only")
    record = run(args)
    print(f"KernelBench's harness and ours on {args.device} ({platform.node()})\n")
    print(table(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
