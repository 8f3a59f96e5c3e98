"""Adding problems (built-in ones on start, others from a folder, validated before they go
live), who may see them, and the settings organizers give them."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.orm import Session

from grader.problem import (
    BUILTIN_DIR,
    DIFFICULTIES,
    ProblemError,
    builtin_problems,
    example_solutions,
    load_problem,
)
from grader.problem import Problem as GraderProblem
from server.audit import service as audit
from server.devices import local_device
from server.errors import BadRequest, Conflict, Forbidden, NotFound, PayloadTooLarge
from server.models import Problem, User, utcnow
from server.problems import archive, baselines, repository, validation, versions
from server.settings import Settings

PROBLEM_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")
LIVE = validation.LIVE
# What happens to the leaderboard when a problem gets a new version.
CARRY_OVER = "carry_over"
ARCHIVE = versions.ARCHIVE
LEADERBOARD_CHOICES = (CARRY_OVER, ARCHIVE)


def files_digest(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def upsert_problem(
    session: Session,
    loaded: GraderProblem,
    name: str | None = None,
    *,
    solutions: dict[str, str] | None = None,
    leaderboard: str = CARRY_OVER,
    keep_live: bool = False,
) -> Problem:
    """Add a problem, or make a new version of it when its files changed. With ``archive``,
    the live leaderboard of a new version starts empty (earlier versions' stay readable);
    with ``carry_over`` it keeps earlier versions' rows. With ``keep_live``, a live
    problem's new version is staged (server/problems/versions.py): the live one serves
    until the new one is validated. A difficulty that task.yml gives is the problem's once
    files carrying it come (a new problem or version, staged or not); the organizers' choice
    on the admin page holds until then."""
    if leaderboard not in LEADERBOARD_CHOICES:
        raise BadRequest(
            f"unknown leaderboard choice {leaderboard!r}; use {' or '.join(LEADERBOARD_CHOICES)}"
        )
    name = (name or loaded.name).lower()
    if not PROBLEM_NAME.match(name):
        raise BadRequest(
            f"invalid problem name {name!r}: use lowercase letters, digits, '_' and '-'"
        )
    digest = files_digest(loaded.files)
    gpu_types = [str(gpu).lower() for gpu in loaded.spec.get("gpus", [])]
    problem = repository.get_problem(session, name)
    if (
        problem is not None
        and loaded.difficulty is not None
        and digest not in known_digests(problem)
    ):
        problem.difficulty = loaded.difficulty
    if problem is None:
        problem = Problem(
            name=name,
            difficulty=loaded.difficulty,
            description=loaded.description,
            files=loaded.files,
            files_sha256=digest,
            version=1,
            gpu_types=gpu_types,
            secret_seed=secrets.randbits(62),
            solutions=solutions or {},
        )
        session.add(problem)
    elif keep_live and problem.status == LIVE:
        versions.stage(problem, loaded, digest, gpu_types, solutions, leaderboard)
        session.flush()
        return problem
    elif problem.files_sha256 != digest:
        # A version staged against the files replaced here would go live after them.
        problem.candidate = None
        problem.description = loaded.description
        problem.files = loaded.files
        problem.files_sha256 = digest
        problem.gpu_types = gpu_types
        problem.version += 1
        # Test mode's limits were derived from the old version's reference.
        problem.test_cases_timeouts = None
        # A new version gets a new secret seed: ranked inputs never carry over.
        problem.secret_seed = secrets.randbits(62)
        problem.updated_at = utcnow()
        if leaderboard == ARCHIVE:
            problem.leaderboard_from_version = problem.version
    if solutions is not None and problem.solutions != solutions:
        problem.solutions = solutions
    session.flush()
    return problem


def known_digests(problem: Problem) -> set[str]:
    """The files digests of the problem's live version and of its staged one, if any."""
    staged = versions.staged(problem)
    return {problem.files_sha256} | ({staged.files_sha256} if staged is not None else set())


def add_problem_from_archive(
    session: Session,
    settings: Settings,
    raw: bytes,
    filename: str,
    name: str | None,
    actor: User,
    leaderboard: str = CARRY_OVER,
    opening: Opening | None = None,
    owner: User | None = None,
) -> tuple[Problem, bool]:
    """Unpack an uploaded archive and add its problem (with ``owner``, an author's own: see
    ``add_problem_from_path``), to be validated; returns it and whether it is new. Its
    validation is sent once the caller commits."""
    if len(raw) > settings.max_archive_bytes:
        raise PayloadTooLarge(f"the archive is over {settings.max_archive_bytes} bytes")
    with tempfile.TemporaryDirectory(prefix="kj-upload-") as scratch:
        root = Path(scratch)
        archive.unpack(raw, filename, root)
        folder = archive.find_problem_folder(root)
        before = current_version(session, name or folder.name)
        try:
            problem = add_problem_from_path(
                session,
                settings,
                folder,
                name,
                actor=actor,
                source=f"archive {filename}",
                leaderboard=leaderboard,
                opening=opening,
                owner=owner,
            )
        except BadRequest as exc:
            # Name files as they are in the archive, not where the server unpacked them.
            raise BadRequest(exc.detail.replace(f"{root.resolve()}/", "")) from exc
    return problem, before is None


def add_problem_from_path(
    session: Session,
    settings: Settings,
    path: Path,
    name: str | None = None,
    *,
    actor: User | None,
    source: str | None = None,
    leaderboard: str = CARRY_OVER,
    opening: Opening | None = None,
    owner: User | None = None,
) -> Problem:
    """An admin's (or, with no actor, the command line's) add or update, written to the audit
    log: ``problem.add``, ``problem.update`` (a new version) or ``problem.unchanged``. A new
    problem or version (or new example solutions) is not live until it has been validated;
    its validation is sent once the caller commits. ``opening`` hides or schedules it (its
    fields left None keep the problem's settings: a new problem is visible at once). With
    ``owner``, an author's own problem: hidden from everyone but it and the admins for
    good, its reference graded only in a sandbox (grader/untrusted.py); files the problem
    already has are not validated again."""
    opening = opening or Opening()
    try:
        loaded = load_problem(path)
    except ProblemError as exc:
        raise BadRequest(str(exc)) from exc
    before = current_version(session, name or loaded.name)
    previous = repository.get_problem(session, (name or loaded.name).lower())
    if owner is not None:
        check_author_may_add(session, settings, owner, previous, name or loaded.name)
        opening = Opening(hidden=True)
    # The newest version (a staged one, else the live one) before and after: what changed.
    newest_before = newest_state(previous) if previous is not None else None
    solutions = example_solutions(path) if path.is_dir() else {}
    problem = upsert_problem(
        session, loaded, name, solutions=solutions, leaderboard=leaderboard, keep_live=True
    )
    newest = versions.newest(problem)
    opening.apply(problem)
    if owner is not None:
        problem.owner_id = owner.id
    if before is None:
        action = "problem.add"
        problem.status = validation.VALIDATING  # nothing serves until it is validated
    elif newest_before is None or newest_state(problem)[:2] != newest_before[:2]:
        action = "problem.update"
    else:
        action = "problem.unchanged"
    if action != "problem.unchanged" or newest_state(problem) != newest_before:
        validation.start(session, problem, gpu_types_next(problem, settings))
    audit.record(
        session,
        actor,
        action,
        target_type="problem",
        target=problem.name,
        details={
            "version": newest.version,
            "previous_version": before,
            "files_sha256": newest.files_sha256,
            "source": source or f"folder {path}",
            "leaderboard": leaderboard if action == "problem.update" else None,
            "status": problem.status,
            "live_version": problem.version if problem.status == LIVE else None,
            "is_public": problem.is_public,
            "starts_at": problem.starts_at.isoformat() if problem.starts_at else None,
        },
    )
    return problem


def check_author_may_add(
    session: Session, settings: Settings, author: User, previous: Problem | None, name: str
) -> None:
    """Conflict for a name that is not the author's (an organizer's problem or another
    author's: a name says nothing of whose), Forbidden past the problems an author may have."""
    if previous is not None:
        if previous.owner_id != author.id:
            raise Conflict(f"the problem name {name.lower()!r} is taken; choose another")
        return
    held = repository.count_owned_problems(session, author.id)
    if held >= settings.max_problems_per_author:
        raise Forbidden(
            f"you have {held} problems, the most an author may have here "
            f"(KJ_MAX_PROBLEMS_PER_AUTHOR); add a version to one of them instead"
        )


def owns(user: User | None, problem: Problem) -> bool:
    """Whether `problem` is `user`'s own (an author's private problem)."""
    return user is not None and problem.owner_id is not None and problem.owner_id == user.id


@dataclass(frozen=True)
class Opening:
    """How an upload hides or schedules its problem: ``hidden`` (until a competition of its
    opens) and a start time; None keeps what the problem has."""

    hidden: bool | None = None
    starts_at: datetime | None = None

    def __post_init__(self) -> None:
        if self.starts_at is not None and self.starts_at.tzinfo is None:
            raise BadRequest("give the start time with its time zone (Z or +02:00)")

    def apply(self, problem: Problem) -> None:
        if self.starts_at is not None:
            if problem.deadline is not None and self.starts_at >= problem.deadline:
                raise BadRequest(
                    f"the start time must come before the deadline "
                    f"({problem.deadline:%Y-%m-%d %H:%M} UTC)"
                )
            problem.starts_at = self.starts_at.astimezone(UTC)
        if self.hidden is not None:
            problem.is_public = not self.hidden


def newest_state(problem: Problem) -> tuple[int, str, dict[str, str]]:
    """The newest version's number, files digest and example solutions."""
    newest = versions.newest(problem)
    return newest.version, newest.files_sha256, dict(newest.solutions or {})


# How hard each built-in problem is, for the lists' order (a newcomer starts at vectoradd).
# Kept here, not in their task.yml: its digest makes their versions, and a new version would
# move every install's leaderboards.
BUILTIN_DIFFICULTY = {
    "vectoradd": "easy",
    "vectorsum": "easy",
    "grayscale": "easy",
    "prefixsum": "medium",
    "histogram": "medium",
    "softmax": "medium",
    "rmsnorm": "medium",
    "matmul": "hard",
    "attention": "hard",
    "allreduce": "medium",
}


def sync_builtin_problems(session: Session) -> list[Problem]:
    """The built-in problems are graded in CI, so they are live without a validation round;
    an admin may still run one. An unrated one gets its difficulty from BUILTIN_DIFFICULTY
    (an organizer's choice on the admin page holds)."""
    synced = []
    for loaded in builtin_problems():
        before = current_version(session, loaded.name)
        problem = upsert_problem(
            session, loaded, solutions=example_solutions(BUILTIN_DIR / loaded.name)
        )
        if problem.version != before:
            problem.status = LIVE
        if problem.difficulty is None:
            problem.difficulty = BUILTIN_DIFFICULTY.get(problem.name)
        synced.append(problem)
    return synced


def is_admin(user: User | None) -> bool:
    return bool(user and user.is_admin)


def opens_at(problem: Problem, competition_opens_at: datetime | None) -> datetime | None:
    """When competitors first see the problem: a visible one at its start time (at once
    without one), and any one at the opening of its earliest competition, whichever comes
    first; None for a hidden problem in no competition (only admins ever see it). Hidden
    (``is_public`` off) thus means hidden until its competition opens. An author's own
    problem never opens: it is its author's and the admins' alone."""
    if problem.owner_id is not None:
        return None
    moments = [] if competition_opens_at is None else [competition_opens_at]
    if problem.is_public:
        moments.append(problem.starts_at or datetime.min.replace(tzinfo=UTC))
    return min(moments, default=None)


def opening_of(session: Session, problem: Problem) -> datetime | None:
    """``opens_at`` with the problem's competitions read from the database."""
    if problem.is_public and problem.starts_at is None and problem.owner_id is None:
        return datetime.min.replace(tzinfo=UTC)  # no competition makes it any earlier
    return opens_at(problem, repository.competition_openings(session, [problem.id]).get(problem.id))


def in_open_competition(session: Session, problem_ids: Sequence[int] | None = None) -> set[int]:
    """Which problems (of these, or of all) are in a competition open now."""
    return repository.in_open_competitions(session, utcnow(), problem_ids)


def frozen_since(session: Session, problem_ids: Sequence[int] | None = None) -> dict[int, datetime]:
    """The problems (of these, or of all) whose competition's public board is frozen now,
    each with its freeze time: their runs made since are their authors' and the organizers'
    until the final results are published."""
    return repository.frozen_since(session, utcnow(), problem_ids)


def opened(session: Session, problem: Problem) -> bool:
    """Whether the problem's start time or its competition's opening has come."""
    moment = opening_of(session, problem)
    return moment is not None and utcnow() >= moment


def shown_to_everyone(session: Session, problem: Problem) -> bool:
    """Competitors see a problem that is live and has opened (``opens_at``); admins see all."""
    return problem.status == LIVE and opened(session, problem)


def hidden_message(session: Session, problem: Problem, name: str) -> str:
    """Why a competitor cannot see the problem: its opening when one is coming (a scheduled
    problem is announced), else as if it did not exist."""
    moment = opening_of(session, problem)
    if problem.status == LIVE and moment is not None and utcnow() < moment:
        return f"problem {problem.name!r} opens at {moment:%Y-%m-%d %H:%M} UTC"
    return f"no problem named {name!r}"


def get_visible_problem(session: Session, name: str, user: User | None) -> Problem:
    problem = repository.get_problem(session, name)
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    if not (is_admin(user) or owns(user, problem) or shown_to_everyone(session, problem)):
        raise NotFound(hidden_message(session, problem, name))
    return problem


def get_problem_to_submit(session: Session, name: str, user: User) -> Problem:
    """The problem a submission is for. Competitors get 404 for a hidden problem or one that
    has not opened (saying when it opens, if it will), and 409 for one that is not live (its
    current version is being validated or failed validation); admins may try a problem
    before it opens."""
    problem = repository.get_problem(session, name, light=True)
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    if not (is_admin(user) or owns(user, problem) or opened(session, problem)):
        raise NotFound(hidden_message(session, problem, name))
    if problem.status != LIVE:
        raise Conflict(not_live_message(problem))
    return problem


def not_live_message(problem: Problem) -> str:
    if problem.status == validation.VALIDATING:
        return (
            f"problem {problem.name!r} (version {problem.version}) is being validated on the "
            "workers; it takes submissions once it is live"
        )
    return (
        f"problem {problem.name!r} (version {problem.version}) failed validation and takes no "
        "submissions until the organizers fix it"
    )


def list_visible_problems(session: Session, user: User | None) -> Sequence[Problem]:
    everything = repository.list_problems(session)
    if is_admin(user):
        return everything
    openings = openings_of(session, everything)
    now = utcnow()
    return [
        problem
        for problem in everything
        if owns(user, problem)
        or (
            problem.status == LIVE
            and (moment := openings[problem.id]) is not None
            and now >= moment
        )
    ]


def openings_of(session: Session, listed: Sequence[Problem]) -> dict[int, datetime | None]:
    """``opens_at`` of each problem (by id), its competitions read in one query."""
    competitions = repository.competition_openings(session, [problem.id for problem in listed])
    return {problem.id: opens_at(problem, competitions.get(problem.id)) for problem in listed}


def service_gpu_types(settings: Settings) -> list[str]:
    """The device types this service grades on."""
    return list(settings.gpu_types or [local_device()[1]])


def gpu_types_for(problem: Problem, settings: Settings) -> list[str]:
    """Device types a submission to this problem may ask for: the service's, narrowed to the
    problem's own list when it has one."""
    offered = service_gpu_types(settings)
    if problem.gpu_types:
        return [gpu for gpu in offered if gpu in problem.gpu_types]
    return list(offered)


def choose_gpu_type(problem: Problem, settings: Settings, gpu: str | None) -> str:
    """The device type a submission to the problem, or a read of its leaderboard, is on: the
    one asked for (in any case) when the problem is offered on it, the first one offered
    when none is asked for; else a BadRequest that names those offered."""
    offered = gpu_types_for(problem, settings)
    if gpu is None:
        if not offered:
            raise BadRequest(f"problem {problem.name!r} is not offered on any device type here")
        return offered[0]
    gpu = gpu.lower()
    if gpu not in offered:
        raise BadRequest(
            f"unknown GPU type {gpu!r} for problem {problem.name!r}; "
            f"available: {', '.join(offered) or 'none'}"
        )
    return gpu


def deadline_passed(problem: Problem) -> bool:
    return problem.deadline is not None and utcnow() >= problem.deadline


def update_settings(
    session: Session,
    admin: User,
    name: str,
    *,
    is_public: bool,
    deadline: datetime | None,
    code_public_after_deadline: bool,
    difficulty: str | None,
    starts_at: datetime | None = None,
    gpu_types: Sequence[str] | None = None,
    settings: Settings | None = None,
) -> Problem:
    """What organizers set on a problem besides its files; the audit log gets each setting
    that changed, before and after. New device types (`gpu_types`, from the service's,
    with `settings`) start a validation round on them, sent once the caller commits."""
    problem = repository.get_problem(session, name)
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    if deadline is not None and deadline.tzinfo is None:
        raise BadRequest("give the deadline with its time zone")
    if starts_at is not None and starts_at.tzinfo is None:
        raise BadRequest("give the start time with its time zone")
    if starts_at is not None and deadline is not None and starts_at >= deadline:
        raise BadRequest("the start time must come before the deadline")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise BadRequest(f"choose a difficulty among {', '.join(DIFFICULTIES)}, or none")
    before = settings_of(problem)
    if gpu_types is not None:
        assert settings is not None, "device types are checked against the service's"
        offer_on_gpu_types(session, problem, gpu_types, settings)
    problem.is_public = is_public
    problem.starts_at = starts_at
    problem.deadline = deadline
    problem.code_public_after_deadline = code_public_after_deadline
    problem.difficulty = difficulty
    after = settings_of(problem)
    changes = {key: [before[key], after[key]] for key in after if before[key] != after[key]}
    audit.record(
        session,
        admin,
        "problem.settings",
        target_type="problem",
        target=problem.name,
        details={"changes": changes},
    )
    session.flush()
    return problem


def offer_on_gpu_types(
    session: Session, problem: Problem, gpu_types: Sequence[str], settings: Settings
) -> None:
    """Offer the problem on these of the service's device types (organizers choosing the
    set; `choose_gpu_type` picks one of it for a submission); a changed set starts a
    validation round on it."""
    known = service_gpu_types(settings)
    unknown = [gpu for gpu in gpu_types if gpu not in known]
    if unknown or not gpu_types:
        raise BadRequest(
            f"choose device types among this service's: {', '.join(known)}"
            + (f" ({', '.join(unknown)} is not one)" if unknown else "")
        )
    offered_before = gpu_types_for(problem, settings)
    if set(gpu_types) == set(gpu_types_next(problem, settings)):
        return
    # The form shows only this service's device types: the problem's others stay listed.
    elsewhere = [gpu for gpu in problem.gpu_types or [] if gpu not in known]
    chosen = [gpu for gpu in known if gpu in gpu_types] + elsewhere
    added = [gpu for gpu in known if gpu in gpu_types and gpu not in offered_before]
    versions.set_gpu_types(problem, chosen)
    if problem.status == LIVE and added:
        # Competitors are offered a new device type once the problem validated on it; the
        # live problem keeps its device types meanwhile (server/problems/validation.py).
        problem.gpu_types_pending = {"gpu_types": chosen, "added": added}
        validation.start(session, problem, gpu_types_next(problem, settings))
        return
    problem.gpu_types = chosen
    problem.gpu_types_pending = None
    offered = gpu_types_for(problem, settings)
    if offered != offered_before:
        validation.start(session, problem, offered)


def gpu_types_next(problem: Problem, settings: Settings) -> list[str]:
    """The device types the problem's next validation round runs on: its staged version's,
    else the organizers' latest choice (device types they added are not offered before it
    passes on them), else those it is offered on."""
    staged = versions.staged(problem)
    if staged is not None:
        return gpu_types_for(staged, settings)
    pending = problem.gpu_types_pending
    if pending:
        known = service_gpu_types(settings)
        return [gpu for gpu in known if gpu in pending["gpu_types"]]
    return gpu_types_for(problem, settings)


def settings_of(problem: Problem) -> dict[str, object]:
    """The organizer's settings as JSON values, for the audit log."""
    return {
        "is_public": problem.is_public,
        "starts_at": problem.starts_at.isoformat() if problem.starts_at else None,
        "deadline": problem.deadline.isoformat() if problem.deadline else None,
        "code_public_after_deadline": problem.code_public_after_deadline,
        "gpu_types": list(problem.gpu_types or []),
        "difficulty": problem.difficulty,
    }


def current_version(session: Session, name: str) -> int | None:
    problem = repository.get_problem(session, name.lower())
    return None if problem is None else problem.version


def request_baselines(
    session: Session, settings: Settings, name: str, actor: User | None, gpu: str | None = None
) -> list[str]:
    """An organizer asks for the live version's baselines (server/problems/baselines.py) on
    one device type, or on every one it is offered on; sent once the caller commits, and
    written to the audit log as ``problem.baseline``. Returns the device types asked."""
    problem = repository.get_problem(session, name, for_update=True)
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    offered = gpu_types_for(problem, settings)
    if gpu is not None and gpu not in offered:
        raise BadRequest(
            f"problem {name!r} is not offered on {gpu!r} (it is on {', '.join(offered) or 'none'})"
        )
    asked = [gpu] if gpu is not None else offered
    baselines.request(session, problem, asked)
    audit.record(
        session, actor, "problem.baseline", target_type="problem", target=problem.name,
        details={"version": problem.version, "gpu_types": asked},
    )  # fmt: skip
    return asked


def rerun_validation(session: Session, settings: Settings, name: str, admin: User) -> Problem:
    """An admin's new validation round for the problem's newest version (a staged one, if
    any), written to the audit log as ``problem.validate``, sent once the caller commits. A
    live problem keeps serving its live version meanwhile; one that is not live stays
    closed until the round ends clean."""
    problem = repository.get_problem(session, name, for_update=True)
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    before = problem.status
    validation.start(session, problem, gpu_types_next(problem, settings))
    audit.record(
        session,
        admin,
        "problem.validate",
        target_type="problem",
        target=problem.name,
        details={
            "version": versions.newest_version(problem),
            "attempt": problem.validation_attempt,
            "status_before": before,
        },
    )
    return problem
