"""speed results: the instrument that measured each one, and the figure the boards rank

``speed_results`` gains ``instrument`` (which speed-trial instrument measured the row:
``graders.base.SPEED_INSTRUMENT`` is today's) and ``board_ratio`` (the lower confidence bound
of the trial's median ratio that the boards rank).  Every row already stored was measured by
instrument 1, which could not tell a 2x difference from noise, so those rows are retired: they
stay (history, and ``/privacy export`` lists them) with ``instrument`` 1 and ``board_ratio``
their ``ratio``, and no board or "fastest of the week" ranks them again.  The ranking index now
leads with the instrument and ends with ``board_ratio``.

The downgrade drops both columns: the rows stay, and the previous boards rank every one of
them by its ``ratio`` again.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-20 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

#: what every row stored before this revision was measured with
RETIRED_INSTRUMENT = 1
OLD_INDEX = "ix_speed_results_guild_id_task_ref_device"
OLD_INDEX_COLUMNS = ["guild_id", "task_ref", "device", "ratio"]
INDEX = "ix_speed_results_guild_id_task_ref_instrument_device"
INDEX_COLUMNS = ["guild_id", "task_ref", "instrument", "device", "board_ratio"]


def upgrade() -> None:
    op.drop_index(OLD_INDEX, table_name="speed_results")
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        # the server default fills the rows already there, then goes: a new row says which
        # instrument measured it
        batch_op.add_column(
            sa.Column(
                "instrument",
                sa.Integer(),
                server_default=str(RETIRED_INSTRUMENT),
                nullable=False,
            )
        )
        batch_op.add_column(sa.Column("board_ratio", sa.Float(), nullable=True))
    speed_results = sa.table(
        "speed_results", sa.column("ratio", sa.Float()), sa.column("board_ratio", sa.Float())
    )
    op.execute(speed_results.update().values(board_ratio=speed_results.c.ratio))
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        batch_op.alter_column(
            "instrument", existing_type=sa.Integer(), server_default=None, existing_nullable=False
        )
        batch_op.alter_column("board_ratio", existing_type=sa.Float(), nullable=False)
    op.create_index(INDEX, "speed_results", INDEX_COLUMNS)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="speed_results")
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        batch_op.drop_column("board_ratio")
        batch_op.drop_column("instrument")
    op.create_index(OLD_INDEX, "speed_results", OLD_INDEX_COLUMNS)
