"""speed roofline: what places each speed result on a roofline, and the bound it names

``speed_results`` gains the numbers a verdict's roofline picture is drawn from, so the weekly
post and any later page can draw it again: the bytes the op must move and the FLOPs it must
do (the speed reference's lower bounds), the GB/s and GFLOP/s the learner's and the
reference's fastest calls reached, the host's two roofs, and the bound they named
(``graders.base.Bound``: compute, memory, overhead, neither; CHECK-constrained).  All are
NULL on rows stored before: those results carried no such figures, and nothing is made up
for them.

The downgrade drops the columns; the rows stay.

Revision ID: 0011
Revises: 0010
Create Date: 2027-01-04 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

#: ``graders.base.Bound`` as of this revision, frozen here as the migration is
BOUNDS = ("compute", "memory", "overhead", "neither")
COUNTS = ("moved_bytes", "flops")
RATES = (
    "achieved_gbs",
    "reference_gbs",
    "achieved_gflops",
    "reference_gflops",
    "peak_gbs",
    "peak_gflops",
)


def upgrade() -> None:
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        for name in COUNTS:
            batch_op.add_column(sa.Column(name, sa.BigInteger(), nullable=True))
        for name in RATES:
            batch_op.add_column(sa.Column(name, sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("bound", sa.String(length=16), nullable=True))
        batch_op.create_check_constraint(
            op.f("ck_speed_results_bound"),
            "bound IN ({})".format(", ".join(f"'{bound}'" for bound in BOUNDS)),
        )


def downgrade() -> None:
    with op.batch_alter_table("speed_results", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("ck_speed_results_bound"), type_="check")
        for name in ("bound", *reversed(RATES), *reversed(COUNTS)):
            batch_op.drop_column(name)
