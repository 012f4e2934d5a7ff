"""initial schema

Guilds, members, quests, submissions, the job queue, XP ledger, post and audit logs.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 21:17:00.757925
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


APPEND_ONLY_SQLITE = (
    "CREATE TRIGGER xp_ledger_no_update BEFORE UPDATE ON xp_ledger "
    "BEGIN SELECT RAISE(ABORT, 'xp_ledger is append-only'); END",
    "CREATE TRIGGER xp_ledger_no_delete BEFORE DELETE ON xp_ledger "
    "WHEN (SELECT COUNT(*) FROM members WHERE id = OLD.member_id) > 0 "
    "BEGIN SELECT RAISE(ABORT, 'xp_ledger is append-only'); END",
)
APPEND_ONLY_POSTGRESQL = (
    "CREATE FUNCTION xp_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN RAISE EXCEPTION 'xp_ledger is append-only'; END $$",
    "CREATE TRIGGER xp_ledger_no_update BEFORE UPDATE ON xp_ledger "
    "FOR EACH ROW EXECUTE FUNCTION xp_ledger_append_only()",
)


def upgrade() -> None:
    op.create_table(
        "guilds",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("quest_channel_id", sa.BigInteger(), nullable=True),
        sa.Column("post_time", sa.String(length=5), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("moderator_role_id", sa.BigInteger(), nullable=True),
        sa.Column("weekly_post_day", sa.SmallInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_guilds")),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("actor_user_id", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=True),
        sa.Column("details", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_audit_log_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_audit_log_guild_id_created_at"), ["guild_id", "created_at"], unique=False
        )

    op.create_table(
        "guild_quests",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("quest_id", sa.String(length=64), nullable=False),
        sa.Column("origin", sa.String(length=16), nullable=False),
        sa.Column("content", sa.JSON(), nullable=False),
        sa.Column("version_hash", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("added_by_user_id", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_guild_quests_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_guild_quests")),
        sa.UniqueConstraint("guild_id", "quest_id", name=op.f("uq_guild_quests_guild_id_quest_id")),
    )
    op.create_table(
        "members",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("display_name", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"], ["guilds.id"], name=op.f("fk_members_guild_id_guilds"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_members")),
        sa.UniqueConstraint("guild_id", "user_id", name=op.f("uq_members_guild_id_user_id")),
    )
    op.create_table(
        "post_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("period", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("channel_id", sa.BigInteger(), nullable=True),
        sa.Column("message_id", sa.BigInteger(), nullable=True),
        sa.Column("details", sa.JSON(), nullable=True),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_post_log_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_post_log")),
        sa.UniqueConstraint(
            "guild_id", "kind", "period", name=op.f("uq_post_log_guild_id_kind_period")
        ),
    )
    op.create_table(
        "quest_schedule",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("on_date", sa.Date(), nullable=False),
        sa.Column("quest_id", sa.String(length=64), nullable=False),
        sa.Column("created_by_user_id", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_quest_schedule_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_quest_schedule")),
        sa.UniqueConstraint("guild_id", "on_date", name=op.f("uq_quest_schedule_guild_id_on_date")),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("task_ref", sa.String(length=129), nullable=False),
        sa.Column("quest_version", sa.String(length=64), nullable=True),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("file_kind", sa.String(length=8), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("verdict", sa.JSON(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_submissions_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["members.id"],
            name=op.f("fk_submissions_member_id_members"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submissions")),
    )
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_submissions_member_id_created_at"),
            ["member_id", "created_at"],
            unique=False,
        )

    op.create_table(
        "xp_ledger",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("amount", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=True),
        sa.Column("idempotency_key", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_xp_ledger_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["members.id"],
            name=op.f("fk_xp_ledger_member_id_members"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_xp_ledger")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_xp_ledger_idempotency_key")),
    )
    with op.batch_alter_table("xp_ledger", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_xp_ledger_guild_id_created_at"), ["guild_id", "created_at"], unique=False
        )
        batch_op.create_index(batch_op.f("ix_xp_ledger_member_id"), ["member_id"], unique=False)

    op.create_table(
        "grading_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("requirements", sa.JSON(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("available_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_grading_jobs_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_grading_jobs")),
    )
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_grading_jobs_status_available_at"),
            ["status", "available_at"],
            unique=False,
        )
        batch_op.create_index(
            batch_op.f("ix_grading_jobs_submission_id"), ["submission_id"], unique=False
        )

    # The ledger is append-only: corrections are new rows, never edits.  Deleting
    # rows is allowed only as part of deleting the member (ON DELETE CASCADE).
    statements = {"sqlite": APPEND_ONLY_SQLITE, "postgresql": APPEND_ONLY_POSTGRESQL}
    for statement in statements.get(op.get_bind().dialect.name, ()):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER xp_ledger_no_update ON xp_ledger")
        op.execute("DROP FUNCTION xp_ledger_append_only()")
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grading_jobs_submission_id"))
        batch_op.drop_index(batch_op.f("ix_grading_jobs_status_available_at"))

    op.drop_table("grading_jobs")
    with op.batch_alter_table("xp_ledger", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_xp_ledger_member_id"))
        batch_op.drop_index(batch_op.f("ix_xp_ledger_guild_id_created_at"))

    op.drop_table("xp_ledger")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_submissions_member_id_created_at"))

    op.drop_table("submissions")
    op.drop_table("quest_schedule")
    op.drop_table("post_log")
    op.drop_table("members")
    op.drop_table("guild_quests")
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_log_guild_id_created_at"))

    op.drop_table("audit_log")
    op.drop_table("guilds")
