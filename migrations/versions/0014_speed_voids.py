"""speed voids: a moderator can strike a speed result from every board, and restore it

``speed_results`` gains ``voided_at`` (when a moderator struck it; NULL for every existing
row, so nothing changes on the boards), ``void_reason`` (what the moderator typed, shown to the
member), ``voided_by`` (the moderator's Discord user id) and ``void_notified_at`` (when the
member was told; NULL until then).  The void lives on the result's own row: a row is keyed by
its submission, a regrade's trial updates the trial's columns only, and a member's deletion
takes the row, its void included.

The downgrade drops the columns: voided results would rank again.

Revision ID: 0014
Revises: 0013
Create Date: 2027-01-18 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        batch_op.add_column(sa.Column("voided_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("void_reason", sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column("voided_by", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column("void_notified_at", sa.DateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        for name in ("void_notified_at", "voided_by", "void_reason", "voided_at"):
            batch_op.drop_column(name)
