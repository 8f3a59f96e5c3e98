"""The submitter's commands. Each prints tables for a person, or with ``--json`` exactly one
JSON document on stdout (the server's own body, numbers at full precision; on failure
``{"error", "detail", "http_status", ...}``); progress and errors go to stderr, one line
each. Exit codes: ``server.client.errors``."""

from __future__ import annotations

import functools
import io
import json
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.text import Text

from grader.report import PROFILE_FILE, Mode
from server.client import config, show
from server.client.api import Api
from server.client.errors import ClientError, ExitCode, NotLoggedIn, verdict_exit
from server.client.follow import Progress, describe, follow

PANEL = "Submitting to a server"
TEMPLATE = "submission.py"
PROFILE_MODE = Mode.PROFILE.value

JsonOption = Annotated[
    bool, typer.Option("--json", help="print one JSON document on stdout, and nothing else")
]
GpuOption = Annotated[
    str | None, typer.Option(help="device type, e.g. h200; default: the problem's first")
]
ProfileOutOption = Annotated[
    Path | None,
    typer.Option(
        "--profile-out",
        dir_okay=False,
        help="profile mode: write the Nsight Compute report (.ncu-rep) here, when the "
        "worker could make one",
    ),
]

Command = TypeVar("Command", bound=Callable[..., None])
Document = TypeVar("Document")


def print_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


def print_or_show(
    document: Document, as_json: bool, shown: Callable[[Console, Document], None]
) -> None:
    """The server's document as it came with --json; otherwise drawn for a person by `shown`."""
    if as_json:
        print_json(document)
    else:
        shown(show.console(), document)


def talks_to_server(command: Command) -> Command:
    """Turn a ClientError into one line on stderr (and with --json, its JSON document on
    stdout) and the error's exit code, with no traceback."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            command(*args, **kwargs)
        except ClientError as exc:
            if kwargs.get("as_json"):
                print_json(exc.to_json())
            show.console(stderr=True).print(Text.assemble(("error: ", "red"), exc.message))
            raise typer.Exit(exc.exit_code) from None

    return run  # type: ignore[return-value]


def api(login: config.Login) -> Api:
    errors = show.console(stderr=True)
    return Api(login, notify=lambda message: errors.print(Text(message, style="yellow")))


@talks_to_server
def login(
    url: Annotated[str, typer.Argument(help="the server, e.g. https://kernels.example.org")],
    token: Annotated[
        str | None,
        typer.Option(
            help="an API token from your account page; default: asked for, or read from "
            "stdin when it is not a terminal (safer than the command line, which others "
            "may see in the process list)"
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Store a server's URL and your API token, once the server accepts it.

    The file is readable only by you; KJ_URL and KJ_TOKEN, when set, win over it."""
    url = config.normalize_url(url)
    if token is None:
        if sys.stdin.isatty():
            token = str(typer.prompt("API token", hide_input=True))
        else:
            token = sys.stdin.readline()
    token = token.strip()
    if not token:
        raise NotLoggedIn("no token given: pass --token, or type or pipe it in")
    with api(config.Login(url, token)) as server:
        server.check_token()
    path = config.save(url, token)
    if as_json:
        print_json({"url": url, "path": str(path)})
        return
    errors = show.console(stderr=True)
    if url.startswith("http://") and not is_loopback(url):
        errors.print(
            Text(
                "warning: http:// sends your token unencrypted; prefer the server's https:// URL",
                style="yellow",
            )
        )
    show.console().print(Text(f"logged in to {url}; the token is stored in {path}"))


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


@talks_to_server
def problems(as_json: JsonOption = False) -> None:
    """The problems you can submit to."""
    with api(config.load()) as server:
        listed = server.problems()
    print_or_show(listed, as_json, show.problems)


