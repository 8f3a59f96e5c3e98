"""The service under read and write load in the production shape (PostgreSQL, Redis and
`kerneljudge serve`, all on this machine), seeded with a season of vectoradd submissions and
driven by wrk: throughput, latency, errors, the API's memory, and a check that every
accepted submission made exactly one row.

    python -m bench.load --duration 15 --out load.json
    python -m bench.load --phases submit,mixed --users 200 --submissions 10000 --keep

Needs wrk (`apt-get install wrk`), PostgreSQL's server binaries and redis-server. The
seeding is `bench/load_seed.py`. No grading worker runs: the submissions made under load
stay queued."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, create_engine, func, select, text

# Only the tables: the rest of `server` reads the KJ_ settings when imported, and this
# process never has them (serve and the seeding run as processes of their own).
from bench.provenance import provenance
from rig import processes
from rig.cluster import free_port, postgres_cluster, redis_server
from server.models import Submission

REPO = Path(__file__).resolve().parent.parent
PROBLEM = "vectoradd"
KERNEL = (REPO / "problems" / PROBLEM / "solutions" / "pytorch.py").read_text()
PHASES = ("leaderboard", "signed", "page", "submit", "mixed")
# One wrk thread: the server and PostgreSQL need this machine's two cores, and one thread
# drives these request rates with room to spare.
WRK_THREADS = 1

# Run by wrk in each of its threads (LuaJIT). LOAD_MODE: "get" (LOAD_PATH with
# LOAD_ACCEPT), "signed" (the same with the tokens of LOAD_TOKENS in turn: signed-in readers,
# whom no shared copy answers), "submit" (POST LOAD_BODY, the tokens of LOAD_TOKENS in turn,
# so the per-user rate limit is not what is measured), "mixed" (one token: every other request
# POSTs, the rest GET one of its 50 newest submissions). done() writes LOAD_RESULT.
WRK_SCRIPT = r"""
local mode = os.getenv("LOAD_MODE")
local threads = {}
statuses = {}
accepted = {}

local function read_lines(path)
  local lines = {}
  for line in io.lines(path) do
    if #line > 0 then lines[#lines + 1] = line end
  end
  return lines
end

