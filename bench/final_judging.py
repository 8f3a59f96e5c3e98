"""A competition's final judging through `kerneljudge serve` on this host's device, as an
organizer and its entrants would run it over REST: entrants registered, one leaderboard
submission each per problem, the close, then the final judging (every entry graded K times
more) started, waited for and discarded, as many times as asked, the last one published.

    python -m bench.final_judging [--device cuda|cpu] [--entrants 10]
        [--problems vectoradd,vectorsum] [--runs 5] [--judgings 2] [--small] [--out FILE]

Each entrant's kernel (on vectoradd, vectorsum, rmsnorm or matmul: `REDO`) is its problem's
example PyTorch solution plus a share of the same work done again (its `extra`: 0.05 redoes
a twentieth of the rows), so the entries' times lie from the solution's own to 2.5 times
it, several of them a few percent apart. Prints, and
writes to --out, each judging's wall time, the time its gradings took (started to finished,
summed) and that share of the wall time, each entry's K scores, their median and CV; then
the largest CV among entries of 20 µs and more, and every pair of entries on one problem
whose medians lie more than 2% apart in the first judging that a later one orders the other
way. `--small`: the organizer first uploads a small variant of each problem over REST
(`NAME-small`: one test case, one benchmark case, half a second of timing a case), which the
competition then holds, so that hundreds of entries can be judged on a CPU install. Feeds
docs/benchmarks.md, "A final judging on a GPU" and "A final judging on the CPU install"."""

from __future__ import annotations

import argparse
import io
import json
import statistics
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

import httpx
import yaml

from bench.provenance import provenance
from bench.service_demo import host_env, serving
from rig.processes import TERMINAL, add_user

# The work each entrant's kernel does again, as a share of the problem's whole input.
EXTRAS = (0.0, 0.03, 0.06, 0.1, 0.15, 0.25, 0.4, 0.6, 1.0, 1.5)
REDO = {
    "vectoradd": (
        "A, B, out = data\n"
        "    torch.add(A, B, out=out)\n"
        "    for rows in REDONE:\n"
        "        torch.add(A[:rows], B[:rows], out=out[:rows])\n"
        "    return out\n",
        "data[0].shape[0]",
    ),
    "vectorsum": (
        "total = torch.sum(data)\n"
        "    for rows in REDONE:\n"
        "        torch.sum(data[:rows])\n"
        "    return total\n",
        "data.shape[0]",
    ),
    "rmsnorm": (
        "x, weight, _ = data\n"
        "    out = torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, 1e-6)\n"
        "    for rows in REDONE:\n"
        "        torch.nn.functional.rms_norm(x[:rows], (x.shape[-1],), weight, 1e-6)\n"
        "    return out\n",
        "data[0].shape[0]",
    ),
    "matmul": (
        "A, B = data\n"
        "    out = torch.matmul(A, B)\n"
        "    for rows in REDONE:\n"
        "        torch.matmul(A[:rows], B)\n"
        "    return out\n",
        "data[0].shape[0]",
    ),
}
# A kernel's CV is held to 1% from this score up (shorter ones are launch-bound).
CV_FROM_S = 20e-6
APART = 0.02
POLL_S = 2.0
SMALL = "-small"
# A small variant's timing of its one benchmark case, in seconds.
SMALL_BUDGET_S = 0.5
VALIDATION_S = 900.0
BEGAN = time.monotonic()


def kernel(problem: str, extra: float) -> str:
    """`problem`'s PyTorch solution that redoes `extra` of its input (whole passes, then a
    share of one): the same result, more work."""
    body, rows = REDO[problem.removesuffix(SMALL)]
    passes, share = int(extra), extra - int(extra)
    return (
        "import torch\nfrom task import input_t, output_t\n\n\n"
        "def custom_kernel(data: input_t) -> output_t:\n"
        f"    n = {rows}\n"
        f"    REDONE = [n] * {passes} + ([int(n * {share!r})] if {share!r} else [])\n"
        f"    {body}"
    )


