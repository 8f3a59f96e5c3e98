"""The ``kerneljudge`` command line: serve, worker, grade, user add, invite create, list and
revoke, problem add, competition add, judge, judging, publish, discard and clones, rejudge
start, show, apply and discard, and the submitter's commands (login, submit, status,
problems, bundle, leaderboard, submissions, standings)."""

from __future__ import annotations

import atexit
import ctypes
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.text import Text

# Only the standard library, Typer, Rich and httpx at the top: the submitter's commands run
# on the light install (`pip install kerneljudge`), which has no torch, FastAPI, SQLAlchemy or
# Celery, and start in a fraction of a second. The other commands import what they need when
# they run: this module is the program's entry point and no module imports it, so an import
# inside a command costs that command alone.
from server.client import commands as submitter
from server.client import show
from server.devices import calibrate_local_device, local_device

if TYPE_CHECKING:
    from pydantic import BaseModel

    from server.models import Problem

PR_SET_PDEATHSIG = 1
GRADINGS_PER_PROCESS = 200

SERVER_PANEL = "Running a server"
app = typer.Typer(help="KernelJudge: a server for GPU kernel competitions.", no_args_is_help=True)
user_app = typer.Typer(help="Manage users.", no_args_is_help=True)
problem_app = typer.Typer(help="Manage problems.", no_args_is_help=True)
competition_app = typer.Typer(help="Manage competitions.", no_args_is_help=True)
app.add_typer(user_app, name="user", rich_help_panel=SERVER_PANEL)
app.add_typer(problem_app, name="problem", rich_help_panel=SERVER_PANEL)
app.add_typer(competition_app, name="competition", rich_help_panel=SERVER_PANEL)
invite_app = typer.Typer(
    help="Manage invite codes (sign-up asks for one with KJ_SIGNUP=invite).", no_args_is_help=True
)
app.add_typer(invite_app, name="invite", rich_help_panel=SERVER_PANEL)
rejudge_app = typer.Typer(
    help="Rejudge selected submissions: preview, then apply or discard.", no_args_is_help=True
)
app.add_typer(rejudge_app, name="rejudge", rich_help_panel=SERVER_PANEL)
submitter.register(app)

# An error is one line however long its path: never broken at the terminal's width.
err = Console(stderr=True, soft_wrap=True)

Command = TypeVar("Command", bound=Callable[..., None])
T = TypeVar("T")
JsonOption = Annotated[bool, typer.Option("--json", help="print the REST API's body")]
OWN_PACKAGES = frozenset({"server", "grader", "sandbox"})


def needs(extra: str) -> Callable[[Command], Command]:
    """A command that imports the server's or the grader's dependencies: on an install
    without them, say which one to make instead of showing an ImportError's traceback."""

    def wrap(command: Command) -> Command:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> None:
            try:
                command(*args, **kwargs)
            except ModuleNotFoundError as exc:
                if not exc.name or exc.name.split(".")[0] in OWN_PACKAGES:
                    raise
                name = command.__name__.replace("_", " ")
                err.print(
                    Text.assemble(
                        ("error: ", "red"),
                        f"`kerneljudge {name}` needs {exc.name}, which this install does not "
                        f"have: pip install 'kerneljudge[{extra}]'",
                    ),
                    soft_wrap=True,
                )
                raise typer.Exit(2) from None

        return run  # type: ignore[return-value]

    return wrap


def prepare_database() -> None:
    """Migrate to the newest schema and add or update the built-in problems."""
    from server.db import migrate, session_scope
    from server.leaderboards import upkeep
    from server.problems.service import sync_builtin_problems

    migrate()
    with session_scope() as session:
        sync_builtin_problems(session)
        # A database from before the leaderboard was kept up to date: fill it in once.
        upkeep.rebuild_if_empty(session)


# The callbacks worker's tries at once.
CALLBACK_TRIES_AT_ONCE = 8


