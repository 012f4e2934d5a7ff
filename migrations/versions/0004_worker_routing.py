"""worker capabilities and job requirements

On PostgreSQL the XP ledger's guard now also refuses DELETE (except the cascade
from deleting a member, as on SQLite) and raises an integrity error, so both
backends refuse a ledger rewrite the same way.

Jobs say what they need from a worker (CUDA, a minimum of GPU memory) in plain
columns that every backend can filter on in the claim query, replacing the
free-form requirements list.  Workers record a heartbeat with what they have, so
the bot can tell a member at once when no capable worker is around.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 23:50:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

LEDGER_GUARD_POSTGRESQL = (
    "CREATE OR REPLACE FUNCTION xp_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN "
    "IF TG_OP = 'DELETE' AND NOT EXISTS (SELECT 1 FROM members WHERE id = OLD.member_id) "
    "THEN RETURN OLD; END IF; "
    "RAISE EXCEPTION 'xp_ledger is append-only' USING ERRCODE = 'integrity_constraint_violation'; "
    "END $$",
    "CREATE TRIGGER xp_ledger_no_delete BEFORE DELETE ON xp_ledger "
    "FOR EACH ROW EXECUTE FUNCTION xp_ledger_append_only()",
)
LEDGER_GUARD_POSTGRESQL_0003 = (
    "DROP TRIGGER xp_ledger_no_delete ON xp_ledger",
    "CREATE OR REPLACE FUNCTION xp_ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN RAISE EXCEPTION 'xp_ledger is append-only'; END $$",
)


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in LEDGER_GUARD_POSTGRESQL:
            op.execute(statement)
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("needs_cuda", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
        batch_op.add_column(
            sa.Column("min_gpu_memory_mib", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.drop_column("requirements")
    op.create_table(
        "worker_heartbeats",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("cuda", sa.Boolean(), nullable=False),
        sa.Column("gpu_name", sa.String(length=128), nullable=True),
        sa.Column("gpu_memory_mib", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_worker_heartbeats")),
    )
    op.create_index(
        op.f("ix_worker_heartbeats_last_seen_at"), "worker_heartbeats", ["last_seen_at"]
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_worker_heartbeats_last_seen_at"), table_name="worker_heartbeats")
    op.drop_table("worker_heartbeats")
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("requirements", sa.JSON(), server_default="[]", nullable=False)
        )
        batch_op.drop_column("min_gpu_memory_mib")
        batch_op.drop_column("needs_cuda")
    if op.get_bind().dialect.name == "postgresql":
        for statement in LEDGER_GUARD_POSTGRESQL_0003:
            op.execute(statement)