function setup(thread)
  thread:set("thread_index", #threads)
  threads[#threads + 1] = thread
end

function init(args)
  sent = 0
  path = os.getenv("LOAD_PATH")
  accept = os.getenv("LOAD_ACCEPT")
  if mode ~= "get" then
    tokens = read_lines(os.getenv("LOAD_TOKENS"))
    local file = io.open(os.getenv("LOAD_BODY"), "rb")
    body = file:read("*a")
    file:close()
  end
  if mode == "mixed" then own = read_lines(os.getenv("LOAD_IDS")) end
end

function request()
  sent = sent + 1
  if mode == "get" then
    return wrk.format("GET", path, {["Accept"] = accept})
  end
  local auth = "Bearer " .. tokens[(thread_index * 7919 + sent) % #tokens + 1]
  if mode == "signed" then
    return wrk.format("GET", path, {["Accept"] = accept, ["Authorization"] = auth})
  end
  if mode == "mixed" and sent % 2 == 0 then
    local id = own[#own - math.random(math.min(#own, 50)) + 1]
    return wrk.format("GET", "/api/v1/submissions/" .. id, {["Authorization"] = auth})
  end
  return wrk.format("POST", "/api/v1/submissions",
    {["Authorization"] = auth, ["Content-Type"] = "application/json"}, body)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
  if status == 202 then
    local id = string.match(body, '"id"%s*:%s*(%d+)')
    accepted[#accepted + 1] = tonumber(id)
    if mode == "mixed" and id then own[#own + 1] = id end
  end
end

function done(summary, latency, requests)
  local counts, ids = {}, {}
  for _, thread in ipairs(threads) do
    for status, count in pairs(thread:get("statuses")) do
      counts[status] = (counts[status] or 0) + count
    end
    for _, id in ipairs(thread:get("accepted")) do ids[#ids + 1] = string.format("%d", id) end
  end
  local codes = {}
  for status, count in pairs(counts) do
    codes[#codes + 1] = string.format('"%d": %d', status, count)
  end
  local e = summary.errors
  local out = io.open(os.getenv("LOAD_RESULT"), "w")
  out:write(string.format(
    '{"requests": %d, "duration_us": %d, "bytes": %d, "errors": {"connect": %d, ' ..
    '"read": %d, "write": %d, "status": %d, "timeout": %d}, "latency_us": {"p50": %d, ' ..
    '"p90": %d, "p99": %d, "max": %d, "mean": %.1f}, "statuses": {%s}, "accepted_ids": [%s]}',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status,
    e.timeout, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean, table.concat(codes, ", "), table.concat(ids, ", ")))
  out:close()
end
"""


@dataclass(frozen=True)
class Load:
    """One wrk run: what it asks for, with how many connections, for how long."""

    phase: str
    what: str
    connections: int
    duration_s: int
    mode: str
    path: str = ""
    accept: str = "application/json"


def loads(args: argparse.Namespace) -> list[Load]:
    board, page = f"/api/v1/leaderboards/{PROBLEM}", f"/problems/{PROBLEM}"
    every = [
        Load("leaderboard", f"GET {board}", 16, args.duration, "get", board),
        Load("leaderboard", f"GET {board}", 64, args.duration, "get", board),
        Load("signed", f"GET {board}, signed in", 16, args.duration, "signed", board),
        Load("page", f"GET {page} (HTML)", 16, args.duration, "get", page, "text/html"),
        Load("page", f"GET {page} (HTML)", 64, args.duration, "get", page, "text/html"),
        Load("submit", "POST /api/v1/submissions, many tokens", 16, args.duration, "submit"),
        Load("mixed", "one token: POST and GET its submissions", 64, args.mixed_duration, "mixed"),
    ]
    return [load for load in every if load.phase in args.phases]


@dataclass(frozen=True)
class Target:
    """What the loads run against: serve (its process, address and log), the database
    (an engine, and the postmaster's pid), and the folder of wrk's inputs and results."""

    serve: subprocess.Popen[bytes]
    base: str
    log: Path
    engine: Engine
    postgres_pid: int
    folder: Path


# -- the service --------------------------------------------------------------------------


def service_env(database_url: str, broker_url: str, data_dir: Path) -> dict[str, str]:
    return processes.service_env(
        data_dir, database_url=database_url, broker_url=broker_url, submission_rate_limit="0"
    )


def probe(base: str) -> list[dict[str, Any]]:
    """Each endpoint once, idle: its status, size and time, before any load."""
    answers = []
    for path, accept in (
        (f"/api/v1/leaderboards/{PROBLEM}", "application/json"),
        (f"/problems/{PROBLEM}", "text/html"),
    ):
        began = time.monotonic()
        response = httpx.get(f"{base}{path}", headers={"Accept": accept}, timeout=300)
        answers.append(
            {
                "path": path,
                "status": response.status_code,
                "bytes": len(response.content),
                "seconds": time.monotonic() - began,
            }
        )
    return answers


# -- watching the server ------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    return int(found.group(1)) if found else 0


def descendants(pid: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def memory(pid: int) -> dict[str, Any]:
    """Resident memory of the API (serve's process, and with --api-workers the processes
    uvicorn spawns for them), and of each other process it started (the results worker),
    by command line."""
    children = {command_line(child): rss_kib(child) for child in descendants(pid)}
    api = rss_kib(pid) + sum(k for line, k in children.items() if "multiprocessing" in line)
    others = {line: k for line, k in children.items() if "multiprocessing" not in line}
    return {"api_kib": api, "children_kib": others}


def command_line(pid: int) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return str(pid)
    return f"{pid}: " + " ".join(arg.decode(errors="replace") for arg in argv[1:6])


def cpu_seconds(roots: list[int]) -> float:
    """CPU time used so far by these processes and all of theirs (threads included)."""
    total = 0
    for pid in roots + [child for root in roots for child in descendants(root)]:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def database_activity(engine: Engine) -> dict[str, int]:
    """The service's database sessions by state, and by what an active one waits on."""
    query = text(
        "SELECT state || coalesce('/' || wait_event_type, ''), count(*) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend' GROUP BY 1"
    )
    with engine.connect() as connection:
        return {str(state): int(count) for state, count in connection.execute(query)}


def wait_until_idle(target: Target, limit_s: float = 300) -> tuple[float, bool]:
    """Seconds until serve and PostgreSQL stop working (no CPU, no active statement), and
    whether they did: requests wrk gave up on or left running when it stopped still run to
    the end, and would count against the next load."""
    roots = [target.serve.pid, target.postgres_pid]
    began = time.monotonic()
    used = cpu_seconds(roots)
    while time.monotonic() - began < limit_s:
        time.sleep(1.0)
        before, used = used, cpu_seconds(roots)
        working = any(state.startswith("active") for state in database_activity(target.engine))
        if used - before < 0.1 and not working:
            return time.monotonic() - began, True
    return time.monotonic() - began, False


def healthz_seconds(base: str) -> float | None:
    """How long /healthz takes now; None if it does not answer within 10 s."""
    began = time.monotonic()
    try:
        httpx.get(f"{base}/healthz", timeout=10).raise_for_status()
    except httpx.HTTPError:
        return None
    return time.monotonic() - began


# -- load ---------------------------------------------------------------------------------


def write_inputs(folder: Path, tokens: list[str], own_ids: list[int]) -> None:
    (folder / "load.lua").write_text(WRK_SCRIPT)
    body = {"problem": PROBLEM, "mode": "leaderboard", "code": KERNEL}
    (folder / "body.json").write_text(json.dumps(body))
    (folder / "one_token.txt").write_text(tokens[0] + "\n")
    (folder / "own_ids.txt").write_text("\n".join(map(str, own_ids)) + "\n")


def run_wrk(load: Load, base: str, folder: Path, timeout_s: int) -> dict[str, Any]:
    result = folder / f"wrk-{load.phase}-{load.connections}.json"
    env = {
        **os.environ,
        "LOAD_MODE": load.mode,
        "LOAD_PATH": load.path,
        "LOAD_ACCEPT": load.accept,
        "LOAD_BODY": str(folder / "body.json"),
        "LOAD_TOKENS": str(folder / ("one_token.txt" if load.mode == "mixed" else "tokens.txt")),
        "LOAD_IDS": str(folder / "own_ids.txt"),
        "LOAD_RESULT": str(result),
    }
    argv = [
        "wrk", "-t", str(WRK_THREADS), "-c", str(load.connections), "-d", f"{load.duration_s}s",
        "--timeout", f"{timeout_s}s", "-s", str(folder / "load.lua"), base,
    ]  # fmt: skip
    subprocess.run(argv, env=env, check=True, capture_output=True, timeout=load.duration_s + 120)
    return dict(json.loads(result.read_text()))


def max_submission_id(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.max(Submission.id))) or 0)


def settled_new_ids(engine: Engine, after_id: int) -> set[int]:
    """The submissions made since ``after_id``, once requests still running when wrk
    stopped have finished (the count holds still for a second)."""
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with engine.connect() as connection:
            query = select(Submission.id).where(Submission.id > after_id)
            now = set(connection.scalars(query))
        if now == seen:
            break
        seen = now
        time.sleep(1.0)
    return seen


def check_rows(accepted: list[int], rows: set[int], load: Load, timeouts: int) -> dict[str, Any]:
    """Every 202 names a row of its own. Rows without a 202 seen are requests wrk gave up
    on (timeouts) or left running when it stopped: at most one per connection."""
    answered = set(accepted)
    unanswered = len(rows - answered)
    return {
        "accepted_202": len(accepted),
        "new_rows": len(rows),
        "ids_accepted_twice": len(accepted) - len(answered),
        "accepted_without_row": len(answered - rows),
        "rows_without_202": unanswered,
        "ok": len(accepted) == len(answered)
        and answered <= rows
        and unanswered <= load.connections + timeouts,
    }


def log_size(log: Path) -> int:
    return log.stat().st_size


def server_errors(log: Path, offset: int) -> dict[str, int]:
    """Exceptions the serve log shows since ``offset``, by their type."""
    with log.open("rb") as file:
        file.seek(offset)
        tail = file.read().decode(errors="replace")
    found = re.findall(r"^([A-Za-z_][\w.]*(?:Error|Exception|Timeout)):", tail, re.MULTILINE)
    return dict(Counter(found).most_common(5))


def run_load(load: Load, target: Target, timeout_s: int) -> dict[str, Any]:
    """One wrk run, with the API's memory before and after, the exceptions serve logged,
    and for submissions the check of their rows."""
    serve, log = target.serve, target.log
    before_id = max_submission_id(target.engine)
    idle_s, _ = wait_until_idle(target)
    before_memory, log_offset = memory(serve.pid), log_size(log)
    # Other work on the machine shows here: the numbers are only as quiet as the machine.
    load_average = os.getloadavg()[0]
    began = time.monotonic()
    stats = run_wrk(load, target.base, target.folder, timeout_s)
    wall_s = time.monotonic() - began
    after_memory, activity = memory(serve.pid), database_activity(target.engine)
    drain_s, drained = wait_until_idle(target)
    drained_memory = memory(serve.pid)
    accepted = stats.pop("accepted_ids")
    outcome: dict[str, Any] = {
        **asdict(load),
        "wall_s": wall_s,
        "waited_for_idle_before_s": idle_s,
        "busy_after_wrk_s": drain_s,
        "idle_again": drained,
        "database_sessions_at_end": activity,
        "healthz_after_s": healthz_seconds(target.base),
        "load_average_before": load_average,
        "requests_per_s": stats["requests"] / (stats["duration_us"] / 1e6),
        **stats,
        "non_2xx": sum(n for code, n in stats["statuses"].items() if not code.startswith("2")),
        "memory_before": before_memory,
        "memory_after": after_memory,
        "memory_drained": drained_memory,
        "api_rss_growth_kib": drained_memory["api_kib"] - before_memory["api_kib"],
        "server_errors": server_errors(log, log_offset),
    }
    if load.mode not in ("get", "signed"):
        rows = settled_new_ids(target.engine, before_id)
        outcome["rows"] = check_rows(accepted, rows, load, stats["errors"]["timeout"])
    return outcome


# -- report -------------------------------------------------------------------------------


def print_table(results: list[dict[str, Any]]) -> None:
    header = (
        "what", "conns", "req/s", "p50 ms", "p99 ms", "max ms", "errors", "non-2xx", "RSS Δ",
        "busy after",
    )  # fmt: skip
    print("\n" + " | ".join(header))
    for r in results:
        latency, errors = r["latency_us"], r["errors"]
        # With no response at all, wrk's percentiles are zeros: show that none came back.
        times = [f"{latency[p] / 1e3:.0f}" if r["requests"] else "-" for p in ("p50", "p99", "max")]
        print(
            " | ".join(
                (
                    r["what"], str(r["connections"]), f"{r['requests_per_s']:.1f}", *times,
                    str(errors["connect"] + errors["read"] + errors["write"] + errors["timeout"]),
                    str(r["non_2xx"]), f"{r['api_rss_growth_kib'] / 1024:+.1f} MiB",
                    f"{r['busy_after_wrk_s']:.0f} s" + ("" if r["idle_again"] else " (still)"),
                )
            )
        )  # fmt: skip
        if "rows" in r:
            print(f"    rows: {r['rows']}")
        if r["server_errors"]:
            print(f"    server errors: {r['server_errors']}")
        print(f"    sessions when wrk stopped: {r['database_sessions_at_end']}; "
              f"/healthz after: {r['healthz_after_s']}")  # fmt: skip


# -- main ---------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=int, default=30, help="seconds of each phase")
    parser.add_argument(
        "--mixed-duration", type=int, default=60, help="seconds of the one-token phase"
    )
    parser.add_argument("--timeout", type=int, default=30, help="wrk's per-request timeout, s")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--submissions", type=int, default=100_000)
    parser.add_argument(
        "--phases",
        type=lambda value: [p for p in value.split(",") if p],
        default=list(PHASES),
        help=f"comma-separated, of: {', '.join(PHASES)}",
    )
    parser.add_argument("--port", type=int, help="serve's port on 127.0.0.1; default: a free one")
    parser.add_argument(
        "--api-workers", type=int, default=1, help="serve's --workers (API processes)"
    )
    parser.add_argument("--keep", action="store_true", help="leave PostgreSQL and Redis running")
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    if unknown := set(args.phases) - set(PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(unknown))}")
    return args


def seed(env: dict[str, str], args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    """`bench/load_seed.py` in a process of its own with the service's environment; its
    tokens go to tokens.txt in ``folder``."""
    began = time.monotonic()
    argv = [
        sys.executable, "-m", "bench.load_seed", "--users", str(args.users),
        "--submissions", str(args.submissions), "--tokens", str(folder / "tokens.txt"),
    ]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"seeding failed:\n{done.stderr[-5000:]}")
    seconds = json.loads(done.stdout.strip().splitlines()[-1])
    seconds["total_s"] = round(time.monotonic() - began, 2)
    print(f"seeded {args.users} users and {args.submissions} submissions: {seconds}")
    return {"users": args.users, "submissions": args.submissions, "seconds": seconds}


def newest_ids_of_first_user(engine: Engine) -> list[int]:
    """The 50 newest submissions of the first (the most active) competitor: what the
    one-token phase polls until its own new ones come back."""
    with engine.connect() as connection:
        first = connection.scalar(select(func.min(Submission.user_id)))
        query = (
            select(Submission.id)
            .where(Submission.user_id == first)
            .order_by(Submission.id.desc())
            .limit(50)
        )
        return list(connection.scalars(query))[::-1]


def drive(
    args: argparse.Namespace, env: dict[str, str], engine: Engine, postgres_pid: int, folder: Path
) -> dict[str, Any]:
    """serve, probed once idle, then every load in turn; returns what each showed."""
    log, port = folder / "serve.log", args.port or free_port()
    with processes.serve_process(
        env, log, "--workers", str(args.api_workers), port=port, startup_s=120
    ) as (serve, _):
        target = Target(serve, f"http://127.0.0.1:{port}", log, engine, postgres_pid, folder)
        idle = probe(target.base)
        print("idle:", idle)
        phases = []
        for load in loads(args):
            print(f"{load.what} at {load.connections} connections, {load.duration_s} s", flush=True)
            phases.append(run_load(load, target, args.timeout))
            print_table(phases[-1:])
    return {"idle_probe": idle, "phases": phases}


def main() -> None:
    args = parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kj-load-"))
    results: dict[str, Any] = {
        "provenance": provenance(load_average=os.getloadavg()),
        "args": vars(args) | {"out": None},
    }
    try:
        with postgres_cluster() as pg, redis_server() as broker:
            pg.keep = broker.keep = args.keep
            database_url = pg.create_database("kerneljudge")
            env = service_env(database_url, broker.url(), folder / "var")
            results["seed"] = seed(env, args, folder)
            engine = create_engine(database_url)
            try:
                tokens = (folder / "tokens.txt").read_text().split()
                write_inputs(folder, tokens, newest_ids_of_first_user(engine))
                assert pg.pid is not None
                results.update(drive(args, env, engine, pg.pid, folder))
            finally:
                engine.dispose()
                if args.keep:
                    print(f"kept: {database_url} (pid {pg.pid}, {pg.root})")
                    print(f"kept: {broker.url()} (pid {broker.pid}, {broker.root}); and {folder}")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    print_table(results["phases"])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