def worker_argv(queues: list[str], *, grading: bool, concurrency: int, gpus: int = 1) -> list[str]:
    """Celery's arguments for a worker of these queues; a grading worker of `gpus` GPUs also
    takes, for each device queue, the queue of every size of grading up to `gpus`
    (server/outbox/task_names.py)."""
    from server.outbox.app import CALLBACKS_QUEUE, RESULTS_QUEUE
    from server.outbox.task_names import queues_taken

    name = f"kj-{'-'.join(queues)}-{os.getpid()}@%h"
    taken = [
        sized
        for queue in queues
        for sized in (
            [queue]
            if not grading or queue in (RESULTS_QUEUE, CALLBACKS_QUEUE)
            else queues_taken(queue, gpus)
        )
    ]
    # No gossip, mingle or heartbeat events: workers share nothing but the queues, and
    # those events only add broker traffic (and errors in the log at a broker's restart).
    argv = ["worker", "--queues", ",".join(taken), "-n", name, "--loglevel", "INFO"]
    argv += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
    if grading:
        # A pool process is the trusted harness for many gradings (each submission runs in a
        # runner of its own, started before its job arrives), replaced now and then so that
        # nothing it might accumulate lasts.
        argv += [
            "--pool",
            "prefork",
            "--concurrency",
            str(concurrency),
            "--max-tasks-per-child",
            str(GRADINGS_PER_PROCESS),
        ]
    elif queues == [CALLBACKS_QUEUE]:
        # A callback's try mostly waits on its receiver: threads let a slow one hold one.
        argv += ["--pool", "threads", "--concurrency", str(CALLBACK_TRIES_AT_ONCE)]
    else:
        argv += ["--pool", "solo"]
    return argv


@app.command(rich_help_panel=SERVER_PANEL)
@needs("server")
def worker(
    queues: Annotated[
        str | None,
        typer.Option(help="comma-separated queues; default: this host's device type"),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, help="gradings at once (default 1; with --gpus, one per GPU)"),
    ] = None,
    gpus: Annotated[
        int,
        typer.Option(
            min=1,
            help="GPUs this worker owns (those CUDA_VISIBLE_DEVICES names, else the host's "
            "first N): it takes gradings that hold up to N at once, one pool process per GPU",
        ),
    ] = 1,
) -> None:
    """Run a worker: grades submissions for this host's device (or, next to the API, records
    results with --queues results and sends batches' callbacks with --queues callbacks)."""
    from grader.calibrate import DevicePeaks
    from server.outbox import jobs
    from server.outbox.app import CALLBACKS_QUEUE, RESULTS_QUEUE, celery_app
    from server.settings import get_settings
    from server.worker import context

    service_queues = (RESULTS_QUEUE, CALLBACKS_QUEUE)
    names = [q.strip() for q in (queues or "").split(",") if q.strip()]
    # GPU indices in CUDA_VISIBLE_DEVICES then mean what nvidia-smi and the sandbox's
    # device-node selection mean by them (CUDA's default order is fastest first).
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    if not names or any(q not in service_queues for q in names):
        calibration = calibrate_local_device()
        device, peaks = calibration["device"], calibration["peaks"]
        names = names or [device["device_type"]]
        owned = owned_gpus(device["kind"], gpus, concurrency)
        if owned:
            # What nvidia-smi's hygiene baseline and the sandboxes see: this worker's GPUs.
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(owned)
            concurrency = gpus
        refuse_without_sandbox(device["kind"])
        baseline = gpu_baseline() if device["kind"] == "cuda" else None
        # Set once, before the pool forks: every grading process starts with it.
        context.start(
            context.GpuWorker(
                device["kind"],
                DevicePeaks.from_dict(peaks),
                baseline,
                queues=tuple(q for q in names if q not in service_queues),
                gpus=owned,
                lease_folder=lease_folder() if owned else None,
            )
        )
        err.print(
            f"grading on [bold]{device['name']}[/] ({device['kind']}); queues: "
            f"{', '.join(names)}; measured copy bandwidth {peaks['copy_bytes_per_s'] / 1e9:.0f} "
            f"GB/s, {peaks['matmul_dtype']} matmul {peaks['matmul_flops_per_s'] / 1e12:.1f} "
            "TFLOP/s"
        )
    grading = [q for q in names if q not in service_queues]
    if grading:
        # Imported once, before the pool forks its grading processes: each then starts with
        # torch and the grader loaded instead of importing them itself (about 1.3 s on a
        # CPU). Importing torch does not touch CUDA, so no pool process inherits a context.
        import server.worker.gpu
    if RESULTS_QUEUE in names:
        prepare_database()
        # The results step's tasks, and with them the services that say how the outbox
        # sends their jobs, before the sweeper's first pass.
        import server.worker.recorders  # noqa: F401

        # Next to the results step: jobs that never left, or that the broker lost, go again.
        jobs.start_sweeper(get_settings())
    celery_app.worker_main(
        worker_argv(names, grading=bool(grading), concurrency=concurrency or 1, gpus=gpus)
    )


