"""solution sharing: members may share their passing solutions, and reading them is recorded

``members`` gains ``shares_solutions`` (``/privacy share``; false for every existing member:
nobody's code is shown to anyone until they opt in).  ``solution_reads`` records the first
time a member opened a task's shared solutions (``/solutions``), one row per member and task.
``speed_results`` gains ``after_reading``: the result's submission was made after its member
opened the task's solutions; false for every existing row, since nobody could read any before.
``submissions`` gains an index on (server, task, status): ``/solutions`` finds a task's passing
submissions through it.

The downgrade drops the table, the columns and the index: shared solutions become private
again and results made after reading rank as any other.

Revision ID: 0015
Revises: 0014
Create Date: 2027-01-25 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def _foreign_key(column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_solution_reads_{column}_{target}"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    # a plain ADD COLUMN: SQLite's batch mode would copy ``members``, which the ledger's
    # triggers name
    op.add_column(
        "members",
        sa.Column("shares_solutions", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.add_column(
        "speed_results",
        sa.Column("after_reading", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.create_table(
        "solution_reads",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("task_ref", sa.String(129), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=False),
        _foreign_key("guild_id", "guilds"),
        _foreign_key("member_id", "members"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_solution_reads")),
        sa.UniqueConstraint(
            "member_id", "task_ref", name=op.f("uq_solution_reads_member_id_task_ref")
        ),
    )
    op.create_index(
        op.f("ix_submissions_guild_id_task_ref_status"),
        "submissions",
        ["guild_id", "task_ref", "status"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_submissions_guild_id_task_ref_status"), table_name="submissions")
    op.drop_table("solution_reads")
    # plain DROP COLUMN (SQLite 3.35 and PostgreSQL), for the reason the upgrade gives
    op.execute("ALTER TABLE speed_results DROP COLUMN after_reading")
    op.execute("ALTER TABLE members DROP COLUMN shares_solutions")