def small_archive(problem: str) -> bytes:
    """The built-in `problem` as a .tar.gz of one folder, `NAME-small`: its files as a worker
    gets them, its first test case, the first of its CPU benchmark cases, SMALL_BUDGET_S of
    timing, and its PyTorch and wrong example solutions (the upload's validation grades them)."""
    from grader.problem import BUILTIN_DIR, load_problem

    loaded = load_problem(problem)
    task = yaml.safe_load(loaded.files["task.yml"])
    task["files"] = [
        {"name": f["name"], "source": f["name"] if f["source"] != "@SUBMISSION@" else f["source"]}
        for f in task["files"]
        if f["name"] in loaded.files or f["source"] == "@SUBMISSION@"
    ]
    task["tests"] = task["tests"][:1]
    task["benchmarks"] = task["benchmarks"][:1]
    task["cpu_benchmarks"] = (task.get("cpu_benchmarks") or task["benchmarks"])[:1]
    task["case_time_budget_s"] = SMALL_BUDGET_S
    files = {**loaded.files, "task.yml": yaml.safe_dump(task, sort_keys=False)}
    for solution in ("pytorch.py", "wrong.py"):
        path = BUILTIN_DIR / problem / "solutions" / solution
        if path.exists():
            files[f"solutions/{solution}"] = path.read_text()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{problem}{SMALL}/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def upload_small(base: str, admin_token: str, problem: str) -> str:
    """`problem`'s small variant uploaded as an organizer would, and validated: its name."""
    archive = small_archive(problem)
    name = upload(base, admin_token, f"{problem}{SMALL}.tar.gz", archive, f"{problem}{SMALL}")
    seen = validation(base, admin_token, name)
    assert seen["status"] == "live", f"{name} did not validate: {seen}"
    return name


def upload(base: str, token: str, filename: str, archive: bytes, name: str | None = None) -> str:
    """An archive sent to POST /api/v1/problems with `token` (an admin's: an organizer's
    problem; an author's: its own, private one): the problem's name."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        sent = http.post(
            "/api/v1/problems",
            files={"archive": (filename, archive)},
            data={"name": name} if name else {},
        )
    assert sent.status_code in (201, 202), sent.text
    return str(sent.json()["name"])


def validation(base: str, token: str, name: str) -> dict[str, Any]:
    """The problem's validation once it is no longer under way (VALIDATION_S at most)."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=120) as http:
        ends = time.monotonic() + VALIDATION_S
        while True:
            seen: dict[str, Any] = http.get(f"/api/v1/problems/{name}/validation").json()
            if seen["status"] != "validating":
                return seen
            assert time.monotonic() < ends, f"{name}: still validating"
            time.sleep(POLL_S)


class Client:
    """The service's REST API as one token sees it."""

    def __init__(self, base: str, token: str) -> None:
        self.http = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

    def call(self, method: str, path: str, body: Any = None) -> Any:
        response = self.http.request(method, path, json=body)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--entrants", type=int, default=10)
    parser.add_argument("--problems", default="vectoradd,vectorsum")
    parser.add_argument("--runs", type=int, default=5, help="K: gradings of each entry")
    parser.add_argument("--judgings", type=int, default=2)
    parser.add_argument("--out", type=Path)
    parser.add_argument(
        "--small", action="store_true", help="judge small variants of the problems, uploaded"
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        help="fewer runs per entry where K would not fit the time left, from the entries' rate",
    )
    parser.add_argument(
        "--compare", type=Path, help="an earlier run's --out: its first judging is checked too"
    )
    args = parser.parse_args()
    problems = args.problems.split(",")
    data_dir = Path(tempfile.mkdtemp(prefix="kj-judging-"))
    env = host_env(data_dir, args.device)
    names = [f"entrant{i:03d}" for i in range(args.entrants)]
    with ThreadPoolExecutor(4) as pool:
        admin_token = add_user(env, "organizer", admin=True)
        tokens = dict(zip(names, pool.map(lambda name: add_user(env, name), names), strict=True))
    results: dict[str, Any] = {"args": vars(args) | {"out": str(args.out)}}
    try:
        with serving(env, data_dir / "serve.log") as base:
            if args.small:
                began = time.monotonic()
                problems = [upload_small(base, admin_token, problem) for problem in problems]
                results["small_problems_validated_in_s"] = time.monotonic() - began
            results |= judge(base, admin_token, tokens, problems, args)
    finally:
        results["provenance"] = provenance()
        text = json.dumps(results, indent=1, default=str)
        if args.out:
            args.out.write_text(text)
        print(summary(results))
        print("-- serve log tail --\n" + (data_dir / "serve.log").read_text()[-2000:])