def lease_folder() -> str:
    """A folder for the GPU lease of a worker of several GPUs, removed when the worker exits
    (its pool processes leave through os._exit, so only the main process removes it)."""
    folder = tempfile.mkdtemp(prefix="kj-gpus-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def owned_gpus(kind: str, gpus: int, concurrency: int | None) -> tuple[str, ...]:
    """The GPUs a worker started with `--gpus` owns where it owns several (none for one,
    which grades as it always has); stops the command where that cannot be."""
    from server.worker.lease import owned_gpus as named_gpus

    if gpus == 1:
        return ()
    if kind != "cuda":
        err.print("[red]error:[/] --gpus is for a GPU worker; a CPU worker owns no GPUs")
        raise typer.Exit(1)
    if concurrency is not None and concurrency != gpus:
        err.print(
            f"[red]error:[/] a worker of {gpus} GPUs runs one pool process per GPU; "
            "leave --concurrency out"
        )
        raise typer.Exit(1)
    try:
        return named_gpus(gpus, os.environ.get("CUDA_VISIBLE_DEVICES"))
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(1) from exc


def refuse_without_sandbox(kind: str) -> None:
    """A grading worker runs submissions only in the sandbox: test it once, or stop."""
    from grader.confine import check_sandbox

    problem = check_sandbox(kind)
    if problem:
        err.print(
            "[red]error:[/] this worker cannot isolate submissions, so it will not grade: "
            f"{problem}\n(see docs/security.md for what the sandbox needs)"
        )
        raise typer.Exit(1)


def gpu_baseline() -> tuple[int, ...] | None:
    """The GPU memory in use now, before any grading: every grading must leave it so."""
    from grader.hygiene import gpu_state, unclean

    state = gpu_state()
    if state is None:
        err.print("[yellow]warning:[/] nvidia-smi is missing: GPU hygiene is not checked")
        return None
    if state.compute_pids:
        err.print(f"[red]error:[/] the GPU is in use already: {unclean((), state)}")
        raise typer.Exit(1)
    return state.memory_used_mib


@app.command(rich_help_panel=SERVER_PANEL)
@needs("server")
def serve(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port to listen on")] = 8000,
    workers: Annotated[
        int, typer.Option(min=1, help="API processes (one per core the API may use)")
    ] = 1,
) -> None:
    """Serve the API and pages; also record results and send batches' callbacks, and with
    the embedded broker grade on this host, so one machine is a complete install."""
    import uvicorn

    from server.outbox.app import CALLBACKS_QUEUE, RESULTS_QUEUE
    from server.settings import get_settings

    settings = get_settings()
    prepare_database()
    if not settings.gpu_types:
        # This host's device type, found once before serving (a process that imports torch,
        # seconds): the API processes get it as KJ_GPU_TYPES, so no request waits for a probe.
        os.environ["KJ_GPU_TYPES"] = local_device()[1]
        get_settings.cache_clear()
        settings = get_settings()
    command = [sys.executable, "-m", "kerneljudge", "worker"]
    children = [
        start_child([*command, "--queues", RESULTS_QUEUE]),
        start_child([*command, "--queues", CALLBACKS_QUEUE]),
    ]
    if settings.broker_is_embedded:
        children.append(start_child(command))
    # uvicorn answers SIGTERM with a graceful shutdown and then raises the signal again:
    # raised here as an exit, it ends this process through the block below, which stops the
    # workers and waits for them, so once serve has exited nothing it started (a worker's
    # sandboxed runners included) holds the GPU any longer.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        uvicorn.run(
            "server.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            access_log=settings.access_log,
        )
    finally:
        # Reached on Ctrl-C and SIGTERM; where this process is killed outright, the children's
        # parent-death signal stops them instead.
        for child in children:
            child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def start_child(argv: list[str]) -> subprocess.Popen[bytes]:
    """A helper process that gets SIGTERM when this one dies, however it dies."""

    def die_with_parent() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    return subprocess.Popen(argv, preexec_fn=die_with_parent)


