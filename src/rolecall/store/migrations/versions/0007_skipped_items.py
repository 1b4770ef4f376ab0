"""An annotator may skip an item (issue #50 item 6): ``assignments.skipped``, when they
last did, and ``skip_reason``, why (for the lead); a skipped item goes to the end of their
queue, its order among the skipped kept.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29

Written by hand to mirror ``rolecall/store/models.py`` (``test_models_match_migrations``).
Existing assignments are not skipped (NULL).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # plain ALTER TABLE (see 0005): a batch migration would copy and drop the table
    op.add_column("assignments", sa.Column("skipped", sa.DateTime(timezone=True), nullable=True))
    op.add_column("assignments", sa.Column("skip_reason", sa.String(200), nullable=True))


def downgrade() -> None:
    op.drop_column("assignments", "skip_reason")
    op.drop_column("assignments", "skipped")
