"""A production install on this machine under the faults of docs/operations.md, shared by
tests/integration/test_faults.py and bench/faults.py: a PostgreSQL cluster and a Redis
server of its own, `kerneljudge serve` and grading workers, a careful client submitting
under Idempotency-Keys, the faults one after another, and the tally the database gives."""

from __future__ import annotations

import base64
import json
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy import Engine, create_engine, func, select
from sqlalchemy.pool import NullPool

from rig.cluster import (
    PostgresCluster,
    RedisServer,
    free_port,
    log_tail,
    postgres_cluster,
    redis_server,
)
from rig.processes import (
    REPO_ROOT,
    TERMINAL,
    add_user,
    kerneljudge,
    running,
    service_env,
    stop_group,
    wait_for_api,
)
from server.models import OutboxMessage, Submission
from server.outbox import task_names

# Short enough that a run of a few minutes sees every fault's recovery; the visibility
# timeout stays above a CPU grading (3-6 s on two cores, up to 20 s when other work
# shares them), or a live grading is handed out twice.
FAULT_SETTINGS = {
    "sweep_interval_s": "1",
    "sweep_grace_s": "3",
    "visibility_timeout_s": "30",
    "restore_interval_s": "2",
    "submission_rate_limit": "0",
}
PROBLEM = "vectoradd"
QUEUE = "cpu"  # the grade queue of a CPU worker
GRADE_TASK = task_names.GRADE
# A worker's log line for each grading it finished (and handed its report on).
GRADED = re.compile(r"Task kerneljudge\.grade\[[^]]+\] succeeded")
KERNEL = (REPO_ROOT / "problems" / PROBLEM / "solutions" / "pytorch.py").read_text()
STARTUP_TIMEOUT_S = 180.0
REQUEST_TIMEOUT_S = 10.0
# A careful client gives up on one submission only after this long.
GIVE_UP_S = 180.0
# Honoured, but a client waits no longer than this between tries.
MAX_RETRY_AFTER_S = 5.0
STUCK = ("queued", "running")


@dataclass(eq=False)  # each process is itself: hashed by identity
class Worker:
    """One `kerneljudge worker` process (its pool processes share its process group)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def graded_as(self, name: str) -> bool:
        """Whether a report's `worker` (host:main pid.slot) names a slot of this worker."""
        return name.rsplit(":", 1)[-1].split(".")[0] == str(self.process.pid)


@dataclass(frozen=True)
class Api:
    """One `kerneljudge serve` process: the API, its results step and its sweeper."""

    base: str
    process: subprocess.Popen[bytes]
    log: Path


@dataclass(frozen=True)
class Sample:
    """What the API said at one moment: /healthz, and a page that reads the database."""

    at: float
    status_code: int | None  # /healthz's; None: no answer
    status: str  # ok / degraded / unavailable, or the error that stood for an answer
    retry_after: str | None
    page_status_code: int | None
    page_retry_after: str | None


@dataclass
class Fault:
    """One fault as it struck: when, what the API said meanwhile, and what it hit."""

    name: str
    started: float  # wall clock, as the database's timestamps
    ended: float
    samples: list[Sample] = field(default_factory=list)
    # For a worker killed mid-grading: its submissions that were running then, each with
    # the grading process (host:pid) that the kill ended.
    victims: dict[int, str] = field(default_factory=dict)
    killed: list[str] = field(default_factory=list)
    # For a Redis restart: the grade jobs it held (waiting or taken) before and after.
    held_before: frozenset[str] = frozenset()
    held_after: frozenset[str] = frozenset()