@app.command(rich_help_panel=SERVER_PANEL)
@needs("grade")
def grade(
    problem: Annotated[str, typer.Argument(help="problem folder or built-in problem name")],
    submission: Annotated[Path, typer.Argument(help="the submission's Python file")],
    mode: Annotated[str, typer.Option(help="test, benchmark, leaderboard or profile")] = "test",
    device: Annotated[
        str | None, typer.Option(help="cpu or cuda; default: cuda if present")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON report only")] = False,
    no_sandbox: Annotated[
        bool,
        typer.Option("--no-sandbox", help="run the submission unisolated: trusted code only"),
    ] = False,
) -> None:
    """Grade a submission locally, through the same harness and sandbox a worker uses.
    Exits 0 only if it passed."""
    from grader.harness import grade as grade_submission
    from grader.problem import ProblemError, load_problem
    from grader.report import Status
    from sandbox import SandboxUnavailable

    try:
        loaded = load_problem(problem)
        code = submission.read_text(encoding="utf-8")
    except (ProblemError, OSError, UnicodeDecodeError) as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    if device is None:
        device = local_device()[0]
    if no_sandbox:
        err.print(
            "[yellow]warning:[/] --no-sandbox: the submission runs with your user's rights, "
            "files and network; grade only code you trust this way"
        )
    try:
        report = grade_submission(loaded, code, mode=mode, device=device, isolate=not no_sandbox)
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}")
        raise typer.Exit(2) from exc
    except SandboxUnavailable as exc:
        err.print(f"[red]error:[/] cannot sandbox the submission: {exc}")
        raise typer.Exit(2) from exc
    result = report.to_dict()
    if as_json:
        sys.stdout.write(json.dumps(result) + "\n")
    else:
        show.report(show.console(), result)
    raise typer.Exit(0 if report.status == Status.PASSED else 1)


def in_unit_of_work(action: Callable[[Any], T]) -> T:
    """Run one command's action on the database (made ready first) in a unit of work; a
    refusal is printed as an error (exit 1)."""
    from server.db import session_scope
    from server.errors import KernelJudgeError

    prepare_database()
    try:
        with session_scope() as session:
            return action(session)
    except KernelJudgeError as exc:
        err.print(Text.assemble(("error: ", "red"), exc.detail), soft_wrap=True)
        raise typer.Exit(1) from exc


def echoed_as_json(body: BaseModel, as_json: bool) -> bool:
    """Print the REST API's body where --json asks for it; whether it did."""
    if as_json:
        typer.echo(body.model_dump_json(indent=2))
    return as_json


ScopeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--scope",
        help="what the token may do: read, submit, author (an author's only) or admin (an "
        "admin's only); repeat for more; default: all the user may",
    ),
]
ExpiresDaysOption = Annotated[
    int | None,
    typer.Option("--expires-days", help="the token stops working after this many days"),
]


@user_app.command("add")
@needs("server")
def user_add(
    name: Annotated[str, typer.Argument(help="the user's name")],
    admin: Annotated[bool, typer.Option("--admin", help="make the user an admin")] = False,
    author: Annotated[
        bool,
        typer.Option(
            "--author", help="the user may add problems of its own, private to it (`author` scope)"
        ),
    ] = False,
    password_stdin: Annotated[
        bool,
        typer.Option("--password-stdin", help="read a password for the web pages from stdin"),
    ] = False,
    scope: ScopeOption = None,
    expires_days: ExpiresDaysOption = None,
) -> None:
    """Create a user; the last line printed is a new API token (shown only once)."""
    from server.users.service import create_user, issue_token

    password = read_password() if password_stdin else None

    def create(session: Any) -> str:
        user = create_user(session, name, is_admin=admin, is_author=author, password=password)
        return issue_token(
            session,
            user,
            label="created by 'kerneljudge user add'",
            scope_names=scope,
            expires_days=expires_days,
        )

    token = in_unit_of_work(create)
    role = " ".join(kind for kind, on in (("admin", admin), ("author", author)) if on)
    err.print(f"created {role + ' ' if role else ''}user {name!r}; API token:")
    typer.echo(token)


