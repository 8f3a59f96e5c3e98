"""token scopes and expiry: each API token's `scopes` (read, submit, admin, space-separated)
and `expires_at` (null: none). Tokens made before keep what they could do: read and submit,
and admin where their user is an admin.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 07:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "api_tokens",
        sa.Column("scopes", sa.String(32), nullable=False, server_default="read submit"),
    )
    op.add_column("api_tokens", sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True))
    op.execute(
        "UPDATE api_tokens SET scopes = 'read submit admin' "
        "WHERE user_id IN (SELECT id FROM users WHERE is_admin)"
    )


def downgrade() -> None:
    op.drop_column("api_tokens", "expires_at")
    op.drop_column("api_tokens", "scopes")
