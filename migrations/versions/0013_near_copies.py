"""near copies: fingerprints of passing code, and the pairs flagged for moderators

``solution_fingerprints`` holds the winnowed fingerprints of each passing submission's code
(``bot.similarity``), indexed by (server, task, hash), the submission and member included so
a lookup reads the index alone: a new pass finds the earlier ones that share its hashes
without a scan.  ``near_copies`` holds each pair at or above the threshold,
once.  Both start empty: submissions settled before are not fingerprinted after the fact.
The downgrade drops both tables.

Revision ID: 0013
Revises: 0012
Create Date: 2027-01-18 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def _foreign_key(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column],
        [f"{target}.id"],
        name=op.f(f"fk_{table}_{column}_{target}"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "solution_fingerprints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("task_ref", sa.String(129), nullable=False),
        sa.Column("hash", sa.BigInteger(), nullable=False),
        _foreign_key("solution_fingerprints", "guild_id", "guilds"),
        _foreign_key("solution_fingerprints", "member_id", "members"),
        _foreign_key("solution_fingerprints", "submission_id", "submissions"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_solution_fingerprints")),
        sa.UniqueConstraint(
            "submission_id", "hash", name=op.f("uq_solution_fingerprints_submission_id_hash")
        ),
    )
    op.create_index(
        op.f("ix_solution_fingerprints_task_hash"),
        "solution_fingerprints",
        ["guild_id", "task_ref", "hash", "submission_id", "member_id"],
    )
    op.create_table(
        "near_copies",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guild_id", sa.BigInteger(), nullable=False),
        sa.Column("task_ref", sa.String(129), nullable=False),
        sa.Column("submission_id", sa.Integer(), nullable=False),
        sa.Column("member_id", sa.Integer(), nullable=False),
        sa.Column("earlier_submission_id", sa.Integer(), nullable=False),
        sa.Column("earlier_member_id", sa.Integer(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        _foreign_key("near_copies", "guild_id", "guilds"),
        _foreign_key("near_copies", "submission_id", "submissions"),
        _foreign_key("near_copies", "member_id", "members"),
        _foreign_key("near_copies", "earlier_submission_id", "submissions"),
        _foreign_key("near_copies", "earlier_member_id", "members"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_near_copies")),
        sa.UniqueConstraint(
            "submission_id",
            "earlier_submission_id",
            name=op.f("uq_near_copies_submission_id_earlier_submission_id"),
        ),
    )
    op.create_index(
        op.f("ix_near_copies_guild_id_task_ref_created_at"),
        "near_copies",
        ["guild_id", "task_ref", "created_at"],
    )
    op.create_index(op.f("ix_near_copies_member_id"), "near_copies", ["member_id"])
    op.create_index(op.f("ix_near_copies_earlier_member_id"), "near_copies", ["earlier_member_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_near_copies_earlier_member_id"), table_name="near_copies")
    op.drop_index(op.f("ix_near_copies_member_id"), table_name="near_copies")
    op.drop_index(op.f("ix_near_copies_guild_id_task_ref_created_at"), table_name="near_copies")
    op.drop_table("near_copies")
    op.drop_index(
        op.f("ix_solution_fingerprints_task_hash"),
        table_name="solution_fingerprints",
    )
    op.drop_table("solution_fingerprints")
