"""KernelBench level-1 candidates graded through the batch API, as a trainer sends them with
the project's client (`server.client.batches.grade_many`), on `kerneljudge serve` with its
local sandboxed worker on this host's device: gradings per GPU-hour, the time from POST to
verdict (median, p99), the GPU's busy fraction, and whether every item got one verdict.

    python -m bench.batch_throughput [--items 1000] [--tier quick[,standard]]
        [--mode benchmark] [--problems 1 40 DIR FILE.py ...] [--owner organizer|author]
        [--device cuda|cpu] [--budget-s SECONDS] [--out FILE]

An admin and a trainer are made; the KernelBench modules are uploaded (an organizer's
problems, or with `--owner author` the trainer's own private ones, whose references run in a
sandbox of their own) and validated; then, for each tier in turn, `--items` candidates spread
evenly over the problems and five kinds (`KINDS`: the reference as a candidate, a correct
rewrite, a wrong one, one that crashes, a correct one four times slower) go through
`grade_many`. The quick tier grades test mode; standard and thorough grade `--mode`
(benchmark or leaderboard). Without `--budget-s` every item is sent at once; with it, items go
in waves that keep about `--lead-s` of work queued and stop when the rest would not finish
within the budget (counted from this process's start), so the run ends within it and reports
what was done. POST to verdict is then the wait of a trainer that keeps that much work queued;
sent at once, it grows with the number of items. On a host without a GPU the busy fraction is
null."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.backlog import Utilisation
from bench.final_judging import upload, validation
from bench.provenance import provenance
from bench.service_demo import REPO, host_env, serving
from grader.kernelbench import find_modules
from rig.processes import add_user
from server.client.batches import BATCH_SIZE, grade_many
from server.client.config import Login

BEGAN = time.monotonic()
LEVEL1 = REPO / ".ext" / "KernelBench" / "KernelBench" / "level1"
# Level 1's modules by number: matmuls (square, tall-skinny, diagonal), softmax, layer norm,
# max pooling, 2D and transposed 3D convolutions, GELU and cross-entropy; their inputs take
# 8 MB to 6.4 GB, so cheap and costly gradings are both in the mix.
DEFAULT_PROBLEMS = ("1", "9", "12", "23", "40", "42", "50", "58", "88", "95")
KINDS = ("reference", "rewrite", "wrong", "crash", "slow")
# The verdict each kind should get, in any mode.
EXPECTED = {
    "reference": "passed",
    "rewrite": "passed",
    "wrong": "failed",
    "crash": "error",
    "slow": "passed",
}
SLOW_REPEATS = 4
BODIES = {
    "reference": "class ModelNew(Model):\n    pass\n",
    "rewrite": (
        "class ModelNew(Model):\n"
        "    def forward(self, *inputs):\n"
        "        inputs = [x.contiguous() if isinstance(x, torch.Tensor) else x for x in inputs]\n"
        "        out = super().forward(*inputs)\n"
        "        return out.clone() if isinstance(out, torch.Tensor) else out\n"
    ),
    "wrong": (
        "class ModelNew(Model):\n"
        "    def forward(self, *inputs):\n"
        "        return super().forward(*inputs) * 1.5 + 1\n"
    ),
    "crash": (
        "class ModelNew(Model):\n"
        "    def forward(self, *inputs):\n"
        '        raise RuntimeError("this candidate crashes")\n'
    ),
    "slow": (
        "class ModelNew(Model):\n"
        "    def forward(self, *inputs):\n"
        f"        for _ in range({SLOW_REPEATS - 1}):\n"
        "            super().forward(*inputs)\n"
        "        return super().forward(*inputs)\n"
    ),
}
# What a run keeps back from its budget to read its items back and stop the service.
WIND_DOWN_S = 60.0
ONE_SUBMISSION_AT_ONCE = 8


def candidate(kind: str, tag: str) -> str:
    """A KernelBench submission of `kind` (KINDS), its code unique to `tag`."""
    return f"# candidate {tag}\nimport torch\n\nfrom model import Model\n\n\n{BODIES[kind]}"


def plan(problems: Sequence[str], count: int, mode: str, tag: str = "") -> list[dict[str, str]]:
    """`count` batch items, kinds taken in turn and problems every len(KINDS) items (each run
    of len(problems) * len(KINDS) items holds every pair once), so any first part of the list
    is spread as evenly as the whole, and cheap kinds (a crash) lie between costly ones."""
    items = []
    for index in range(count):
        problem = problems[(index // len(KINDS)) % len(problems)]
        kind = KINDS[index % len(KINDS)]
        key = f"{index:05d}-{kind}-{problem}"
        code = candidate(kind, f"{tag}{key}")
        items.append({"key": key, "problem": problem, "code": code, "mode": mode})
    return items


def kind_of(key: str) -> str:
    return key.split("-")[1]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), interpolated between the nearest ranks; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = q / 100 * (len(ordered) - 1)
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def spread(values: Sequence[float]) -> dict[str, float | None]:
    return {
        "median": percentile(values, 50),
        "p99": percentile(values, 99),
        "max": max(values, default=None),
    }


@dataclass
class Pacer:
    """How many items to send now: all of them at once without a deadline; with one, a first
    wave to learn the rate, then waves of about `wave_s` of work whenever less than `lead_s`
    is queued, none that `margin` of the rate so far would not finish by `ends_at` (items of
    one problem or kind grade slower than the mix)."""

    ends_at: float | None
    first_wave: int = 10
    lead_s: float = 30.0
    wave_s: float = 60.0
    largest: int = BATCH_SIZE
    margin: float = 0.8

    def next_wave(
        self, now: float, left: int, outstanding: int, finished: int, since: float | None
    ) -> int:
        if left <= 0:
            return 0
        if self.ends_at is None:
            return left
        if since is None:
            return min(left, self.first_wave) if now < self.ends_at else 0
        if finished < min(2, finished + outstanding) or now <= since:
            return 0
        rate = finished / (now - since)
        if outstanding > rate * self.lead_s:
            return 0
        fits = math.floor((self.ends_at - now) * rate * self.margin) - outstanding
        wave = max(1, math.ceil(rate * self.wave_s))
        return max(0, min(left, self.largest, wave, fits))


@dataclass
class Graded:
    """One item as this client saw it: when its batch was POSTed, when its verdict came."""

    key: str
    problem: str
    posted_at: float | None = None
    verdict_at: float | None = None
    verdicts: int = 0
    status: str | None = None
    error_class: str | None = None
    score: float | None = None
    submission_id: int | None = None
    batch_id: int | None = None


class PostClock(httpx.AsyncBaseTransport):
    """httpx's transport, noting when the latest POST /api/v1/batches was sent: grade_many
    sends its batches one after another, so at its on_batch that POST is the accepted one."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.sent_at: float | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path == "/api/v1/batches":
            self.sent_at = time.monotonic()
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def send(
    base: str, token: str, tier: str, items: list[dict[str, str]], pacer: Pacer
) -> tuple[dict[str, Graded], list[int]]:
    """Every item through grade_many, in the waves `pacer` sets, until each has its verdict
    or `pacer.ends_at` has passed."""
    graded = {item["key"]: Graded(item["key"], item["problem"]) for item in items}
    batches: list[int] = []
    login = Login(base, token)

    async def wave(chunk: list[dict[str, str]]) -> None:
        clock = PostClock()

        def accepted(made: dict[str, Any]) -> None:
            batches.append(made["id"])
            for item in made["items"]:
                graded[item["key"]].posted_at = clock.sent_at
                graded[item["key"]].submission_id = item["submission_id"]

        async for verdict in grade_many(
            chunk, login=login, tier=tier, on_batch=accepted, transport=clock
        ):
            seen = graded[verdict["key"]]
            seen.verdict_at = time.monotonic()
            seen.verdicts += 1
            seen.status, seen.error_class = verdict["status"], verdict["error_class"]
            seen.score, seen.batch_id = verdict["score"], verdict["batch_id"]

    tasks: set[asyncio.Task[None]] = set()
    sent, first_post = 0, None
    try:
        while True:
            now = time.monotonic()
            finished = sum(1 for g in graded.values() if g.verdicts)
            if pacer.ends_at is not None and now >= pacer.ends_at:
                break
            count = pacer.next_wave(now, len(items) - sent, sent - finished, finished, first_post)
            if count:
                first_post = first_post or now
                tasks.add(asyncio.create_task(wave(items[sent : sent + count])))
                sent += count
            for task in [task for task in tasks if task.done()]:
                tasks.discard(task)
                task.result()  # a refusal the client could not cure ends the run here
            if sent == len(items) and not tasks:
                break
            await asyncio.sleep(0.5)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return graded, batches


