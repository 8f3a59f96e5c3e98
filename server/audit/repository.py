"""Queries for the audit log."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import AuditEntry


def add_entry(session: Session, entry: AuditEntry) -> None:
    session.add(entry)
    session.flush()


def list_entries(session: Session, *, offset: int, limit: int) -> Sequence[AuditEntry]:
    """Newest first."""
    return session.scalars(
        select(AuditEntry).order_by(AuditEntry.id.desc()).offset(offset).limit(limit)
    ).all()


def count_entries(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(AuditEntry)) or 0


def latest_entry(session: Session, action: str, target_type: str, target: str) -> AuditEntry | None:
    """The newest entry of this action on this target."""
    return session.scalar(
        select(AuditEntry)
        .where(
            AuditEntry.action == action,
            AuditEntry.target_type == target_type,
            AuditEntry.target == target,
        )
        .order_by(AuditEntry.id.desc())
        .limit(1)
    )