@dataclass(eq=False)
class Install:
    """The running install: its servers, its processes' logs under ``logs``, the API's
    address, a user's token and a way into the database for the tally."""

    logs: Path
    postgres: PostgresCluster
    redis: RedisServer
    env: dict[str, str]
    stack: ExitStack
    token: str = field(default="", init=False)
    apis: list[Api] = field(default_factory=list, init=False)
    workers: list[Worker] = field(default_factory=list, init=False)
    started_workers: int = field(default=0, init=False)
    database_url: str = field(init=False)

    def __post_init__(self) -> None:
        self.database_url = self.env["KJ_DATABASE_URL"]

    def start_worker(self, queues: str | None = None) -> Worker:
        """A grading worker on this host's device type's queue, or on ``queues`` (as
        `kerneljudge worker --queues` takes them)."""
        self.started_workers += 1
        name = f"worker-{self.started_workers}"
        log = self.logs / f"{name}.log"
        argv = kerneljudge("worker", *(["--queues", queues] if queues else []))
        process = self.stack.enter_context(running(argv, self.env, log))
        worker = Worker(name, process, log)
        self.workers.append(worker)
        return worker

    @property
    def base(self) -> str:
        """The first API host's address: the one clients use."""
        return self.apis[0].base

    def start_api(self) -> Api:
        """A `serve` on the database and broker (a second one is a second API host, with
        its own results step and outbox sweeper); it answers once `wait_for_api` says so."""
        log = self.logs / ("serve.log" if not self.apis else f"serve-{len(self.apis) + 1}.log")
        port = free_port()
        argv = kerneljudge("serve", "--port", str(port))
        api = Api(
            f"http://127.0.0.1:{port}", self.stack.enter_context(running(argv, self.env, log)), log
        )
        self.apis.append(api)
        return api

    def kill_worker(self, worker: Worker) -> None:
        """SIGKILL to the worker and its grading processes, as a lost host ends them."""
        stop_group(worker.process, signal.SIGKILL)
        self.workers.remove(worker)

    def worker_holding(self, name: str) -> Worker | None:
        return next((worker for worker in self.workers if worker.graded_as(name)), None)

    def sample(self) -> Sample:
        """/healthz, then a leaderboard page as a browser asks for it."""
        health = self.get("/healthz")
        page = self.get(f"/leaderboards/{PROBLEM}", accept="text/html")
        return Sample(
            time.time(),
            health.status_code if isinstance(health, httpx.Response) else None,
            str(health.json().get("status")) if isinstance(health, httpx.Response) else health,
            health.headers.get("Retry-After") if isinstance(health, httpx.Response) else None,
            page.status_code if isinstance(page, httpx.Response) else None,
            page.headers.get("Retry-After") if isinstance(page, httpx.Response) else None,
        )

    def get(self, path: str, accept: str = "application/json") -> httpx.Response | str:
        """The response, or the name of the error that came instead."""
        try:
            return httpx.get(
                f"{self.base}{path}", headers={"Accept": accept}, timeout=REQUEST_TIMEOUT_S
            )
        except httpx.TransportError as exc:
            return type(exc).__name__

    @contextmanager
    def database(self) -> Iterator[Engine]:
        # No pool: a server that restarted between two queries is met with a new connection.
        engine = create_engine(self.database_url, poolclass=NullPool)
        try:
            yield engine
        finally:
            engine.dispose()


@contextmanager
def production_install(
    root: Path,
    *,
    workers: int,
    api_hosts: int = 1,
    appendonly: bool = False,
    dispatch_ahead: int = 0,
    settings: Mapping[str, str] | None = None,
) -> Iterator[Install]:
    """PostgreSQL, Redis, ``api_hosts`` `serve` processes and ``workers`` grading workers,
    each process's log under ``root/logs`` (the servers' copied there at the end);
    everything stopped afterwards. ``dispatch_ahead``: gradings sent to Redis beyond one per
    free worker (KJ_DISPATCH_AHEAD; 0, the default, keeps the rest in the outbox).
    ``settings``: KJ_ settings by their lower-case names, over FAULT_SETTINGS."""
    logs = root / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        postgres = stack.enter_context(postgres_cluster())
        broker = stack.enter_context(redis_server(appendonly=appendonly))
        # Registered after the servers, so it runs before they are removed with their folders.
        stack.callback(keep_logs, [postgres.log_path, broker.log_path], logs)
        env = service_env(
            root / "var",
            database_url=postgres.create_database("kerneljudge"),
            broker_url=broker.url(),
            dispatch_ahead=str(dispatch_ahead),
            **{**FAULT_SETTINGS, **(settings or {})},
        )
        install = Install(logs, postgres, broker, env, stack)
        # Migrates the database: the API hosts then start together, with nothing to migrate.
        install.token = add_user(env, "careful")
        # Each takes 10-20 s to start on two cores, so all start at once.
        for _ in range(workers):
            install.start_worker()
        for _ in range(api_hosts):
            install.start_api()
        for api in install.apis:
            wait_for_api(api.base, api.process, api.log, STARTUP_TIMEOUT_S)
        for worker in install.workers:
            wait_until_ready(worker)
        yield install