@user_app.command("token")
@needs("server")
def user_token(
    name: Annotated[str, typer.Argument(help="the user's name")],
    label: Annotated[str, typer.Option(help="what the token is for")] = "created by the CLI",
    scope: ScopeOption = None,
    expires_days: ExpiresDaysOption = None,
) -> None:
    """Make another API token for a user; the last line printed is the token (shown once)."""
    from server.users.service import get_user, issue_token

    token = in_unit_of_work(
        lambda session: issue_token(
            session,
            get_user(session, name),
            label=label[:100],
            scope_names=scope,
            expires_days=expires_days,
        )
    )
    err.print(f"a new API token for {name!r}:")
    typer.echo(token)


def read_password() -> str:
    """One line from stdin, or a hidden prompt when stdin is a terminal."""
    if sys.stdin.isatty():
        return str(typer.prompt("password", hide_input=True, confirmation_prompt=True))
    return sys.stdin.readline().rstrip("\r\n")


@user_app.command("password")
@needs("server")
def user_password(name: Annotated[str, typer.Argument(help="the user's name")]) -> None:
    """Set a user's password for the web pages (read from stdin, or prompted for)."""
    from server.users.service import end_all_web_sessions, get_user, set_password

    password = read_password()

    def set_it(session: Any) -> None:
        user = get_user(session, name)
        set_password(user, password)
        # A new password signs the user out of every browser.
        end_all_web_sessions(session, user)

    in_unit_of_work(set_it)
    err.print(f"password of {name!r} set; their browsers are signed out")


@user_app.command("reset-link")
@needs("server")
def user_reset_link(
    name: Annotated[str, typer.Argument(help="the user's name")],
    url: Annotated[
        str, typer.Option(help="the site's address as the user reaches it")
    ] = "http://127.0.0.1:8000",
) -> None:
    """Print a one-time link that sets the user's password (it works for 24 hours; any
    earlier link stops working), to hand over without email."""
    from server.users import resets
    from server.users.service import get_user

    key = in_unit_of_work(lambda session: resets.issue(session, None, get_user(session, name)))
    print(f"{url.rstrip('/')}{resets.PATH}{key}")
    err.print(f"a one-time link for {name!r}: it works once, for 24 hours")


@invite_app.command("create")
@needs("server")
def invite_create(
    uses: Annotated[int, typer.Option("--uses", help="how many sign-ups the code serves")] = 1,
    expires_days: Annotated[
        int | None,
        typer.Option("--expires-days", help="the code stops working after this many days"),
    ] = None,
    note: Annotated[str, typer.Option("--note", help="who or what the code is for")] = "",
) -> None:
    """Make an invite code; the last line printed is the code."""
    from server.users import invites

    code = in_unit_of_work(
        lambda session: (
            invites.create(session, None, uses=uses, expires_days=expires_days, note=note).code
        )
    )
    lasting = f"for {expires_days} days" if expires_days else "until revoked"
    err.print(f"an invite code for {uses} sign-up{'s' if uses != 1 else ''}, {lasting}:")
    typer.echo(code)


@invite_app.command("list")
@needs("server")
def invite_list() -> None:
    """Every invite code, newest first: its uses, expiry, state and note."""
    from server.db import session_scope
    from server.users import invites

    prepare_database()
    with session_scope() as session:
        for invite in invites.list_invites(session):
            expires = f"{invite.expires_at:%Y-%m-%d %H:%M} UTC" if invite.expires_at else "never"
            typer.echo(
                f"{invite.code}  {invite.uses}/{invite.max_uses} used  expires {expires}  "
                f"{invites.state(invite)}  {invite.note}".rstrip()
            )