def read_back(
    base: str, token: str, graded: dict[str, Graded], batches: list[int]
) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    """Each submission's body (its times and message), and the batches as the service holds
    them: each done, each item's status the one the client was given."""

    async def read() -> tuple[list[Any], list[Any]]:
        headers = {"Authorization": f"Bearer {token}"}
        limit = asyncio.Semaphore(ONE_SUBMISSION_AT_ONCE)
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=120) as http:

            async def get(path: str) -> Any:
                async with limit:
                    return (await http.get(path)).json()

            bodies = await asyncio.gather(
                *(get(f"/api/v1/submissions/{g.submission_id}") for g in graded.values()
                  if g.submission_id is not None)
            )  # fmt: skip
            held = await asyncio.gather(*(get(f"/api/v1/batches/{b}") for b in batches))
        return bodies, held

    bodies, held = asyncio.run(read())
    statuses = {item["key"]: item["status"] for batch in held for item in batch["items"]}
    differ = [
        key for key, g in graded.items() if g.verdicts and statuses.get(key) != g.status
    ]  # fmt: skip
    check = {
        "batches": len(held),
        "done": sum(batch["status"] == "done" for batch in held),
        "items_held": len(statuses),
        "client_and_service_differ": differ[:10],
    }
    return {body["id"]: body for body in bodies}, check


