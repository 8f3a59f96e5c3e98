"""Adding problems (built-in ones on start, others from a folder) and reading them."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sqlalchemy.orm import Session

from grader.problem import Problem as GraderProblem
from grader.problem import ProblemError, builtin_problems, load_problem
from server.audit import service as audit
from server.devices import local_device
from server.errors import BadRequest, NotFound, PayloadTooLarge
from server.models import Problem, User, utcnow
from server.problems import archive, repository
from server.settings import Settings

PROBLEM_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,99}$")


def files_digest(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def upsert_problem(session: Session, loaded: GraderProblem, name: str | None = None) -> Problem:
    """Add a problem, or make a new version of it when its files changed."""
    name = (name or loaded.name).lower()
    if not PROBLEM_NAME.match(name):
        raise BadRequest(
            f"invalid problem name {name!r}: use lowercase letters, digits, '_' and '-'"
        )
    digest = files_digest(loaded.files)
    gpu_types = [str(gpu).lower() for gpu in loaded.spec.get("gpus", [])]
    problem = repository.get_problem(session, name)
    if problem is None:
        problem = Problem(
            name=name,
            description=loaded.description,
            files=loaded.files,
            files_sha256=digest,
            version=1,
            gpu_types=gpu_types,
            secret_seed=secrets.randbits(62),
        )
        session.add(problem)
    elif problem.files_sha256 != digest:
        problem.description = loaded.description
        problem.files = loaded.files
        problem.files_sha256 = digest
        problem.gpu_types = gpu_types
        problem.version += 1
        # A new version gets a new secret seed: ranked inputs never carry over.
        problem.secret_seed = secrets.randbits(62)
        problem.updated_at = utcnow()
    session.flush()
    return problem


def add_problem_from_archive(
    session: Session,
    settings: Settings,
    raw: bytes,
    filename: str,
    name: str | None,
    actor: User,
) -> tuple[Problem, bool]:
    """Unpack an uploaded archive and add its problem; returns it and whether it is new."""
    if len(raw) > settings.max_archive_bytes:
        raise PayloadTooLarge(f"the archive is over {settings.max_archive_bytes} bytes")
    with tempfile.TemporaryDirectory(prefix="kj-upload-") as scratch:
        root = Path(scratch)
        archive.unpack(raw, filename, root)
        folder = archive.find_problem_folder(root)
        before = current_version(session, name or folder.name)
        try:
            problem = add_problem_from_path(
                session, folder, name, actor=actor, source=f"archive {filename}"
            )
        except BadRequest as exc:
            # Name files as they are in the archive, not where the server unpacked them.
            raise BadRequest(exc.detail.replace(f"{root.resolve()}/", "")) from exc
    return problem, before is None


def add_problem_from_path(
    session: Session,
    path: Path,
    name: str | None = None,
    *,
    actor: User | None,
    source: str | None = None,
) -> Problem:
    """An admin's (or, with no actor, the command line's) add or update, written to the audit
    log: ``problem.add``, ``problem.update`` (a new version) or ``problem.unchanged``."""
    try:
        loaded = load_problem(path)
    except ProblemError as exc:
        raise BadRequest(str(exc)) from exc
    before = current_version(session, name or loaded.name)
    problem = upsert_problem(session, loaded, name)
    if before is None:
        action = "problem.add"
    elif problem.version != before:
        action = "problem.update"
    else:
        action = "problem.unchanged"
    audit.record(
        session,
        actor,
        action,
        target_type="problem",
        target=problem.name,
        details={
            "version": problem.version,
            "previous_version": before,
            "files_sha256": problem.files_sha256,
            "source": source or f"folder {path}",
        },
    )
    return problem


def sync_builtin_problems(session: Session) -> list[Problem]:
    return [upsert_problem(session, loaded) for loaded in builtin_problems()]


def get_visible_problem(session: Session, name: str, user: User | None) -> Problem:
    problem = repository.get_problem(session, name)
    if problem is None or (not problem.is_public and not (user and user.is_admin)):
        raise NotFound(f"no problem named {name!r}")
    return problem


def list_visible_problems(session: Session, user: User | None) -> Sequence[Problem]:
    return repository.list_problems(session, include_hidden=bool(user and user.is_admin))


def gpu_types_for(problem: Problem, settings: Settings) -> list[str]:
    """Device types a submission to this problem may ask for: the service's, narrowed to the
    problem's own list when it has one."""
    offered = settings.gpu_types or [local_device()[1]]
    if problem.gpu_types:
        return [gpu for gpu in offered if gpu in problem.gpu_types]
    return list(offered)


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
) -> Problem:
    """What organizers set on a problem besides its files; the audit log gets each setting
    that changed, before and after."""
    problem = repository.get_problem(session, name)
    if problem is None:
        raise NotFound(f"no problem named {name!r}")
    if deadline is not None and deadline.tzinfo is None:
        raise BadRequest("give the deadline with its time zone")
    before = settings_of(problem)
    problem.is_public = is_public
    problem.deadline = deadline
    problem.code_public_after_deadline = code_public_after_deadline
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


def settings_of(problem: Problem) -> dict[str, object]:
    """The organizer's settings as JSON values, for the audit log."""
    return {
        "is_public": problem.is_public,
        "deadline": problem.deadline.isoformat() if problem.deadline else None,
        "code_public_after_deadline": problem.code_public_after_deadline,
    }


def current_version(session: Session, name: str) -> int | None:
    problem = repository.get_problem(session, name.lower())
    return None if problem is None else problem.version
