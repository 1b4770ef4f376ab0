"""Initial schema: users, projects, items, assignments, annotations, chat sessions/turns.

Revision ID: 0001
Revises:
Create Date: 2025-01-01

Written by hand to mirror ``rolecall/store/models.py`` as of this revision (the test
``test_models_match_migrations`` checks the two agree). Constraint names are spelled out
because ``op.create_table`` does not apply the models' naming convention. Enumerations
are VARCHAR + CHECK, the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Frozen copies of the model types: a migration must not change when models.py does.
JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _timestamp(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def _choice(table: str, column: str, values: tuple[str, ...]) -> sa.CheckConstraint:
    allowed = ", ".join(f"'{v}'" for v in values)
    return sa.CheckConstraint(f"{column} IN ({allowed})", name=f"ck_{table}_{column}")


def _fk(table: str, column: str, target: str, ondelete: str | None = None):
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("username", sa.String(64), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("username", name="uq_users_username"),
        _choice("users", "role", ("admin", "annotator")),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("settings", JSON, nullable=False),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_projects"),
        sa.UniqueConstraint("name", name="uq_projects_name"),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("source", sa.Text(), nullable=True),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_items"),
        _fk("items", "project_id", "projects", ondelete="CASCADE"),
        _choice("items", "kind", ("dialogue", "pair", "bot_turn")),
    )
    op.create_index("ix_items_project_id_kind", "items", ["project_id", "kind"])
    _create_labelling_tables()
    _create_chat_tables()


def _create_labelling_tables() -> None:
    op.create_table(
        "assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_assignments"),
        _fk("assignments", "item_id", "items", ondelete="CASCADE"),
        _fk("assignments", "user_id", "users", ondelete="CASCADE"),
        sa.UniqueConstraint("item_id", "user_id", name="uq_assignments_item_id_user_id"),
    )
    op.create_index("ix_assignments_user_id", "assignments", ["user_id"])
    op.create_table(
        "annotations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("payload", JSON, nullable=False),
        sa.Column("seconds_spent", sa.Float(), nullable=True),
        _timestamp("created"),
        _timestamp("updated"),
        sa.PrimaryKeyConstraint("id", name="pk_annotations"),
        _fk("annotations", "item_id", "items", ondelete="CASCADE"),
        _fk("annotations", "user_id", "users"),
        sa.UniqueConstraint(
            "item_id", "user_id", "kind", name="uq_annotations_item_id_user_id_kind"
        ),
        sa.CheckConstraint(
            "seconds_spent IS NULL OR seconds_spent >= 0", name="ck_annotations_seconds_spent"
        ),
    )
    op.create_index("ix_annotations_user_id", "annotations", ["user_id"])


def _create_chat_tables() -> None:
    op.create_table(
        "chat_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=True),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_chat_sessions"),
        _fk("chat_sessions", "project_id", "projects", ondelete="CASCADE"),
        _fk("chat_sessions", "user_id", "users", ondelete="SET NULL"),
    )
    op.create_index("ix_chat_sessions_project_id", "chat_sessions", ["project_id"])
    op.create_index("ix_chat_sessions_user_id", "chat_sessions", ["user_id"])
    op.create_table(
        "chat_turns",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("bot_version", sa.String(128), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_category", sa.String(64), nullable=True),
        sa.Column("replaced_by", sa.Integer(), nullable=True),
        _timestamp("created"),
        sa.PrimaryKeyConstraint("id", name="pk_chat_turns"),
        _fk("chat_turns", "session_id", "chat_sessions", ondelete="CASCADE"),
        _fk("chat_turns", "replaced_by", "chat_turns", ondelete="SET NULL"),
        _choice("chat_turns", "role", ("user", "bot")),
        _choice("chat_turns", "status", ("shown", "fixed", "saved")),
        sa.CheckConstraint('"index" >= 0', name="ck_chat_turns_index_nonnegative"),
    )
    op.create_index("ix_chat_turns_session_id", "chat_turns", ["session_id"])
    # One live (not fixed) turn per position; a fixed turn shares its index with the
    # replacement that its replaced_by points to.
    live = sa.text("status != 'fixed'")
    op.create_index(
        "uq_chat_turns_live_position",
        "chat_turns",
        ["session_id", "index"],
        unique=True,
        sqlite_where=live,
        postgresql_where=live,
    )


def downgrade() -> None:
    for table in ("chat_turns", "chat_sessions", "annotations", "assignments", "items"):
        op.drop_table(table)
    op.drop_table("projects")
    op.drop_table("users")
