"""level roles, weekly champions, privacy, discussion threads, persistent previews, command sync

Level roles (``level_roles``) and the weekly champion role are handed out by one reconciler:
``role_sync_queue`` holds the members whose roles may be stale, queued in the same transaction
as whatever changed them, and ``role_grants`` what the bot believes it gave.  A member may hide
from the boards (``members.hidden``, mirrored on their totals as ``member_xp.listed`` so a board
stays one range scan) or have their data deleted (``members.anonymised_at``: the append-only
ledger keeps its rows, the member row stops naming them).  Quest drafts outlive a restart, and
``bot_state`` keeps the hash of the command tree last synced.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 18:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_LEADERBOARD_COLUMNS = ["guild_id", "period_kind", "period_key"]
_LEADERBOARD_ORDER = [sa.text("xp DESC"), "reached_at", "member_id"]
DROP_COLUMNS = (
    "ALTER TABLE member_xp DROP COLUMN listed",
    "ALTER TABLE members DROP COLUMN anonymised_at",
    "ALTER TABLE members DROP COLUMN hidden",
    "ALTER TABLE guilds DROP COLUMN discussion_threads",
    "ALTER TABLE guilds DROP COLUMN champion_role_id",
    "ALTER TABLE guilds DROP COLUMN level_role_mode",
)


def _guild_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["guild_id"], ["guilds.id"], name=op.f(f"fk_{table}_guild_id_guilds"), ondelete="CASCADE"
    )


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN: a batch copy of ``members`` would trip the ledger's triggers.
    op.add_column(
        "guilds", sa.Column("level_role_mode", sa.String(8), server_default="stack", nullable=False)
    )
    op.add_column("guilds", sa.Column("champion_role_id", sa.BigInteger(), nullable=True))
    op.add_column(
        "guilds",
        sa.Column("discussion_threads", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.add_column(
        "members", sa.Column("hidden", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.add_column("members", sa.Column("anonymised_at", sa.DateTime(timezone=True)))
    op.add_column(
        "member_xp", sa.Column("listed", sa.Boolean(), server_default=sa.true(), nullable=False)
    )
    op.drop_index("ix_member_xp_leaderboard", table_name="member_xp")
    op.create_index(
        "ix_member_xp_leaderboard",
        "member_xp",
        [*_LEADERBOARD_COLUMNS, "listed", *_LEADERBOARD_ORDER],
        unique=False,
    )

    op.create_table(
        "level_roles",
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("level", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("role_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _guild_fk("level_roles"),
        sa.PrimaryKeyConstraint("guild_id", "level", name=op.f("pk_level_roles")),
        sa.UniqueConstraint("guild_id", "role_id", name=op.f("uq_level_roles_guild_id_role_id")),
    )
    op.create_table(
        "role_grants",
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("role_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        _guild_fk("role_grants"),
        sa.PrimaryKeyConstraint("guild_id", "user_id", "role_id", name=op.f("pk_role_grants")),
    )
    op.create_table(
        "role_sync_queue",
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        _guild_fk("role_sync_queue"),
        sa.PrimaryKeyConstraint("guild_id", "user_id", name=op.f("pk_role_sync_queue")),
    )
    with op.batch_alter_table("role_sync_queue", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_role_sync_queue_due_at"), ["due_at"], unique=False)
    op.create_table(
        "weekly_champions",
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("period", sa.String(16), nullable=False),
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _guild_fk("weekly_champions"),
        sa.PrimaryKeyConstraint("guild_id", "period", "user_id", name=op.f("pk_weekly_champions")),
    )
    op.create_table(
        "quest_drafts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("moderator_user_id", sa.BigInteger(), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _guild_fk("quest_drafts"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quest_drafts")),
    )
    op.create_table(
        "bot_state",
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_bot_state")),
    )


def downgrade() -> None:
    op.drop_table("bot_state")
    op.drop_table("quest_drafts")
    op.drop_table("weekly_champions")
    with op.batch_alter_table("role_sync_queue", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_role_sync_queue_due_at"))
    op.drop_table("role_sync_queue")
    op.drop_table("role_grants")
    op.drop_table("level_roles")
    op.drop_index("ix_member_xp_leaderboard", table_name="member_xp")
    op.create_index(
        "ix_member_xp_leaderboard",
        "member_xp",
        [*_LEADERBOARD_COLUMNS, *_LEADERBOARD_ORDER],
        unique=False,
    )
    # ALTER TABLE DROP COLUMN (SQLite 3.35+) in place, for the same reason as in upgrade()
    for statement in DROP_COLUMNS:
        op.execute(statement)