@invite_app.command("revoke")
@needs("server")
def invite_revoke(code: Annotated[str, typer.Argument(help="the invite code")]) -> None:
    """Revoke an invite code: no one signs up with it any more (its accounts stay)."""
    from server.users import invites

    revoked = in_unit_of_work(lambda session: invites.revoke(session, None, code).code)
    typer.echo(f"invite {revoked} revoked")


@problem_app.command("add")
@needs("server")
def problem_add(
    path: Annotated[Path, typer.Argument(help="a GPU MODE problem folder or KernelBench module")],
    name: Annotated[str | None, typer.Option(help="name; default: the folder's")] = None,
    leaderboard: Annotated[
        str,
        typer.Option(
            help="on a new version: carry_over (the leaderboard keeps earlier versions' rows) "
            "or archive (it starts empty; earlier versions' stay readable)"
        ),
    ] = "carry_over",
    hidden: Annotated[
        bool | None,
        typer.Option(
            "--hidden/--visible",
            help="hidden: only admins see it until a competition of its opens; default: a "
            "new problem is visible, an existing one keeps its setting",
        ),
    ] = None,
    starts_at: Annotated[
        str | None,
        typer.Option(
            help="competitors see it from then on, e.g. 2027-03-01T00:00:00Z (with its zone)"
        ),
    ] = None,
) -> None:
    """Add a problem, or a new version of it when its files changed. It goes live once a
    worker of each device type has validated it (`kerneljudge serve` or `worker` must run)."""
    from server.db import session_scope
    from server.problems import validation
    from server.problems.service import Opening, add_problem_from_path, opening_of
    from server.settings import get_settings

    settings = get_settings()

    def add(session: Any) -> tuple[Problem, datetime | None]:
        opening = Opening(hidden=hidden, starts_at=parse_moment(starts_at))
        problem = add_problem_from_path(
            session, settings, path, name, actor=None, leaderboard=leaderboard, opening=opening
        )
        return problem, opening_of(session, problem)

    problem, opens = in_unit_of_work(add)
    with session_scope() as session:
        rows = validation.current_round(session, problem)
    typer.echo(f"problem {problem.name!r} is at version {problem.version}")
    if opens is None:
        typer.echo("hidden: only admins see it until a competition of its opens")
    elif opens > datetime.now(UTC):
        typer.echo(f"opens at {opens:%Y-%m-%d %H:%M} UTC")
    if problem.status == validation.VALIDATING:
        gpus = ", ".join(row.gpu_type for row in rows)
        typer.echo(f"status: {problem.status}; validation queued for the {gpus} queue(s)")
    else:
        typer.echo(f"status: {problem.status}")


@problem_app.command("baseline")
@needs("server")
def problem_baseline(
    name: Annotated[str, typer.Argument(help="the problem's name")],
    gpu: Annotated[str | None, typer.Option(help="one device type; default: every one")] = None,
) -> None:
    """Time a problem's baselines: its reference as given and under torch.compile, graded by
    a worker of each device type in leaderboard mode like a submission. Leaderboards show
    them as marked rows, and every ranked score's speedup over them."""
    from server.problems.service import request_baselines
    from server.settings import get_settings

    asked = in_unit_of_work(
        lambda session: request_baselines(session, get_settings(), name, None, gpu)
    )
    typer.echo(f"baselines of {name!r} queued for the {', '.join(asked)} queue(s)")


def parse_moment(text: str | None) -> datetime | None:
    """A time given on the command line, with its zone."""
    from server.errors import BadRequest

    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise BadRequest(f"{text!r} is not a time (e.g. 2027-03-01T00:00:00Z)") from exc
    if moment.tzinfo is None:
        raise BadRequest(f"give {text!r} with its time zone (Z or +02:00)")
    return moment


