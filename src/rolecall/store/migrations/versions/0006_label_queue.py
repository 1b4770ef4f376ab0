"""The label queue's order and a label's share (issue #35 item 3): ``queue_entries``
(position, ranked or random share, score per item) and ``annotations.share``.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27

Written by hand to mirror ``rolecall/store/models.py`` (``test_models_match_migrations``).
Existing labels keep ``share`` NULL: they were served before the queue had shares.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE (see 0005): a batch migration would copy and drop the table
    op.add_column("annotations", sa.Column("share", sa.String(8), nullable=True))
    op.create_table(
        "queue_entries",
        sa.Column("item_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("share", sa.String(8), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("ranked_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("item_id", name="pk_queue_entries"),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_queue_entries_item_id_items", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_queue_entries_project_id_projects",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_queue_entries_project_id_position", "queue_entries", ["project_id", "position"]
    )


def downgrade() -> None:
    op.drop_index("ix_queue_entries_project_id_position", table_name="queue_entries")
    op.drop_table("queue_entries")
    op.drop_column("annotations", "share")
