"""The audit log as the API returns it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel


class AuditEntryOut(BaseModel):
    id: int
    created_at: datetime
    actor: str
    actor_id: int | None
    action: str
    target_type: str
    target: str
    details: dict[str, Any]


class AuditLog(BaseModel):
    entries: list[AuditEntryOut]
    page: int
    per_page: int
    total: int