@talks_to_server
def bundle(
    problem: Annotated[str, typer.Argument(help="the problem's name")],
    into: Annotated[
        Path, typer.Option(help="where to put the folder {problem}/", file_okay=False)
    ] = Path("."),
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="replace the problem's files in an existing folder (never your submission.py)",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Download a problem's folder, to grade with `kerneljudge grade`.

    It holds task.yml, task.py, utils.py and the problem's other files, the template as
    submission.py, and reference.py when the organizers made the reference public."""
    with api(config.load()) as server:
        archive = server.bundle(problem).content
    folder = into / problem
    written, kept = unpack(archive, problem, folder, force=force)
    reference = (folder / "reference.py").is_file()
    if as_json:
        print_json(
            {
                "problem": problem,
                "path": str(folder),
                "files": written,
                "kept": kept,
                "reference": reference,
            }
        )
        return
    out = show.console()
    out.print(Text(f"wrote {folder}/: {', '.join(written)}"))
    if kept:
        out.print(Text(f"kept your {', '.join(kept)}"))
    if reference:
        out.print(
            Text(
                f"grade locally (needs the grading install, with torch): kerneljudge grade "
                f"{folder}/ {folder / TEMPLATE} --device cpu"
            )
        )
    else:
        out.print(
            Text(
                "the organizers keep this problem's reference private, so it cannot be graded "
                f"locally: submit in test mode (kerneljudge submit FILE --problem {problem})"
            )
        )


def unpack(
    archive: bytes, problem: str, folder: Path, *, force: bool
) -> tuple[list[str], list[str]]:
    """Write the bundle's files under ``folder``; returns the files written and those kept.
    Every name must stay inside the folder; an existing folder is left alone without
    ``force``, and a submission.py in it is always kept."""
    try:
        members = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile as exc:
        raise ClientError(f"the server's bundle of {problem!r} is not a zip file") from exc
    if folder.exists() and not force:
        raise ClientError(f"{folder} exists already: remove it, or pass --force")
    files: dict[str, bytes] = {}
    for info in members.infolist():
        if info.is_dir():
            continue
        parts = PurePosixPath(info.filename).parts
        if len(parts) < 2 or parts[0] != problem or ".." in parts or info.filename.startswith("/"):
            raise ClientError(f"the bundle holds a file outside {problem}/: {info.filename!r}")
        files["/".join(parts[1:])] = members.read(info)
    written, kept = [], []
    for name, content in sorted(files.items()):
        target = folder.joinpath(*PurePosixPath(name).parts)
        if name == TEMPLATE and target.exists():
            kept.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("wb") as out:
            out.write(content)
        written.append(name)
    return written, kept


@talks_to_server
def submit(
    file: Annotated[
        Path, typer.Argument(help="your submission: a Python file defining custom_kernel")
    ],
    problem: Annotated[str, typer.Option("--problem", "-p", help="the problem's name")],
    mode: Annotated[str, typer.Option(help="test, benchmark, leaderboard or profile")] = "test",
    gpu: GpuOption = None,
    profile_out: ProfileOutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Submit a kernel and follow it to its verdict.

    Shows its place in the queue and expected wait, then the per-case table. Exits 0 only
    if it passed: 1 failed, 3 error, 4 timeout, 5 rejected, 6 refused by the server, 7
    server unreachable."""
    if profile_out is not None and mode != PROFILE_MODE:
        raise ClientError(
            f"--profile-out needs --mode {PROFILE_MODE}: only a profile run makes an Nsight "
            "Compute report"
        )
    try:
        code = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientError(f"cannot read {file}: {exc}") from exc
    login_ = config.load()
    errors = show.console(stderr=True)
    with api(login_) as server:
        accepted = server.submit(problem, code, mode, gpu)
        submission_id = int(accepted["id"])
        errors.print(
            Text(
                f"submitted {file.name} to {problem} in {mode} mode: submission {submission_id} "
                f"({login_.url}/submissions/{submission_id})"
            )
        )
        final = follow_or_interrupt(server, submission_id)
        if profile_out is not None:
            save_profile(server, final, profile_out)
    finish(final, as_json)


def follow_or_interrupt(server: Api, submission_id: int) -> dict[str, Any]:
    try:
        return follow(server, submission_id, Progress(show.console(stderr=True)))
    except KeyboardInterrupt:
        show.console(stderr=True).print(
            Text(
                f"stopped following; submission {submission_id} goes on: "
                f"kerneljudge status {submission_id} --wait"
            )
        )
        raise typer.Exit(ExitCode.INTERRUPTED) from None


def save_profile(server: Api, submission: dict[str, Any], path: Path) -> None:
    """Write the submission's Nsight Compute report to `path` when its report names one;
    otherwise say, on stderr, why there is none (the verdict's exit code stands)."""
    errors = show.console(stderr=True)
    if PROFILE_FILE not in (submission.get("files") or {}):
        errors.print(Text(f"no Nsight Compute report, so nothing written to {path}: "
                          f"{why_no_profile(submission)}", style="yellow"))  # fmt: skip
        return
    content = server.submission_file(int(submission["id"]), PROFILE_FILE)
    try:
        path.write_bytes(content)
    except OSError as exc:
        raise ClientError(f"cannot write {path}: {exc}") from exc
    errors.print(Text(f"wrote the Nsight Compute report ({len(content)} bytes) to {path}; "
                      f"open it with ncu-ui, or ncu --import {path}"))  # fmt: skip


def why_no_profile(submission: dict[str, Any]) -> str:
    if submission.get("mode") != PROFILE_MODE:
        return f"only profile mode makes one, and this is a {submission.get('mode')}-mode run"
    for case in submission.get("cases") or []:
        for profile in [case.get("profile"), *(case.get("rank_profiles") or [])]:
            why = (profile or {}).get("why_not_ncu")
            if why:
                return str(why)
    if submission.get("status") != "passed":
        return f"the grading ended {submission.get('status')} before its calls were profiled"
    return "the worker made none"


def finish(submission: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(submission)
    else:
        out = show.console()
        out.print(show.submission_heading(submission))
        show.report(out, submission)
    raise typer.Exit(verdict_exit(str(submission.get("status"))))


@talks_to_server
def status(
    submission_id: Annotated[int, typer.Argument(help="the submission's id", min=1)],
    wait: Annotated[
        bool, typer.Option("--wait", help="follow it to its verdict if it has none yet")
    ] = False,
    profile_out: ProfileOutOption = None,
    as_json: JsonOption = False,
) -> None:
    """A submission's status and report.

    Exits as submit does; 8 while it is still queued or running (without --wait)."""
    with api(config.load()) as server:
        if wait:
            submission = follow_or_interrupt(server, submission_id)
        else:
            submission = server.submission(submission_id)
        unfinished = submission.get("status") in ("queued", "running")
        if profile_out is not None and unfinished:
            show.console(stderr=True).print(Text(
                f"submission {submission_id} has no verdict yet, so nothing written to "
                f"{profile_out}: kerneljudge status {submission_id} --wait --profile-out "
                f"{profile_out}", style="yellow"))  # fmt: skip
        elif profile_out is not None:
            save_profile(server, submission, profile_out)
    if not wait and unfinished and not as_json:
        show.console().print(Text(describe(submission)))
        raise typer.Exit(ExitCode.UNFINISHED)
    finish(submission, as_json)


@talks_to_server
def leaderboard(
    problem: Annotated[str, typer.Argument(help="the problem's name")],
    gpu: GpuOption = None,
    limit: Annotated[
        int | None, typer.Option(min=1, max=1000, help="entries to show; default: 100")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """A problem's leaderboard: each competitor's best leaderboard-mode score."""
    with api(config.load()) as server:
        board = server.leaderboard(problem, gpu, limit)
    print_or_show(board, as_json, show.leaderboard)


@talks_to_server
def submissions(
    problem: Annotated[str | None, typer.Option(help="one problem's only")] = None,
    status: Annotated[
        str | None, typer.Option(help="those with this status only (passed, failed, ...)")
    ] = None,
    mode: Annotated[
        str | None, typer.Option(help="those in this mode only (test, benchmark, ...)")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, max=200, help="how many, newest first; default: 50")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Your own submissions, newest first (the web's My submissions)."""
    with api(config.load()) as server:
        listed = server.submissions(problem, limit, status, mode)
    print_or_show(
        listed, as_json, lambda out, page: show.submissions(out, page.get("submissions") or [])
    )


@talks_to_server
def standings(
    competition: Annotated[str, typer.Argument(help="the competition's name")],
    as_json: JsonOption = False,
) -> None:
    """A competition's standings: each team's total and its entry on each problem.

    While the board is frozen, your own team's row counts all of its submissions."""
    with api(config.load()) as server:
        board = server.standings(competition)
    print_or_show(board, as_json, show.standings)


COMMANDS: tuple[Callable[..., None], ...] = (
    login,
    problems,
    bundle,
    submit,
    status,
    leaderboard,
    submissions,
    standings,
)


def register(app: typer.Typer) -> None:
    from server.client.batch_commands import batch_app

    for command in COMMANDS:
        app.command(rich_help_panel=PANEL)(command)
    app.add_typer(batch_app, name="batch", rich_help_panel=PANEL)
