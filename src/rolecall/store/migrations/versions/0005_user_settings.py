"""A person's web settings (issue #35): the pages' language and the offensive-text mask.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-28

Written by hand to mirror ``rolecall/store/models.py`` (``test_models_match_migrations``).
Existing accounts get the defaults: Korean, mask on.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ALTER TABLE on both engines (SQLite >= 3.35 drops a column itself): a batch
# migration would copy and drop ``users`` on SQLite, and dropping it cascades to the
# sessions, memberships and assignments that point at it.


def upgrade() -> None:
    op.add_column("users", sa.Column("language", sa.String(8), nullable=False, server_default="ko"))
    op.add_column(
        "users", sa.Column("mask", sa.Boolean(), nullable=False, server_default=sa.true())
    )


def downgrade() -> None:
    op.drop_column("users", "mask")
    op.drop_column("users", "language")
