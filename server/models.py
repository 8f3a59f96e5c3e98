"""The tables: users and their API tokens, problems and their validations, submissions with
their reports, their files and their earlier verdicts, batches and their callbacks, failed
log-ins, the audit log of admin actions, and competitions with their problems, teams and
members."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
    true,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from grader.report import Status

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    return datetime.now(UTC)


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on every database (SQLite stores no zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime: store times as UTC-aware datetimes")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class _NulFree(TypeDecorator[str]):
    """Text without NUL characters on every database: PostgreSQL refuses them where SQLite
    takes them, so a NUL that a submission's output or a request brings becomes U+FFFD when
    stored or compared (a name with one then matches nothing), on both alike."""

    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:
        return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


class NulFreeText(_NulFree):
    impl = Text
    cache_ok = True


class NulFreeString(_NulFree):
    """``String(length)``, without NUL characters."""

    impl = String
    cache_ok = True


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        dict[str, Any]: JSON,
        list[str]: JSON,
        list[Any]: JSON,
    }


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(NulFreeString(64), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # May add problems of its own through a token with the `author` scope: private to it,
    # its reference graded only in a sandbox (grader/untrusted.py). Admins grant it.
    is_author: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    password_hash: Mapped[str | None] = mapped_column(NulFreeString(255), default=None)
    # Where a password-reset link is mailed when the site can send mail; the user's own.
    email: Mapped[str | None] = mapped_column(NulFreeString(254), default=None)
    is_banned: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # False only for an account signed up on a site that asks for a verified address, until
    # its link is followed: it may not submit meanwhile.
    is_verified: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    # The invite code the user signed up with, so organizers can revoke a banned user's.
    invite_id: Mapped[int | None] = mapped_column(Integer, default=None)

    tokens: Mapped[list[ApiToken]] = relationship(back_populates="user")


# One user per name whatever its case: `ada` and `ADA` are the same name.
Index("uq_users_name_lower", func.lower(User.name), unique=True)


class ApiToken(Base):
    """A bearer token; only its SHA-256 is stored (tokens are 256-bit random, so no salt)."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(NulFreeString(64), unique=True)
    prefix: Mapped[str] = mapped_column(NulFreeString(16))
    label: Mapped[str] = mapped_column(NulFreeString(100), default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # What it may do (server.users.scopes.Scope), space-separated as OAuth writes scopes.
    scopes: Mapped[str] = mapped_column(NulFreeString(32), server_default="read submit")
    # After it the token is refused as expired; None: it lasts until revoked.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    user: Mapped[User] = relationship(back_populates="tokens")


class Problem(Base):
    __tablename__ = "problems"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(NulFreeString(100), unique=True)
    description: Mapped[str] = mapped_column(NulFreeText, default="")
    # The resolved problem folder (file name -> text): what a worker needs to grade.
    files: Mapped[dict[str, Any]] = mapped_column(JSON)
    files_sha256: Mapped[str] = mapped_column(NulFreeString(64))
    version: Mapped[int] = mapped_column(Integer, default=1)
    gpu_types: Mapped[list[str]] = mapped_column(JSON, default=list)
    secret_seed: Mapped[int] = mapped_column(BigInteger)
    is_public: Mapped[bool] = mapped_column(Boolean, default=True)
    # After the deadline leaderboard-mode submissions are refused.
    deadline: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Organizers may publish every submission's code once the deadline has passed.
    code_public_after_deadline: Mapped[bool] = mapped_column(Boolean, default=False)
    # Before it the problem is hidden from everyone but admins.
    starts_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # server.problems.validation.ProblemStatus: validating (its current version is being
    # validated on the workers), live or invalid; only a live problem is shown to
    # competitors and takes submissions.
    status: Mapped[str] = mapped_column(NulFreeString(16), default="live")
    # Which round of validation counts: results of an earlier round are kept, not applied.
    validation_attempt: Mapped[int] = mapped_column(Integer, default=0)
    # The live leaderboard ranks submissions made against this version or later: kept at 1
    # when updates carry the leaderboard over, moved to the new version when they archive it.
    leaderboard_from_version: Mapped[int] = mapped_column(Integer, default=1)
    # Example solutions shipped with the problem (path under the folder -> code), graded
    # when it is validated; never sent to competitors' gradings.
    solutions: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Counts every change to any of the problem's leaderboards (a validator for caches).
    leaderboard_revision: Mapped[int] = mapped_column(Integer, default=0)
    # A live problem's next version while the workers validate it (server/problems/versions.py):
    # its files, description, device types, example solutions and leaderboard choice. The
    # live version keeps serving until this one passes; None when there is none.
    candidate: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # A live problem's device types as the organizers last chose them, while the ones they
    # added are validated: {"gpu_types": [...], "added": [...]}. `gpu_types` changes to it
    # when the round ends, keeping of the added ones only those that passed; None otherwise.
    gpu_types_pending: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # Test mode's short limit for this version, in seconds by device type, as that type's
    # validation derived it from the reference's own test cases ({"cpu": 20.0}); a device
    # type without one (never validated, as the built-in problems) gets task.yml's
    # test_cases_timeout or the floor (grader/problem.py). None until a validation passes.
    test_cases_timeouts: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # How hard the organizers rate it (grader.problem.DIFFICULTIES: easy, medium, hard), from
    # task.yml's `difficulty` or the admin page; None: not rated.
    difficulty: Mapped[str | None] = mapped_column(NulFreeString(16), default=None)
    # The author whose own problem this is (None: an organizer's): seen and graded by it and
    # admins only, and its reference trusted no more than a submission, run in a sandbox of
    # its own in every validation and grading (grader/untrusted.py).
    owner_id: Mapped[int | None] = mapped_column(Integer, default=None, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ProblemValidation(Base):
    """One device type's validation of one version of a problem, in one round; its report
    comes back from a worker through the results step."""

    __tablename__ = "problem_validations"
    __table_args__ = (UniqueConstraint("problem_id", "attempt", "gpu_type"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[int] = mapped_column(
        ForeignKey("problems.id", ondelete="CASCADE"), index=True
    )
    problem_version: Mapped[int] = mapped_column(Integer)
    attempt: Mapped[int] = mapped_column(Integer)
    gpu_type: Mapped[str] = mapped_column(NulFreeString(32))
    # server.problems.validation.ValidationStatus: queued, then passed, failed or needs.
    status: Mapped[str] = mapped_column(NulFreeString(16), default="queued")
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    worker: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class Baseline(Base):
    """A problem version's baselines on one device type, timed by one worker: its reference
    as given ("eager") and torch.compile of it, graded in leaderboard mode like a submission
    (server/problems/baselines.py). Queued until the worker's report comes; then keyed by
    the machine that timed it (``machine``: its fingerprint without the GPU's UUID)."""

    __tablename__ = "baselines"
    __table_args__ = (UniqueConstraint("problem_id", "problem_version", "gpu_type", "machine"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[int] = mapped_column(
        ForeignKey("problems.id", ondelete="CASCADE"), index=True
    )
    problem_version: Mapped[int] = mapped_column(Integer)
    gpu_type: Mapped[str] = mapped_column(NulFreeString(32))
    # server.problems.baselines.BaselineStatus: queued, then timed.
    status: Mapped[str] = mapped_column(NulFreeString(16), default="queued")
    # grader.baselines.machine_key of the worker's fingerprint; None while queued.
    machine: Mapped[str | None] = mapped_column(NulFreeString(64), default=None)
    fingerprint: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # Each kind's score in seconds, or None with the reason it has none.
    eager_s: Mapped[float | None] = mapped_column(Float, default=None)
    eager_error: Mapped[str | None] = mapped_column(NulFreeText, default=None)
    compile_s: Mapped[float | None] = mapped_column(Float, default=None)
    compile_error: Mapped[str | None] = mapped_column(NulFreeText, default=None)
    # grader.baselines.BaselineReport, whole: both gradings' reports.
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    worker: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class Submission(Base):
    __tablename__ = "submissions"
    __table_args__ = (
        Index("ix_submissions_leaderboard", "problem_id", "gpu_type", "mode", "status"),
        # A queued submission's place in its device type's queue, asked at every poll.
        Index("ix_submissions_queue", "gpu_type", "status", "id"),
        Index("ix_submissions_started", "gpu_type", "started_at"),
        # A client's retry with the same Idempotency-Key finds the submission it made.
        UniqueConstraint("user_id", "idempotency_key"),
        # A batch's items by the client's own keys (server/batches/).
        Index("uq_submissions_batch_id_batch_key", "batch_id", "batch_key", unique=True),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"), index=True)
    problem_version: Mapped[int] = mapped_column(Integer)
    code: Mapped[str] = mapped_column(NulFreeText)
    code_sha256: Mapped[str] = mapped_column(NulFreeString(64), index=True)
    mode: Mapped[str] = mapped_column(NulFreeString(16))
    gpu_type: Mapped[str] = mapped_column(NulFreeString(32))
    # grader.report.Mode and grader.report.Status (queued, running, then a verdict).
    status: Mapped[str] = mapped_column(NulFreeString(16), default=Status.QUEUED.value)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    # Geometric mean of the benchmark cases' speed-of-light fractions, kept when recorded.
    sol_fraction: Mapped[float | None] = mapped_column(Float, default=None)
    # Its report's short_calls: a GPU score too short to rank finer than a few percent.
    short_calls: Mapped[bool] = mapped_column(Boolean, server_default=false())
    # Its report's ranks.scaled flag: cases graded on fewer ranks than the problem asks for.
    ranks_scaled: Mapped[bool] = mapped_column(Boolean, server_default=false())
    message: Mapped[str] = mapped_column(NulFreeText, default="")
    flags: Mapped[list[str]] = mapped_column(JSON, default=list)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # The client's Idempotency-Key, and a hash of what it asked for under it.
    idempotency_key: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)
    request_sha256: Mapped[str | None] = mapped_column(NulFreeString(64), default=None)
    worker: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)
    # Set by organizers; either one takes the submission off the leaderboard.
    is_hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    is_hacked: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # While it runs, where its grading stands as the worker last said (grader.report.Progress
    # as a dict); null before it starts and once it has a verdict.
    progress: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # A competition's final judging this run belongs to (a Judging's id): graded as any
    # leaderboard run, but kept off every board, user page and competition count.
    judging_id: Mapped[int | None] = mapped_column(Integer, default=None, index=True)
    # The batch it is an item of (a Batch's id) and its key there; null for one sent alone.
    batch_id: Mapped[int | None] = mapped_column(Integer, default=None, index=True)
    batch_key: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)

    user: Mapped[User] = relationship()
    problem: Mapped[Problem] = relationship()


class Batch(Base):
    """Submissions sent together by one token (a trainer's candidates): each item is an
    ordinary submission with the batch's id and the client's key for it."""

    __tablename__ = "batches"
    __table_args__ = (
        # A client's retry with the same Idempotency-Key finds the batch it made.
        UniqueConstraint("user_id", "idempotency_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    # The token that sent it: the cap on items in flight is per token.
    token_id: Mapped[int | None] = mapped_column(
        ForeignKey("api_tokens.id", ondelete="SET NULL"), default=None, index=True
    )
    tier: Mapped[str] = mapped_column(NulFreeString(16))
    idempotency_key: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)
    request_sha256: Mapped[str] = mapped_column(NulFreeString(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Where each item's verdict is POSTed, and the secret its signature is made with (given
    # to the client once, when the batch is accepted); null: no callbacks.
    callback_url: Mapped[str | None] = mapped_column(NulFreeString(2048), default=None)
    callback_secret: Mapped[str | None] = mapped_column(NulFreeString(64), default=None)


class CallbackDelivery(Base):
    """One item's verdict on its way to its batch's callback URL: the body as it was when
    the verdict was recorded, and how its delivery went (pending while neither delivered nor
    failed; server/batches/callbacks.py)."""

    __tablename__ = "callback_deliveries"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    batch_id: Mapped[int] = mapped_column(ForeignKey("batches.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(Integer)
    body: Mapped[dict[str, Any]] = mapped_column(JSON)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(NulFreeString(500), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    failed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class SubmissionVerdict(Base):
    """An earlier verdict of a submission that was graded again (an organizer's re-run): its
    grading's status, score, message and report as they stood, kept when the re-run reset
    the submission, so its history shows every verdict it had."""

    __tablename__ = "submission_verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    problem_version: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(NulFreeString(16))
    score: Mapped[float | None] = mapped_column(Float, default=None)
    sol_fraction: Mapped[float | None] = mapped_column(Float, default=None)
    message: Mapped[str] = mapped_column(NulFreeText, default="")
    flags: Mapped[list[str]] = mapped_column(JSON, default=list)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    worker: Mapped[str | None] = mapped_column(NulFreeString(200), default=None)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # When the re-run replaced it.
    replaced_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class SubmissionFile(Base):
    """A file a grading handed its author beside the report (profile mode's Nsight Compute
    report, grader.report.PROFILE_FILE), as a worker sent it: one per submission and name,
    read only to be downloaded."""

    __tablename__ = "submission_files"

    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(NulFreeString(64), primary_key=True)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    size: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(NulFreeString(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebSession(Base):
    """A browser's signed-in session: its cookie carries a random key whose hash is here, and
    it lasts until it is ended (logging out, "log out everywhere") or runs out, so a cookie
    copied or kept after logging out opens nothing."""

    __tablename__ = "web_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(NulFreeString(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # What the next page tells this browser after a form (server/web/notices.py): a message,
    # and a new API token shown that once; kept here, not in the cookie.
    notice: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)


class LoginAttempt(Base):
    """A failed log-in, kept in the database so the limit holds across API processes."""

    __tablename__ = "login_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_name: Mapped[str] = mapped_column(NulFreeString(64), index=True)
    address: Mapped[str] = mapped_column(NulFreeString(64), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class AuditEntry(Base):
    """One admin action: who did it, when, what, to what, with its details. Written in the
    transaction of the action itself, so the log holds exactly the actions that happened."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    # Null for the command line, which runs with the database's own rights.
    actor_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), index=True, default=None
    )
    # Kept as written, so the entry still says who acted if the user is renamed or removed.
    actor_name: Mapped[str] = mapped_column(NulFreeString(64))
    action: Mapped[str] = mapped_column(NulFreeString(64), index=True)
    target_type: Mapped[str] = mapped_column(NulFreeString(32))
    target: Mapped[str] = mapped_column(NulFreeString(100))
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)


class OutboxMessage(Base):
    """A job for the queue, written in the transaction that made it necessary, so it exists
    exactly when that change does. Sent after the commit (a grading once its device's queue
    has room, in fair order: server/outbox/dispatch.py), and sent again by the sweeper while
    its job is neither done nor held by the broker."""

    __tablename__ = "outbox"
    __table_args__ = (
        Index("ix_outbox_job_subject", "job", "subject_id"),
        Index("ix_outbox_dispatch", "queue", "done_at", "sent_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # The job's name (server.outbox.jobs.Job) and the id of the row it is about: a
    # submission to grade, a problem validation to run.
    job: Mapped[str] = mapped_column(NulFreeString(32))
    subject_id: Mapped[int] = mapped_column(Integer)
    queue: Mapped[str] = mapped_column(NulFreeString(32))
    # A grading's place in the fair order: whose it is, and its mode's priority (lower first).
    user_id: Mapped[int | None] = mapped_column(Integer, default=None)
    priority: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # When a worker said it started the job (a sent job not started yet waits in the broker).
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The last send: when, under which task id, and how many sends in all.
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    task_id: Mapped[str | None] = mapped_column(NulFreeString(64), default=None)
    sends: Mapped[int] = mapped_column(Integer, default=0)
    # Set when the job's result is recorded; the sweeper leaves it alone from then on.
    done_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None, index=True)
    # The GPUs a grading holds at once (a problem whose cases span ranks, on a GPU device
    # type: its largest world size; else 1): what it takes of its queue's room, and which
    # of the queue's sizes it is sent to (server/outbox/dispatch.py).
    gpus: Mapped[int] = mapped_column(Integer, default=1, server_default="1")


class LeaderboardEntry(Base):
    """A user's best passing leaderboard-mode submission on one version of a problem on one
    device type, kept up to date when reports are recorded and submissions moderated."""

    __tablename__ = "leaderboard_entries"
    __table_args__ = (
        UniqueConstraint("problem_id", "gpu_type", "problem_version", "user_id"),
        Index("ix_leaderboard_entries_rank", "problem_id", "gpu_type", "problem_version", "score"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"))
    gpu_type: Mapped[str] = mapped_column(NulFreeString(32))
    problem_version: Mapped[int] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), index=True
    )
    score: Mapped[float] = mapped_column(Float)
    sol_fraction: Mapped[float | None] = mapped_column(Float, default=None)
    short_calls: Mapped[bool] = mapped_column(Boolean, server_default=false())
    ranks_scaled: Mapped[bool] = mapped_column(Boolean, server_default=false())
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime)


class LeaderboardRecord(Base):
    """A moment the best score on one version of a problem on one device type improved: the
    points of the best-score-over-time chart."""

    __tablename__ = "leaderboard_records"
    __table_args__ = (
        Index("ix_leaderboard_records_board", "problem_id", "gpu_type", "problem_version", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id", ondelete="CASCADE"))
    gpu_type: Mapped[str] = mapped_column(NulFreeString(32))
    problem_version: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(UTCDateTime)
    score: Mapped[float] = mapped_column(Float)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    submission_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))


class GradingSlot(Base):
    """A grading slot a worker said is there to take jobs from a device queue: once as each
    pool process starts, again every few minutes while it lives, and with every job it
    starts. The dispatcher gives a queue as many GPUs' worth of jobs at once as it has slots
    seen lately, so a fresh or long-idle worker takes its share of the next burst."""

    __tablename__ = "grading_slots"

    worker: Mapped[str] = mapped_column(NulFreeString(200), primary_key=True)
    queue: Mapped[str] = mapped_column(NulFreeString(32), primary_key=True)
    seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # The GPUs its worker owns: the largest grading the slot takes. The slot itself brings
    # one GPU to its queue's room (a worker of several GPUs runs a pool process per GPU).
    gpus: Mapped[int] = mapped_column(Integer, default=1, server_default="1")


class PasswordReset(Base):
    """A one-time link that sets a user's password, made by an organizer (admin page or
    `kerneljudge user reset-link`): only its key's SHA-256 is kept; it works once, until
    it runs out, and a newer link for the same user ends it."""

    __tablename__ = "password_resets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(NulFreeString(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    issued_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # When it was used, or ended by a newer link; None while it still works.
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)

    user: Mapped[User] = relationship(foreign_keys=[user_id])


class Invite(Base):
    """An invite code that lets people sign up while sign-up asks for one: it serves
    ``max_uses`` sign-ups, until it expires or an organizer revokes it."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    code: Mapped[str] = mapped_column(NulFreeString(32), unique=True)
    note: Mapped[str] = mapped_column(NulFreeString(200), default="")
    max_uses: Mapped[int] = mapped_column(Integer, default=1)
    uses: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # None: it never expires.
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class EmailVerification(Base):
    """A one-time link mailed to the address a user signed up with: following it marks the
    account verified. Only its key's SHA-256 is kept; a newer link for the user ends it."""

    __tablename__ = "email_verifications"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(NulFreeString(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(NulFreeString(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # When it was followed, or ended by a newer link; None while it still works.
    ended_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)

    user: Mapped[User] = relationship()


class Competition(Base):
    """A competition over some problems on one device type: the fields of its file
    (server/competitions/schemas.py's CompetitionFile), editable until it opens."""

    __tablename__ = "competitions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # Its URL name: lowercase letters, digits and hyphens.
    name: Mapped[str] = mapped_column(NulFreeString(64), unique=True)
    title: Mapped[str] = mapped_column(NulFreeString(200))
    description: Mapped[str] = mapped_column(NulFreeText, default="")  # Markdown
    gpu_type: Mapped[str] = mapped_column(NulFreeString(32))
    opens_at: Mapped[datetime] = mapped_column(UTCDateTime)
    closes_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # From it until the final results are published, the public standings count only the
    # submissions made before it.
    freeze_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # server.competitions.scoring.Scoring.
    scoring: Mapped[str] = mapped_column(NulFreeString(32))
    # rank_points' points by rank (the first is rank 1's); None: 100 / rank.
    points_table: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    team_size: Mapped[int] = mapped_column(Integer)
    # Gradings of each entry at the final judging.
    final_runs: Mapped[int] = mapped_column(Integer)
    # The worker fingerprint the final judging expects (schemas.Pin's fields given); None:
    # no pin.
    pin: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # The queue its final judging's runs go to, taken by the workers of the pinned machines;
    # None: the GPU type's queue.
    judging_queue: Mapped[str | None] = mapped_column(NulFreeString(32), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    problems: Mapped[list[CompetitionProblem]] = relationship(
        order_by="CompetitionProblem.position", cascade="all, delete-orphan"
    )


class CompetitionProblem(Base):
    """One of a competition's problems, in the order its file lists them."""

    __tablename__ = "competition_problems"

    competition_id: Mapped[int] = mapped_column(
        ForeignKey("competitions.id", ondelete="CASCADE"), primary_key=True
    )
    problem_id: Mapped[int] = mapped_column(ForeignKey("problems.id"), primary_key=True, index=True)
    position: Mapped[int] = mapped_column(Integer)
    weight: Mapped[float] = mapped_column(Float, default=1.0)
    # The reference's time on the competition's device type, in seconds, as the organizers
    # set it: geomean_speedup's baseline, overriding the eager baseline a worker timed
    # (server/problems/baselines.py). None: the worker-timed one, where there is one.
    baseline_s: Mapped[float | None] = mapped_column(Float, default=None)

    problem: Mapped[Problem] = relationship()


class Team(Base):
    """A team in one competition (a competitor who entered alone is a team of one named
    after them); others join it with its invite code."""

    __tablename__ = "teams"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    competition_id: Mapped[int] = mapped_column(
        ForeignKey("competitions.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(NulFreeString(64))
    # 128 random bits (secrets.token_urlsafe): whoever holds it may join.
    invite_code: Mapped[str] = mapped_column(NulFreeString(32), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    # Set by an organizer: the team is shown last, unranked, with the reason.
    disqualified_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    disqualified_reason: Mapped[str | None] = mapped_column(NulFreeText, default=None)
    disqualified_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )

    members: Mapped[list[TeamMember]] = relationship(
        order_by="TeamMember.registered_at", cascade="all, delete-orphan"
    )


# One team per name in a competition whatever its case: `Fast` and `fast` are one name.
Index("uq_teams_competition_id_name_lower", Team.competition_id, func.lower(Team.name), unique=True)


class TeamMember(Base):
    """A user's place in a team. Joining registers: it accepts the competition's rules, and
    only the member's submissions made from then on count for the team."""

    __tablename__ = "team_members"
    # A user is in at most one team of a competition.
    __table_args__ = (UniqueConstraint("competition_id", "user_id"),)

    team_id: Mapped[int] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    # The team's competition, kept here so the constraint above can hold.
    competition_id: Mapped[int] = mapped_column(ForeignKey("competitions.id", ondelete="CASCADE"))
    registered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    user: Mapped[User] = relationship()


class Judging(Base):
    """A review set: submissions graded again as submissions of their own (its runs:
    JudgingRun), kept off every board until an organizer decides it as a whole. ``kind``
    ``final``: a competition's final judging, each entry graded ``runs`` times after the
    close; published, its judged entries (``entries``, stored then) are the final standings.
    ``rejudge``: an organizer's selection of submissions (``selection``, the filters as
    given) graded once each; applied, each run's verdict replaces its original's."""

    __tablename__ = "judgings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # server.competitions.schemas.Kind: final or rejudge.
    kind: Mapped[str] = mapped_column(NulFreeString(16), default="final", server_default="final")
    # A final judging's competition; None for a rejudge.
    competition_id: Mapped[int | None] = mapped_column(
        ForeignKey("competitions.id", ondelete="CASCADE"), index=True, default=None
    )
    # A rejudge's filters, as given (JSON-safe values).
    selection: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    runs: Mapped[int] = mapped_column(Integer)
    # server.competitions.schemas.Stored: running, published (a final judging), applied (a
    # rejudge) or discarded ("ready" is a running set whose runs are all graded, read from
    # them).
    status: Mapped[str] = mapped_column(NulFreeString(16))
    # Published: team id (as text) -> problem name -> the judged entry, as scoring.Entry's
    # fields in JSON; what the final standings rank.
    entries: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    created_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )
    decided_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    decided_by_id: Mapped[int | None] = mapped_column(
        ForeignKey("users.id", ondelete="SET NULL"), default=None
    )


class JudgingRun(Base):
    """One grading of a review set: a submission of its own (the original's author, problem
    and code), queued and recorded as any. ``entry_id`` is the submission graded again (a
    final judging's: the team's entry); ``team_id`` is None in a rejudge."""

    __tablename__ = "judging_runs"

    submission_id: Mapped[int] = mapped_column(
        ForeignKey("submissions.id", ondelete="CASCADE"), primary_key=True
    )
    judging_id: Mapped[int] = mapped_column(
        ForeignKey("judgings.id", ondelete="CASCADE"), index=True
    )
    team_id: Mapped[int | None] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), default=None
    )
    # The entry judged: the team's best counting submission to the problem at the close.
    entry_id: Mapped[int] = mapped_column(ForeignKey("submissions.id", ondelete="CASCADE"))

    submission: Mapped[Submission] = relationship(foreign_keys=[submission_id])
