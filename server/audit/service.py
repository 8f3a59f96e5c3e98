"""Recording admin actions and reading the log back a page at a time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from server.audit import repository
from server.errors import BadRequest
from server.models import AuditEntry, User

# Who acted when an action came from `kerneljudge` on the server rather than a signed-in admin.
CLI_ACTOR = "cli"
MAX_PER_PAGE = 200
# Pages past this would put the query's offset beyond what the database's integers hold.
MAX_PAGE = (2**63 - 1) // MAX_PER_PAGE


MAX_REASON_CHARS = 1000


def reason_of(action: str, reason: str | None, required_for: Sequence[str]) -> str | None:
    """A moderation's reason as an organizer gave it, trimmed (None for none): a BadRequest
    where the action needs one (its subject reads it) and none was given, or where it is
    over ``MAX_REASON_CHARS``."""
    reason = (reason or "").strip() or None
    if reason is None and action in required_for:
        raise BadRequest(f"give a reason to {action}: it is shown to whom it concerns")
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise BadRequest(f"the reason is over {MAX_REASON_CHARS} characters")
    return reason


def reason_for(session: Session, action: str, target_type: str, target: str) -> str | None:
    """The reason the latest such action on the target was given (None: none, or no such
    action): the audit log is where a moderation's reason is kept, and read back to show it
    to whom it concerns."""
    entry = repository.latest_entry(session, action, target_type, target)
    reason = entry.details.get("reason") if entry is not None else None
    return reason if isinstance(reason, str) else None


def happened(session: Session, action: str, target_type: str, target: str) -> bool:
    """Whether the log holds such an action on the target."""
    return repository.latest_entry(session, action, target_type, target) is not None


def record(
    session: Session,
    actor: User | None,
    action: str,
    *,
    target_type: str,
    target: str,
    details: dict[str, Any] | None = None,
) -> AuditEntry:
    """Add an entry to the caller's transaction: it is committed with the action or not at all."""
    entry = AuditEntry(
        actor_id=actor.id if actor is not None else None,
        actor_name=actor.name if actor is not None else CLI_ACTOR,
        action=action,
        target_type=target_type,
        target=target[:100],
        details=details or {},
    )
    repository.add_entry(session, entry)
    return entry


@dataclass(frozen=True)
class AuditPage:
    entries: Sequence[AuditEntry]
    page: int
    per_page: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.per_page))


def list_page(session: Session, page: int = 1, per_page: int = 50) -> AuditPage:
    """One page of the log, newest first; pages count from 1."""
    if not 1 <= page <= MAX_PAGE:
        raise BadRequest(f"page counts from 1 to {MAX_PAGE}")
    if not 1 <= per_page <= MAX_PER_PAGE:
        raise BadRequest(f"per_page is between 1 and {MAX_PER_PAGE}")
    entries = repository.list_entries(session, offset=(page - 1) * per_page, limit=per_page)
    return AuditPage(entries, page, per_page, repository.count_entries(session))
