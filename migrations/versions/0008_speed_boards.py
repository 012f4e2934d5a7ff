"""speed boards: each graded speed trial's result, and each worker's measured roofline

``speed_results`` holds one row per passing submission of a speed-ranked task that got a
trial: the ratio reference/learner timed by the worker's own clock, on one device class.
The boards rank each member's best row per task and device.  ``worker_heartbeats`` gains the
host's CPU model and the peak memory bandwidth and FLOP/s the worker measured at start.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-15 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "speed_results",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("task_ref", sa.String(129), nullable=False),
        sa.Column("device", sa.String(128), nullable=False),
        sa.Column("ratio", sa.Float(), nullable=False),
        sa.Column("learner_s", sa.Float(), nullable=False),
        sa.Column("reference_s", sa.Float(), nullable=False),
        sa.Column("spread", sa.Float(), nullable=False),
        sa.Column("pairs", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["guild_id"],
            ["guilds.id"],
            name=op.f("fk_speed_results_guild_id_guilds"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["member_id"],
            ["members.id"],
            name=op.f("fk_speed_results_member_id_members"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["submission_id"],
            ["submissions.id"],
            name=op.f("fk_speed_results_submission_id_submissions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_speed_results")),
        sa.UniqueConstraint("submission_id", name=op.f("uq_speed_results_submission_id")),
    )
    op.create_index(
        op.f("ix_speed_results_guild_id_task_ref_device"),
        "speed_results",
        ["guild_id", "task_ref", "device", "ratio"],
    )
    op.create_index(op.f("ix_speed_results_member_id"), "speed_results", ["member_id"])
    op.add_column("worker_heartbeats", sa.Column("cpu_model", sa.String(128), nullable=True))
    op.add_column("worker_heartbeats", sa.Column("peak_gbs", sa.Float(), nullable=True))
    op.add_column("worker_heartbeats", sa.Column("peak_gflops", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("worker_heartbeats", "peak_gflops")
    op.drop_column("worker_heartbeats", "peak_gbs")
    op.drop_column("worker_heartbeats", "cpu_model")
    op.drop_index(op.f("ix_speed_results_member_id"), table_name="speed_results")
    op.drop_index(op.f("ix_speed_results_guild_id_task_ref_device"), table_name="speed_results")
    op.drop_table("speed_results")