@competition_app.command("add")
@needs("server")
def competition_add(
    file: Annotated[Path, typer.Argument(help="the competition's YAML file", dir_okay=False)],
) -> None:
    """Add a competition from its YAML file, or change the one of that name until it opens
    (docs/competitions.md shows the file)."""
    import yaml
    from pydantic import ValidationError

    from server.competitions import service
    from server.competitions.schemas import CompetitionFile, file_errors
    from server.settings import get_settings

    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        competition_file = CompetitionFile.model_validate(data)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        err.print(Text.assemble(("error: ", "red"), f"cannot read {file}: {exc}"), soft_wrap=True)
        raise typer.Exit(2) from exc
    except ValidationError as exc:
        err.print(Text.assemble(("error: ", "red"), f"{file} is not a competition file:"))
        err.print(Text(file_errors(exc)), soft_wrap=True)
        raise typer.Exit(2) from exc
    settings = get_settings()

    def save(session: Any) -> tuple[str, str, str]:
        competition, done = service.save_competition(
            session, settings, competition_file, actor=None
        )
        return competition.name, done, service.when(competition.opens_at)

    name, done, opens = in_unit_of_work(save)
    typer.echo(f"competition {name!r} {done}; it opens at {opens}")


@competition_app.command("judge")
@needs("server")
def competition_judge(
    name: Annotated[str, typer.Argument(help="the competition, closed")],
    runs: Annotated[
        int | None, typer.Option("--runs", help="gradings of each entry (default: final_runs)")
    ] = None,
) -> None:
    """Start the final judging of a closed competition: every team's entry per problem is
    graded again K times; prints the judging's id."""
    from server.competitions import judging

    def start(session: Any) -> str:
        started = judging.start(session, name, runs, actor=None)
        return f"{started.id}"

    typer.echo(in_unit_of_work(start))


@competition_app.command("judging")
@needs("server")
def competition_judging(
    name: Annotated[str, typer.Argument(help="the competition")],
    as_json: JsonOption = False,
) -> None:
    """The latest final judging: its state and the standings it would give beside the
    current ones (who moves, who now fails, each entry's K scores and their spread)."""
    from server.competitions import judging
    from server.competitions.judging_endpoints import judging_body

    def read(session: Any) -> Any:
        _, found = judging.latest(session, name)
        return judging_body(session, found)

    body = in_unit_of_work(read)
    if echoed_as_json(body, as_json):
        return
    typer.echo(
        f"judging {body.id} of {body.competition!r}: {body.status}, {body.graded} of "
        f"{body.total_runs} runs graded, K={body.runs}"
    )
    waiting = body.total_runs - body.graded
    if waiting:
        seen = (
            f"{body.queue_workers} grading slot{'s' if body.queue_workers != 1 else ''} seen "
            "on it lately"
            if body.queue_workers
            else f"no worker seen on it lately: start one with kerneljudge worker --queues "
            f"{body.queue}"
        )
        runs = "1 run waits" if waiting == 1 else f"{waiting} runs wait"
        typer.echo(f"  {runs} on queue {body.queue!r} ({seen})")
    for row in body.rows:
        typer.echo(
            f"  {row.team}: rank {row.rank_before} -> {row.rank_after}, total "
            f"{row.total_before} -> {row.total_after}"
        )
        for problem, entry in row.entries.items():
            scores = ", ".join("fail" if s is None else f"{s:.4g}" for s in entry.scores)
            spread = "" if entry.cv is None else f", cv {entry.cv:.1%}"
            verdict = "FAILS" if entry.fails else f"median {entry.median}"
            typer.echo(f"    {problem}: [{scores}] {verdict}{spread}")


@competition_app.command("publish")
@needs("server")
def competition_publish(name: Annotated[str, typer.Argument(help="the competition")]) -> None:
    """Publish the ready judging: its standings become the final results, for everyone."""
    from server.competitions import judging

    done = in_unit_of_work(lambda session: judging.publish(session, name, actor=None).id)
    typer.echo(f"judging {done} of {name!r} published: the standings are final")


@competition_app.command("discard")
@needs("server")
def competition_discard(name: Annotated[str, typer.Argument(help="the competition")]) -> None:
    """Discard the judging: kept with its verdicts, the standings unchanged."""
    from server.competitions import judging

    done = in_unit_of_work(lambda session: judging.discard(session, name, actor=None).id)
    typer.echo(f"judging {done} of {name!r} discarded; the standings are as they were")


