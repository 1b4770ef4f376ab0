"""Red-team rates per run, bot version and attack kind (issue #19), for the dashboard.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25

Written by hand to mirror ``rolecall/store/models.py`` (``test_models_match_migrations``).
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _timestamp(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "redteam_rates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("bot_version", sa.String(128), nullable=False),
        sa.Column("attack", sa.String(32), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("not_safe", sa.Integer(), nullable=False),
        sa.Column("out_of_role", sa.Integer(), nullable=False),
        sa.Column("repeated", sa.Integer(), nullable=False),
        sa.Column("judges", sa.Text(), nullable=True),
        _timestamp("created"),
        _timestamp("updated"),
        sa.PrimaryKeyConstraint("id", name="pk_redteam_rates"),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name="fk_redteam_rates_project_id_projects",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "project_id",
            "source",
            "bot_version",
            "attack",
            name="uq_redteam_rates_project_id_source_bot_version_attack",
        ),
        sa.CheckConstraint(
            "0 <= not_safe AND not_safe <= out_of_role AND out_of_role <= n",
            name="ck_redteam_rates_counts",
        ),
        sa.CheckConstraint("0 <= repeated AND repeated <= n", name="ck_redteam_rates_repeated"),
    )


def downgrade() -> None:
    op.drop_table("redteam_rates")
