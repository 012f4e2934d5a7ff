"""progress totals

The derived ``member_xp`` table (XP per member for all time and per local week and month) and
``member_xp_counts`` (members per XP value on each board), kept in step with the ledger so a
leaderboard page and a rank read indexes instead of summing the ledger.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 10:12:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "member_xp",
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("period_kind", sa.String(length=8), nullable=False),
        sa.Column("period_key", sa.String(length=16), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("xp", sa.Integer(), nullable=False),
        sa.Column("reached_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_member_xp_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["members.id"],
            name=op.f("fk_member_xp_member_id_members"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "member_id", "period_kind", "period_key", name=op.f("pk_member_xp")
        ),
    )
    with op.batch_alter_table("member_xp", schema=None) as batch_op:
        batch_op.create_index(
            "ix_member_xp_leaderboard",
            [
                "guild_id",
                "period_kind",
                "period_key",
                sa.text("xp DESC"),
                "reached_at",
                "member_id",
            ],
            unique=False,
        )

    op.create_table(
        "member_xp_counts",
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("period_kind", sa.String(length=8), nullable=False),
        sa.Column("period_key", sa.String(length=16), nullable=False),
        sa.Column("xp", sa.Integer(), nullable=False),
        sa.Column("members", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_member_xp_counts_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "guild_id", "period_kind", "period_key", "xp", name=op.f("pk_member_xp_counts")
        ),
        sqlite_with_rowid=False,
    )


def downgrade() -> None:
    op.drop_table("member_xp_counts")
    with op.batch_alter_table("member_xp", schema=None) as batch_op:
        batch_op.drop_index("ix_member_xp_leaderboard")

    op.drop_table("member_xp")