def keep_logs(paths: Sequence[Path], logs: Path) -> None:
    for path in paths:
        if path.exists():
            shutil.copy(path, logs / path.name)


def wait_until_ready(worker: Worker, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """Celery's "ready." line: the worker consumes from its queue."""
    wait_for_line(worker.log, " ready.", timeout_s, process=worker.process)


def wait_for_line(
    log: Path,
    text: str | re.Pattern[str],
    timeout_s: float,
    count: int = 1,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Until the log holds ``count`` lines matching ``text`` (a pattern, or plain text);
    fails at once if ``process``, the log's writer, exits."""
    pattern = text if isinstance(text, re.Pattern) else re.compile(re.escape(text))
    deadline = time.monotonic() + timeout_s
    while len(pattern.findall(log.read_text(errors="replace"))) < count:
        assert process is None or process.poll() is None, f"exited:\n{log_tail(log)}"
        assert time.monotonic() < deadline, f"no {pattern.pattern!r}:\n{log_tail(log)}"
        time.sleep(0.3)


@contextmanager
def tails_on_failure(logs: Path, chars: int = 4000) -> Iterator[None]:
    """On failure, print the end of every process's log (pytest shows it with the failure)."""
    try:
        yield
    except BaseException:
        for path in sorted(logs.glob("*.log")):
            print(f"\n===== {path.name} (last {chars} characters) =====\n{log_tail(path, chars)}")
        raise


# ---- the careful client ------------------------------------------------------------------


@dataclass
class Attempt:
    """One submission as its client saw it: every answer, then its 202 (or none)."""

    index: int
    key: str
    answers: list[str] = field(default_factory=list)  # "202", "503", "ConnectError", ...
    submission_id: int | None = None
    accepted_at: float | None = None  # wall clock
    # An answer no retry mends (a 500, a 4xx): its status and body.
    unexpected: str = ""
    retry_after_missing: int = 0  # 503s without a Retry-After


class Client:
    """Submits ``count`` submissions, one every ``pace_s``, each under an Idempotency-Key of
    its own, sending the same request with the same key again on a 503 (after its
    Retry-After), a connection error or a timeout, until it gets its 202."""

    def __init__(
        self, base: str, token: str, count: int, pace_s: float, kernel: str = KERNEL
    ) -> None:
        self.base = base
        self.kernel = kernel
        self.token = token
        self.count = count
        self.pace_s = pace_s
        self.attempts: list[Attempt] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.submit_all, name="careful-client", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def join(self, timeout_s: float) -> None:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "the client did not finish submitting in time"

    @property
    def accepted(self) -> list[Attempt]:
        return [a for a in self.attempts if a.submission_id is not None]

    def submit_all(self) -> None:
        began = time.monotonic()
        with httpx.Client(base_url=self.base, timeout=REQUEST_TIMEOUT_S) as http:
            for index in range(self.count):
                if self.stop.wait(max(0.0, began + index * self.pace_s - time.monotonic())):
                    return
                attempt = Attempt(index, str(uuid.uuid4()))
                self.attempts.append(attempt)
                self.submit_one(http, attempt)

    def submit_one(self, http: httpx.Client, attempt: Attempt) -> None:
        body = {"problem": PROBLEM, "code": f"{self.kernel}\n# {attempt.key}\n", "mode": "test"}
        headers = {"Authorization": f"Bearer {self.token}", "Idempotency-Key": attempt.key}
        give_up = time.monotonic() + GIVE_UP_S
        while time.monotonic() < give_up and not self.stop.is_set():
            try:
                response = http.post("/api/v1/submissions", json=body, headers=headers)
            except httpx.TransportError as exc:  # refused, reset, timed out
                attempt.answers.append(type(exc).__name__)
                self.stop.wait(1.0)
                continue
            attempt.answers.append(str(response.status_code))
            if response.status_code == 202:
                attempt.submission_id = int(response.json()["id"])
                attempt.accepted_at = time.time()
                return
            if response.status_code != 503:
                attempt.unexpected = f"{response.status_code} {response.text[:300]}"
                return
            self.stop.wait(retry_after_s(response, attempt))

    def answers(self) -> Counter[str]:
        return Counter(answer for attempt in self.attempts for answer in attempt.answers)


def retry_after_s(response: httpx.Response, attempt: Attempt) -> float:
    value = response.headers.get("Retry-After")
    if value is None or not value.isdigit():
        attempt.retry_after_missing += 1
        return 1.0
    return min(float(value), MAX_RETRY_AFTER_S)


# ---- the faults --------------------------------------------------------------------------


def kill_worker_mid_grading(install: Install, timeout_s: float = 120.0) -> Fault:
    """SIGKILL a worker while it grades, then start another in its place. Tries again
    (with the new worker among the others) if the grading ended just before the kill."""
    fault = Fault("worker killed mid-grading", time.time(), 0.0)
    deadline = time.monotonic() + timeout_s
    while not fault.victims:
        assert time.monotonic() < deadline, "no worker was seen grading to kill"
        grading = grading_now(install)
        worker = next(iter(grading), None)
        if worker is None:
            time.sleep(0.2)
            continue
        install.kill_worker(worker)
        fault.killed.append(worker.name)
        fault.victims = still_running(install, grading[worker])
        install.start_worker()
    fault.ended = time.time()
    return fault


def grading_now(install: Install) -> dict[Worker, dict[int, str]]:
    """The submissions each worker is grading, as the results step recorded their start,
    with the grading process's name."""
    with install.database() as engine, engine.connect() as connection:
        rows = connection.execute(
            select(Submission.id, Submission.worker).where(Submission.status == "running")
        ).all()
    grading: dict[Worker, dict[int, str]] = {}
    for submission_id, name in rows:
        worker = install.worker_holding(str(name))
        if worker is not None:
            grading.setdefault(worker, {})[submission_id] = str(name)
    return grading


def still_running(install: Install, graded: dict[int, str]) -> dict[int, str]:
    with install.database() as engine, engine.connect() as connection:
        ids = connection.scalars(
            select(Submission.id).where(
                Submission.id.in_(list(graded)), Submission.status == "running"
            )
        )
        return {submission_id: graded[submission_id] for submission_id in ids}


def redis_outage(install: Install, outage_s: float) -> Fault:
    """Redis stopped (with no append-only file its queues are gone) and started again."""
    kept = "with its append-only file" if install.redis.appendonly else "without persistence"
    fault = Fault(f"Redis down, restarted {kept}", time.time(), 0.0)

    def stop() -> None:
        with install.redis.client() as client:
            # Writes wait from here on, so the jobs read now are those the stop keeps.
            client.client_pause(10_000, all=False)
            fault.held_before = grade_jobs_held(client)
        install.redis.stop()

    def start() -> None:
        install.redis.start()
        with install.redis.client() as client:
            fault.held_after = grade_jobs_held(client)

    return outage(install, fault, stop, start, outage_s)


def postgres_outage(install: Install, outage_s: float) -> Fault:
    """A fast shutdown of PostgreSQL (sessions ended) and a start on the same data."""
    fault = Fault("PostgreSQL down", time.time(), 0.0)
    return outage(install, fault, install.postgres.stop, install.postgres.start, outage_s)


def outage(
    install: Install,
    fault: Fault,
    stop: Callable[[], None],
    start: Callable[[], None],
    outage_s: float,
) -> Fault:
    """Stop a server, ask the API once a second while it is away, start it again."""
    stop()
    deadline = time.monotonic() + outage_s
    while time.monotonic() < deadline:
        fault.samples.append(install.sample())
        time.sleep(max(0.0, min(1.0, deadline - time.monotonic())))
    start()
    fault.ended = time.time()
    return fault


def grade_jobs_held(client: redis.Redis) -> frozenset[str]:
    """The task ids of the grade jobs in the CPU queue or taken and not yet acknowledged
    (kombu's Redis transport: a list per queue, a hash of unacknowledged messages)."""
    messages = [json.loads(raw) for raw in client.lrange(QUEUE, 0, -1)]
    messages += [json.loads(raw)[0] for raw in client.hvals("unacked")]
    return frozenset(
        str(m["headers"]["id"]) for m in messages if m["headers"].get("task") == GRADE_TASK
    )


def grade_messages_per_submission(client: redis.Redis) -> Counter[int]:
    """How many grade messages wait in the CPU queue for each submission."""
    messages = [json.loads(raw) for raw in client.lrange(QUEUE, 0, -1)]
    return Counter(
        int(json.loads(base64.b64decode(m["body"]))[0][0])
        for m in messages
        if m["headers"].get("task") == GRADE_TASK
    )


FAULTS: dict[str, Callable[[Install, float], Fault]] = {
    "worker": lambda install, _outage_s: kill_worker_mid_grading(install),
    "redis": redis_outage,
    "postgres": postgres_outage,
}


def inject(install: Install, client: Client, faults: Sequence[str], outage_s: float) -> list[Fault]:
    """Each fault in turn, spread over the client's submitting: the first once a share of
    the submissions is accepted, so that jobs are queued and running when it strikes."""
    done = []
    for position, name in enumerate(faults, start=1):
        wait_for_accepted(client, position * client.count // (len(faults) + 2))
        done.append(FAULTS[name](install, outage_s))
        # Every fault meets an install that has recovered from the one before.
        wait_for_health(install, "ok")
    return done


def wait_for_accepted(client: Client, count: int) -> None:
    while len(client.accepted) < count and client.thread.is_alive():
        time.sleep(0.2)


def wait_for_health(install: Install, status: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while (sample := install.sample()).status != status:
        assert time.monotonic() < deadline, f"/healthz stayed {sample}"
        time.sleep(0.5)


def wait_for_verdicts(install: Install, ids: Sequence[int], timeout_s: float) -> float:
    """Until every one of these submissions has a terminal status, or the time is up;
    returns how long it took."""
    began = time.monotonic()
    pending = set(ids)
    while pending and time.monotonic() - began < timeout_s:
        with install.database() as engine, engine.connect() as connection:
            done = connection.scalars(
                select(Submission.id).where(
                    Submission.id.in_(pending), Submission.status.in_(TERMINAL)
                )
            )
            pending -= set(done)
        if pending:
            time.sleep(1.0)
    return time.monotonic() - began


# ---- a whole run ---------------------------------------------------------------------------


@dataclass
class Outcome:
    client: Client
    faults: list[Fault]
    tally: Tally
    drain_s: float  # from the client's last submission until every verdict was in


def run_scenario(
    install: Install,
    *,
    submissions: int,
    pace_s: float,
    faults: Sequence[str],
    outage_s: float,
    drain_timeout_s: float,
    kernel: str = KERNEL,
) -> Outcome:
    """The client submits while the faults strike one after another; then a bounded wait
    for every accepted submission's verdict, and the tally. ``kernel``: the code every
    submission sends (one that is slow to grade keeps jobs queued behind it)."""
    client = Client(install.base, install.token, submissions, pace_s, kernel)
    client.start()
    try:
        struck = inject(install, client, faults, outage_s)
        client.join(submissions * pace_s + GIVE_UP_S)
    except BaseException:
        client.stop.set()
        raise
    ids = [a.submission_id for a in client.accepted if a.submission_id is not None]
    drain_s = wait_for_verdicts(install, ids, drain_timeout_s)
    return Outcome(client, struck, tally(install, client), drain_s)


# ---- the tally ---------------------------------------------------------------------------


@dataclass
class Tally:
    """What the client saw and what the database holds, against the promises of
    docs/operations.md."""

    submitted: int
    accepted: int
    given_up: list[str]  # keys that never got a 202
    unexpected: list[str]  # answers no retry mends: "KEY: 500 ..."
    retry_after_missing: int
    client_answers: dict[str, int]
    rows_per_key_not_one: dict[str, int]  # accepted keys with no row or several
    rows_without_202: list[int]  # submissions whose key the client holds no 202 for
    ids_not_as_answered: list[int]  # the 202 named another submission than the key's row
    verdicts: dict[str, int]
    stuck: list[int]  # accepted, still queued or running
    seconds_to_verdict: dict[int, float]  # from the 202 to finished_at
    outbox_sent_twice: int
    outbox_not_done: int

    @property
    def recorded(self) -> int:
        return sum(self.verdicts.values())

    @property
    def slowest_s(self) -> float:
        return max(self.seconds_to_verdict.values(), default=0.0)

    @property
    def median_s(self) -> float:
        return statistics.median(self.seconds_to_verdict.values() or [0.0])

    def summary(self) -> dict[str, Any]:
        return {
            "submitted": self.submitted,
            "accepted": self.accepted,
            "recorded": self.recorded,
            "verdicts": self.verdicts,
            "duplicates": sum(n - 1 for n in self.rows_per_key_not_one.values() if n > 1),
            "accepted_without_row": sum(1 for n in self.rows_per_key_not_one.values() if n == 0),
            "rows_without_202": len(self.rows_without_202),
            "stuck": len(self.stuck),
            "slowest_202_to_verdict_s": round(self.slowest_s, 1),
            "median_202_to_verdict_s": round(self.median_s, 1),
            "client_answers": self.client_answers,
            "unexpected_answers": len(self.unexpected),
            "503_without_retry_after": self.retry_after_missing,
            "given_up": len(self.given_up),
            "outbox_sent_twice": self.outbox_sent_twice,
            "outbox_not_done": self.outbox_not_done,
        }


def tally(install: Install, client: Client) -> Tally:
    accepted = {a.key: a for a in client.accepted}
    with install.database() as engine, engine.connect() as connection:
        rows = connection.execute(
            select(
                Submission.id,
                Submission.idempotency_key,
                Submission.status,
                Submission.finished_at,
            )
        ).all()
        sent_twice = connection.scalar(
            select(func.count()).select_from(OutboxMessage).where(OutboxMessage.sends > 1)
        )
        not_done = connection.scalar(
            select(func.count()).select_from(OutboxMessage).where(OutboxMessage.done_at.is_(None))
        )
    per_key = Counter(row.idempotency_key for row in rows)
    return Tally(
        submitted=len(client.attempts),
        accepted=len(accepted),
        given_up=[a.key for a in client.attempts if a.submission_id is None and not a.unexpected],
        unexpected=[f"{a.key}: {a.unexpected}" for a in client.attempts if a.unexpected],
        retry_after_missing=sum(a.retry_after_missing for a in client.attempts),
        client_answers=dict(client.answers()),
        rows_per_key_not_one={k: per_key[k] for k in accepted if per_key[k] != 1},
        rows_without_202=[row.id for row in rows if row.idempotency_key not in accepted],
        ids_not_as_answered=[
            row.id
            for row in rows
            if row.idempotency_key in accepted
            and accepted[row.idempotency_key].submission_id != row.id
        ],
        verdicts=dict(Counter(row.status for row in rows if row.status in TERMINAL)),
        stuck=[row.id for row in rows if row.status in STUCK],
        seconds_to_verdict={
            row.id: row.finished_at.timestamp() - accepted_at
            for row in rows
            if row.finished_at is not None
            and row.idempotency_key in accepted
            and (accepted_at := accepted[row.idempotency_key].accepted_at) is not None
        },
        outbox_sent_twice=int(sent_twice or 0),
        outbox_not_done=int(not_done or 0),
    )


def gradings_run(install: Install) -> int:
    """Gradings the workers finished (one a kill cut short is not among them): more than
    the accepted submissions when jobs ran twice."""
    return sum(
        len(GRADED.findall(path.read_text(errors="replace")))
        for path in install.logs.glob("worker-*.log")
    )


def graded_by(install: Install, submission_id: int) -> str:
    """The grading process that the recorded report names (host:pid)."""
    with install.database() as engine, engine.connect() as connection:
        return str(
            connection.scalar(select(Submission.worker).where(Submission.id == submission_id))
        )