def seconds_between(start: str | None, end: str | None) -> float | None:
    if start is None or end is None:
        return None
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def summarise(
    graded: dict[str, Graded],
    bodies: dict[int, dict[str, Any]],
    busy_percent: float | None,
) -> dict[str, Any]:
    """A tier's figures from its items: verdicts by status, error class and kind, the wall
    time from the first POST to the last verdict, gradings per GPU-hour over it (one GPU),
    POST to verdict as the client saw it and as the service recorded it, each item's grading
    time, and whether every item sent got exactly one verdict."""
    sent = [g for g in graded.values() if g.posted_at is not None]
    done = [g for g in sent if g.verdicts]
    first = min((g.posted_at for g in sent if g.posted_at is not None), default=None)
    last = max((g.verdict_at for g in done if g.verdict_at is not None), default=None)
    wall = last - first if first is not None and last is not None else None
    waits = [g.verdict_at - g.posted_at for g in done if g.verdict_at and g.posted_at]
    body = {g.key: bodies.get(g.submission_id or -1, {}) for g in sent}
    recorded = [seconds_between(b.get("created_at"), b.get("finished_at")) for b in body.values()]
    grading = [seconds_between(b.get("started_at"), b.get("finished_at")) for b in body.values()]
    by_kind: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
    unexpected = []
    for g in done:
        kind = kind_of(g.key)
        by_kind[kind][f"{g.status}/{g.error_class}" if g.error_class else str(g.status)] += 1
        if g.status != EXPECTED[kind]:
            message = " ".join(str(body[g.key].get("message") or "").split())
            unexpected.append({"key": g.key, "status": g.status, "message": message[:400]})
    return {
        "items_sent": len(sent),
        "verdicts": len(done),
        "unfinished": sum(1 for g in sent if not g.verdicts),
        "unfinished_first": [g.key for g in sent if not g.verdicts][:20],
        "exactly_one_verdict": all(g.verdicts == 1 for g in sent),
        "more_than_one_verdict": [g.key for g in sent if g.verdicts > 1],
        "statuses": dict(Counter(str(g.status) for g in done)),
        "error_classes": dict(Counter(str(g.error_class) for g in done if g.error_class)),
        "by_kind": {kind: dict(counts) for kind, counts in by_kind.items()},
        "unexpected": len(unexpected),
        "unexpected_first": unexpected[:5],
        "wall_s": wall,
        "gradings_per_gpu_hour": len(done) / (wall / 3600) if wall else None,
        "post_to_verdict_s": spread(waits),
        "created_to_finished_s": spread([s for s in recorded if s is not None]),
        "grading_s": spread([s for s in grading if s is not None]),
        "gpu_busy_fraction": None if busy_percent is None else busy_percent / 100,
        "window_s": [None if t is None else t - BEGAN for t in (first, last)],
    }