def judge(
    base: str, admin_token: str, tokens: dict[str, str], problems: list[str], args: Any
) -> dict[str, Any]:
    organizer = Client(base, admin_token)
    gpu = organizer.call("GET", f"/api/v1/problems/{problems[0]}")["gpu_types"][0]
    name = "final-judging-bench"
    opens = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=20)
    entries = len(tokens) * len(problems)
    window = timedelta(seconds=20 + entries // 5)
    organizer.call("POST", "/api/v1/competitions", {
        "name": name,
        "title": "The final judging's benchmark",
        "problems": [{"name": problem} for problem in problems],
        "gpu": gpu,
        "opens_at": opens.isoformat(),
        "closes_at": (opens + window).isoformat(),
        "scoring": "rank_points",
        "team_size": 1,
        "final_runs": args.runs,
    })  # fmt: skip
    entrants = {user: Client(base, token) for user, token in tokens.items()}
    for client in entrants.values():
        client.call("POST", f"/api/v1/competitions/{name}/register")
    time.sleep(max(0.0, opens.timestamp() + 0.5 - time.time()))
    extra_of: dict[int, tuple[str, str, float]] = {}
    for i, (user, client) in enumerate(entrants.items()):
        for problem in problems:
            extra = EXTRAS[i % len(EXTRAS)]
            sid = client.call("POST", "/api/v1/submissions", {
                "problem": problem, "code": kernel(problem, extra), "mode": "leaderboard",
            })["id"]  # fmt: skip
            extra_of[sid] = (user, problem, extra)
    submitted_s = time.time() - opens.timestamp()
    started = time.monotonic()
    verdicts = wait_for_verdicts(organizer, list(extra_of))
    entries_s = time.monotonic() - started
    failed = {
        sid: (status, organizer.call("GET", f"/api/v1/submissions/{sid}")["message"])
        for sid, status in verdicts.items()
        if status != "passed"
    }
    time.sleep(max(0.0, opens.timestamp() + window.total_seconds() + 1 - time.time()))
    runs = args.runs
    if args.budget_s:
        per_grading_s = entries_s / entries
        left_s = args.budget_s - (time.monotonic() - BEGAN)
        runs = max(1, min(runs, int(left_s / args.judgings / (per_grading_s * entries))))
    judgings = []
    for j in range(args.judgings):
        judgings.append(one_judging(organizer, name, runs, extra_of))
        decision = "publish" if j == args.judgings - 1 else "discard"
        organizer.call("POST", f"/api/v1/competitions/{name}/judging/{decision}")
    standings = organizer.call("GET", f"/api/v1/competitions/{name}/standings")
    return {
        "gpu": gpu,
        "entries": entries,
        "submitted_in_s": submitted_s,
        "entries_graded_in_s": entries_s,
        "entries_failed": failed,
        "judgings": judgings,
        "final_ranks": [(row["team"], row["rank"], row["total"]) for row in standings["rows"]],
        "checks": checks(judgings, earlier(args.compare)),
    }


def wait_for_verdicts(client: Client, ids: list[int]) -> dict[int, str]:
    statuses: dict[int, str] = {}
    while len(statuses) < len(ids):
        for sid in ids:
            if sid not in statuses:
                status = client.call("GET", f"/api/v1/submissions/{sid}")["status"]
                if status in TERMINAL:
                    statuses[sid] = status
        time.sleep(POLL_S)
    return statuses


def one_judging(
    organizer: Client, name: str, runs: int, extra_of: dict[int, tuple[str, str, float]]
) -> dict[str, Any]:
    """One final judging, started and waited for: its wall time, its gradings' summed time
    and each entry's K scores."""
    began = time.monotonic()
    body = organizer.call("POST", f"/api/v1/competitions/{name}/judgings", {"runs": runs})
    while body["graded"] < body["total_runs"]:
        time.sleep(POLL_S)
        body = organizer.call("GET", f"/api/v1/competitions/{name}/judging")
    wall_s = time.monotonic() - began
    run_ids = [
        run for row in body["rows"] for entry in row["entries"].values() for run in entry["runs"]
    ]
    graded_s, clocks, devices, messages = 0.0, [], set(), {}
    for run in run_ids:
        seen = organizer.call("GET", f"/api/v1/submissions/{run}")
        if seen["status"] != "passed":
            messages[run] = [seen["status"], seen["message"], seen["flags"]]
        graded_s += (parse(seen["finished_at"]) - parse(seen["started_at"])).total_seconds()
        fingerprint = seen.get("fingerprint") or {}
        devices.add((fingerprint.get("device_name"), fingerprint.get("gpu_uuid")))
        if fingerprint.get("sm_clock_mhz"):
            clocks.extend(fingerprint["sm_clock_mhz"])
    entries = []
    for row in body["rows"]:
        for problem, entry in row["entries"].items():
            user, _, extra = extra_of[entry["entry_id"]]
            entries.append({
                "entrant": user, "problem": problem, "extra": extra,
                "score_at_close": entry["score_before"], "scores": entry["scores"],
                "statuses": entry["statuses"], "median": entry["median"], "cv": entry["cv"],
                "off_pin": entry["off_pin"],
            })  # fmt: skip
    return {
        "id": body["id"],
        "runs": len(run_ids),
        "wall_s": wall_s,
        "graded_s": graded_s,
        "grading_share": graded_s / wall_s,
        "devices": sorted(map(str, devices)),
        "sm_clock_mhz": [min(clocks), max(clocks)] if clocks else None,
        "ranks": [(row["team"], row["rank_after"]) for row in body["rows"]],
        "entries": entries,
        "not_passed": messages,
    }


def earlier(path: Path | None) -> list[dict[str, Any]]:
    return [] if path is None else list(json.loads(path.read_text())["judgings"][:1])


def parse(moment: str) -> datetime:
    return datetime.fromisoformat(moment)


def checks(judgings: list[dict[str, Any]], before: list[dict[str, Any]]) -> dict[str, Any]:
    """The largest CV among entries of CV_FROM_S and more, and the pairs of entries on one
    problem more than APART apart in the first judging (an earlier run's, where `before`
    holds one) that a later one orders otherwise."""
    judgings = before + judgings
    first = {(e["entrant"], e["problem"]): e["median"] for e in judgings[0]["entries"]}
    cvs = [
        e["cv"] for j in judgings for e in j["entries"]
        if e["median"] is not None and e["median"] >= CV_FROM_S and e["cv"] is not None
    ]  # fmt: skip
    pairs, swapped = 0, []
    for later in judgings[1:]:
        then = {(e["entrant"], e["problem"]): e["median"] for e in later["entries"]}
        for a, b in combinations(sorted(first), 2):
            if a[1] != b[1] or None in (first[a], first[b], then.get(a), then.get(b)):
                continue
            if abs(first[a] - first[b]) <= APART * min(first[a], first[b]):
                continue
            pairs += 1
            if (first[a] < first[b]) != (then[a] < then[b]):
                swapped.append((a, b, first[a], first[b], then[a], then[b]))
    return {
        "entries_held_to_cv": len(cvs),
        "largest_cv": max(cvs, default=None),
        "median_cv": statistics.median(cvs) if cvs else None,
        "pairs_apart": pairs,
        "pairs_swapped": swapped,
    }


def summary(results: dict[str, Any]) -> str:
    lines = [
        f"device {results.get('gpu')}: {results.get('entries')} entries graded in "
        f"{results.get('entries_graded_in_s', 0):.0f} s, not passed: "
        f"{results.get('entries_failed')}"
    ]
    for j in results.get("judgings", []):
        lines.append(
            f"judging {j['id']}: {j['runs']} runs in {j['wall_s']:.0f} s, gradings "
            f"{j['graded_s']:.0f} s ({j['grading_share']:.0%}), SM clock {j['sm_clock_mhz']}"
        )
        for run, (status, message, flags) in j["not_passed"].items():
            lines.append(f"  run {run} {status}: {message[:300]} {flags}")
        for e in sorted(j["entries"], key=lambda e: (e["problem"], e["extra"])):
            scores = " ".join(f"{s * 1e6:.2f}" if s else "-" for s in e["scores"])
            cv = f"{e['cv']:.2%}" if e["cv"] is not None else "-"
            lines.append(f"  {e['problem']:10} +{e['extra']:<5} {e['entrant']}: [{scores}] cv {cv}")
    lines.append(f"checks: {json.dumps(results.get('checks'), default=str)}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
