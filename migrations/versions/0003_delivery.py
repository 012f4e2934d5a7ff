"""verdict delivery and schedule start

Submissions remember where their verdict goes (the interaction token while it
lives, else DM or channel), the XP award it earned, and when it was delivered,
so a restarted bot finishes every delivery exactly once.  Guilds get the local
date their map walk starts.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 22:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SUBMISSION_COLUMNS = (
    ("reply_token", sa.String(length=255)),
    ("reply_expires_at", sa.DateTime(timezone=True)),
    ("reply_channel_id", sa.BigInteger()),
    ("settled_at", sa.DateTime(timezone=True)),
    ("award", sa.JSON()),
    ("delivered_at", sa.DateTime(timezone=True)),
    ("delivered_via", sa.String(length=16)),
)


def upgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        for name, type_ in SUBMISSION_COLUMNS:
            batch_op.add_column(sa.Column(name, type_, nullable=True))
    with op.batch_alter_table("guilds", schema=None) as batch_op:
        batch_op.add_column(sa.Column("schedule_start", sa.Date(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("guilds", schema=None) as batch_op:
        batch_op.drop_column("schedule_start")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        for name, _ in reversed(SUBMISSION_COLUMNS):
            batch_op.drop_column(name)
