"""The audit log as the API returns it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


# Read from its row: AuditEntryOut.model_validate(entry).
class AuditEntryOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    created_at: datetime
    # The row keeps the actor's name as it was, should the user be renamed or deleted.
    actor: str = Field(validation_alias=AliasChoices("actor", "actor_name"))
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
