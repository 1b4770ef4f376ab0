"""One-time form tokens already used (issue #34): a form sent twice has one effect.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27

Written by hand to mirror ``rolecall/store/models.py`` (``test_models_match_migrations``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "form_submissions",
        sa.Column("token", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("location", sa.Text(), nullable=True),
        sa.Column("created", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token", name="pk_form_submissions"),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name="fk_form_submissions_user_id_users",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_form_submissions_user_id", "form_submissions", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_form_submissions_user_id", table_name="form_submissions")
    op.drop_table("form_submissions")