@competition_app.command("clones")
@needs("server")
def competition_clones(
    name: Annotated[str, typer.Argument(help="the competition")],
    as_json: JsonOption = False,
) -> None:
    """Pairs of entries from different teams whose code is nearly the same (renamed,
    reformatted, commented), for an organizer to read; nothing is done about them."""
    from server.competitions.judging_endpoints import clones_body
    from server.settings import get_settings

    threshold = get_settings().clone_threshold
    body = in_unit_of_work(lambda session: clones_body(session, name, threshold))
    if echoed_as_json(body, as_json):
        return
    typer.echo(f"{len(body.pairs)} near-clone pairs in {body.competition!r} (at {threshold:.0%})")
    for pair in body.pairs:
        typer.echo(
            f"  {pair.problem}: {pair.similarity:.0%} {pair.first.team} "
            f"#{pair.first.submission_id} ~ {pair.second.team} #{pair.second.submission_id}"
        )


@rejudge_app.command("start")
@needs("server")
def rejudge_start(
    problem: Annotated[str | None, typer.Option("--problem", help="a problem's name")] = None,
    version: Annotated[
        int | None, typer.Option("--version", help="the problem version graded")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="passed, failed, error, timeout or rejected")
    ] = None,
    user: Annotated[str | None, typer.Option("--user", help="a user's name")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="submitted at or after (ISO 8601, with zone)")
    ] = None,
    until: Annotated[
        str | None, typer.Option("--until", help="submitted before (ISO 8601, with zone)")
    ] = None,
) -> None:
    """Grade the submissions the filters match again, apart from every board; prints the
    rejudge's id and how many were queued."""
    from server.errors import BadRequest
    from server.rejudges import service
    from server.settings import get_settings

    def start(session: Any) -> str:
        moments = {}
        for name, text in (("since", since), ("until", until)):
            try:
                moments[name] = parse_moment(text)
            except BadRequest as exc:
                raise BadRequest(f"--{name}: {exc.detail}") from exc
        selection = service.Selection(problem, version, status, user, **moments)
        started, count = service.start(session, get_settings(), selection, actor=None)
        return f"rejudge {started.id}: {count} submissions queued"

    typer.echo(in_unit_of_work(start))


@rejudge_app.command("show")
@needs("server")
def rejudge_show(
    rejudge_id: Annotated[int, typer.Argument(help="the rejudge's id")],
    as_json: JsonOption = False,
) -> None:
    """A rejudge's state and what applying it would change: each submission's status and
    score before and after, who now fails, who moves on a leaderboard."""
    from server.rejudges import service
    from server.rejudges.endpoints import rejudge_body

    body = in_unit_of_work(lambda session: rejudge_body(session, service.get(session, rejudge_id)))
    if echoed_as_json(body, as_json):
        return
    typer.echo(
        f"rejudge {body.id} {body.selection}: {body.status}, {body.graded} of {body.total} "
        f"graded, {body.changed} changed"
    )
    for change in body.changes:
        if not change.changed:
            continue
        note = " NOW FAILS" if change.now_fails else " now passes" if change.now_passes else ""
        typer.echo(
            f"  #{change.submission_id} {change.user} {change.problem}: {change.status_before} "
            f"{change.score_before} -> {change.status_after} {change.score_after}{note}"
        )
    for move in body.moves:
        typer.echo(
            f"  {move.problem} ({move.gpu}, v{move.version}) {move.user}: rank "
            f"{move.rank_before} -> {move.rank_after}"
        )


@rejudge_app.command("apply")
@needs("server")
def rejudge_apply(rejudge_id: Annotated[int, typer.Argument(help="the rejudge's id")]) -> None:
    """Apply a ready rejudge: each submission takes its new verdict, the old one kept."""
    from server.rejudges import service

    in_unit_of_work(lambda session: service.apply(session, rejudge_id, actor=None).id)
    typer.echo(f"rejudge {rejudge_id} applied")


@rejudge_app.command("discard")
@needs("server")
def rejudge_discard(rejudge_id: Annotated[int, typer.Argument(help="the rejudge's id")]) -> None:
    """Discard a rejudge: its runs kept, every verdict as it was."""
    from server.rejudges import service

    in_unit_of_work(lambda session: service.discard(session, rejudge_id, actor=None).id)
    typer.echo(f"rejudge {rejudge_id} discarded; every verdict is as it was")


if __name__ == "__main__":
    app()
