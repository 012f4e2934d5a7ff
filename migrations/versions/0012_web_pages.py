"""web pages: a server opts in to public pages of its boards, map and members

``guilds.web_pages`` is false for every existing server: nothing becomes public until a
moderator runs ``/admin setup web:true``.  The downgrade drops the column.

Revision ID: 0012
Revises: 0011
Create Date: 2027-01-11 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "guilds", sa.Column("web_pages", sa.Boolean(), server_default=sa.false(), nullable=False)
    )


def downgrade() -> None:
    with op.batch_alter_table("guilds", schema=None) as batch_op:
        batch_op.drop_column("web_pages")
