"""Web app: login sessions, project members, chat provenance and save time.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23

Written by hand to mirror ``rolecall/store/models.py`` (``test_models_match_migrations``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _timestamp(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _fk(table: str, column: str, target: str, ondelete: str | None = None):
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "web_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("csrf_token", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        _timestamp("created"),
        _timestamp("expires"),
        sa.PrimaryKeyConstraint("id", name="pk_web_sessions"),
        sa.UniqueConstraint("token_hash", name="uq_web_sessions_token_hash"),
        _fk("web_sessions", "user_id", "users", ondelete="CASCADE"),
    )
    op.create_index("ix_web_sessions_user_id", "web_sessions", ["user_id"])
    op.create_table(
        "project_members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_project_members"),
        _fk("project_members", "project_id", "projects", ondelete="CASCADE"),
        _fk("project_members", "user_id", "users", ondelete="CASCADE"),
        sa.UniqueConstraint("project_id", "user_id", name="uq_project_members_project_id_user_id"),
    )
    op.create_index("ix_project_members_user_id", "project_members", ["user_id"])
    with op.batch_alter_table("chat_turns") as batch:
        batch.add_column(sa.Column("provenance", JSON, nullable=True))
    with op.batch_alter_table("chat_sessions") as batch:
        batch.add_column(_timestamp("saved", nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chat_sessions") as batch:
        batch.drop_column("saved")
    with op.batch_alter_table("chat_turns") as batch:
        batch.drop_column("provenance")
    op.drop_table("project_members")
    op.drop_table("web_sessions")