def problem_files(names: Sequence[str], level1: Path) -> list[Path]:
    """The KernelBench modules `names` stand for: a level-1 number (in `level1`), a module's
    file, or a folder (its modules)."""
    found = []
    for name in names:
        path = Path(name)
        if name.isdigit():
            matches = sorted(level1.glob(f"{name}_*.py"))
            if not matches:
                raise SystemExit(f"no level-1 module {name} in {level1}")
            found.append(matches[0])
        elif path.is_dir():
            found.extend(find_modules(path))
        elif path.is_file():
            found.append(path)
        else:
            raise SystemExit(f"{name}: neither a level-1 number, a module nor a folder")
    return found


def zipped(module: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(module.name, module.read_text())
    return buffer.getvalue()


def upload_all(base: str, token: str, modules: list[Path]) -> tuple[list[str], dict[str, Any]]:
    """Every module uploaded with `token`, then each validation waited for: the live
    problems' names, and why any other did not go live."""
    names = [upload(base, token, f"{module.stem}.zip", zipped(module)) for module in modules]
    live: list[str] = []
    refused: dict[str, Any] = {}
    for name in names:
        seen = validation(base, token, name)
        if seen["status"] == "live":
            live.append(name)
        else:
            checks = [c for d in seen["devices"] for c in (d.get("report") or {}).get("checks", [])]
            refused[name] = [
                f"{c['name']}: {c['status']} {' '.join((c.get('message') or '').split())[:300]}"
                for c in checks
                if c["status"] != "passed"
            ] or seen["status"]
    return live, refused


def run_tier(
    base: str, token: str, problems: list[str], tier: str, mode: str, args: Any, ends_at: float
) -> dict[str, Any]:
    items = plan(problems, args.items, mode, tag=f"{tier}/")
    pacer = Pacer(
        None if args.budget_s is None else ends_at,
        first_wave=args.first_wave,
        lead_s=args.lead_s,
    )
    gpu = Utilisation()
    try:
        graded, batches = asyncio.run(send(base, token, tier, items, pacer))
        bodies, check = read_back(base, token, graded, batches)
        window = [g.posted_at for g in graded.values() if g.posted_at is not None]
        ends = [g.verdict_at for g in graded.values() if g.verdict_at is not None]
        busy = gpu.mean_between(min(window), max(ends)) if window and ends else None
    finally:
        gpu.stop()
    return {
        "tier": tier,
        "mode": mode,
        "items_planned": len(items),
        "sending": "all at once" if pacer.ends_at is None else f"paced, {args.lead_s:g} s ahead",
        **summarise(graded, bodies, busy),
        "batch_check": check,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000, help="candidates per tier")
    parser.add_argument("--tier", default="quick", help="quick, standard or thorough; a,b: both")
    parser.add_argument(
        "--mode", default="benchmark", choices=("benchmark", "leaderboard"),
        help="the mode of standard and thorough items (quick grades test mode)",
    )  # fmt: skip
    parser.add_argument(
        "--problems", nargs="+", default=list(DEFAULT_PROBLEMS),
        help="level-1 numbers (in --level1), KernelBench modules or folders of them",
    )  # fmt: skip
    parser.add_argument("--level1", type=Path, default=LEVEL1)
    parser.add_argument("--owner", choices=("organizer", "author"), default="organizer")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument(
        "--budget-s", type=float,
        help="the whole run's seconds: items are paced and stop being sent so that it ends "
        "within them, the tiers sharing what is left after the uploads",
    )  # fmt: skip
    parser.add_argument("--first-wave", type=int, default=10)
    parser.add_argument("--lead-s", type=float, default=30.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    tiers = args.tier.split(",")
    modules = problem_files(args.problems, args.level1)
    data_dir = Path(tempfile.mkdtemp(prefix="kj-batches-"))
    env = host_env(data_dir, args.device)
    admin = add_user(env, "organizer", admin=True)
    trainer = add_user(env, "trainer", author=args.owner == "author")
    results: dict[str, Any] = {
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "modules": [module.name for module in modules],
        "tiers": {},
    }
    try:
        with serving(env, data_dir / "serve.log") as base:
            began = time.monotonic()
            problems, refused = upload_all(
                base, admin if args.owner == "organizer" else trainer, modules
            )
            results |= {
                "problems": problems,
                "refused": refused,
                "validated_in_s": time.monotonic() - began,
            }
            print(json.dumps({k: results[k] for k in ("problems", "refused", "validated_in_s")}))
            assert problems, "no problem went live"
            results["device"] = httpx.get(
                f"{base}/api/v1/problems/{problems[0]}",
                headers={"Authorization": f"Bearer {trainer}"},
                timeout=30,
            ).json()["gpu_types"]
            budget_ends = BEGAN + (args.budget_s or 0) - WIND_DOWN_S
            for index, tier in enumerate(tiers):
                share = (budget_ends - time.monotonic()) / (len(tiers) - index)
                mode = "test" if tier == "quick" else args.mode
                ran = run_tier(base, trainer, problems, tier, mode, args, time.monotonic() + share)
                results["tiers"][tier] = ran
                print(summary_line(ran), flush=True)
    finally:
        results["provenance"] = provenance()
        if args.out:
            args.out.write_text(json.dumps(results, indent=1, default=str))
        print("-- serve log tail --\n" + (data_dir / "serve.log").read_text()[-1500:])
    for ran in results["tiers"].values():
        print(summary_line(ran))


def summary_line(ran: dict[str, Any]) -> str:
    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    wait, rate = ran["post_to_verdict_s"], ran["gradings_per_gpu_hour"]
    busy = ran["gpu_busy_fraction"]
    return (
        f"{ran['tier']} ({ran['mode']}): {ran['verdicts']}/{ran['items_sent']} verdicts of "
        f"{ran['items_planned']} planned in {s(ran['wall_s'])} s, "
        f"{'-' if rate is None else f'{rate:.0f}'} gradings per GPU-hour; POST to verdict "
        f"median {s(wait['median'])} s, p99 {s(wait['p99'])} s; grading median "
        f"{s(ran['grading_s']['median'])} s; GPU busy {'-' if busy is None else f'{busy:.1%}'}; "
        f"statuses {ran['statuses']}, error classes {ran['error_classes']}; unexpected "
        f"{ran['unexpected']}; exactly one verdict each: {ran['exactly_one_verdict']} "
        f"({ran['unfinished']} sent without a verdict by the budget's end)"
    )


if __name__ == "__main__":
    main()
