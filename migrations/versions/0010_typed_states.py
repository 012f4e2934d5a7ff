"""typed states: CHECK constraints on both status columns; a verdict stored once

``submissions.status`` and ``grading_jobs.status`` accept only their states
(``bot.db.states``), refused by the database itself otherwise.  A verdict was written twice, to
``grading_jobs.result`` and to ``submissions.verdict``, and only the second was ever read:
``result`` goes.  A submission without a verdict whose job has one (no code path leaves that,
but the data decides) gets its latest job's first, so nothing stored is lost.  The upgrade
refuses, naming them, rows in a state the constraint would reject, before changing anything.

The downgrade drops the constraints and brings ``result`` back, holding each submission's
verdict on its latest finished job, as ``complete`` wrote it.

On SQLite both tables are rebuilt to add a constraint; ``bot.db.migrate`` runs migrations with
foreign keys off there, so rebuilding ``submissions`` cascades to no job or speed result.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-28 12:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.errors import DatabaseError

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

#: the states as of this revision (``bot.db.states``), frozen here as the migration is
STATES = {
    "submissions": ("queued", "grading", "passed", "failed", "error"),
    "grading_jobs": ("queued", "running", "done", "dead"),
}
#: the states whose job wrote a verdict
FINISHED_JOB = ("done", "dead")

submissions = sa.table(
    "submissions",
    sa.column("id", sa.Integer()),
    sa.column("status", sa.String()),
    sa.column("verdict", sa.JSON()),
)
jobs = sa.table(
    "grading_jobs",
    sa.column("id", sa.Integer()),
    sa.column("submission_id", sa.Integer()),
    sa.column("status", sa.String()),
    sa.column("result", sa.JSON()),
)


def _check(table: str) -> str:
    return f"ck_{table}_status"


def _allowed(table: str) -> str:
    return "status IN ({})".format(", ".join(f"'{state}'" for state in STATES[table]))


def _missing(column: sa.ColumnElement[object]) -> sa.ColumnElement[bool]:
    """SQL NULL, or a JSON ``null`` (what assigning None to a JSON column stores)."""
    return sa.or_(column.is_(None), sa.cast(column, sa.Text()) == "null")


def upgrade() -> None:
    _refuse_unknown_states()
    _keep_verdicts_only_jobs_hold()
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.drop_column("result")
        batch_op.create_check_constraint(op.f(_check("grading_jobs")), _allowed("grading_jobs"))
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.create_check_constraint(op.f(_check("submissions")), _allowed("submissions"))


def _refuse_unknown_states() -> None:
    bind = op.get_bind()
    found = []
    for table in (submissions, jobs):
        rows = bind.execute(
            sa.select(table.c.status, sa.func.count())
            .where(table.c.status.not_in(STATES[table.name]))
            .group_by(table.c.status)
        ).all()
        found += [f"{table.name}: {count} row(s) {status!r}" for status, count in rows]
    if found:
        raise DatabaseError(
            "revision 0010 refuses to constrain the states: rows in a state it does not know ("
            + "; ".join(found)
            + "); set them to a known state, then upgrade again"
        )


def _keep_verdicts_only_jobs_hold() -> None:
    """A submission with no verdict takes that of its latest job that has one."""
    latest = (
        sa.select(jobs.c.result)
        .where(jobs.c.submission_id == submissions.c.id, sa.not_(_missing(jobs.c.result)))
        .order_by(jobs.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    op.execute(
        submissions.update()
        .where(_missing(submissions.c.verdict), latest.is_not(None))
        .values(verdict=latest)
    )


def downgrade() -> None:
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(_check("submissions")), type_="check")
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.drop_constraint(op.f(_check("grading_jobs")), type_="check")
        batch_op.add_column(sa.Column("result", sa.JSON(), nullable=True))
    # each submission's verdict back on its latest finished job, where ``complete`` wrote it
    later = sa.alias(jobs, "later")
    verdict = (
        sa.select(submissions.c.verdict)
        .where(submissions.c.id == jobs.c.submission_id)
        .scalar_subquery()
    )
    op.execute(
        jobs.update()
        .where(
            jobs.c.status.in_(FINISHED_JOB),
            ~sa.exists().where(
                later.c.submission_id == jobs.c.submission_id,
                later.c.status.in_(FINISHED_JOB),
                later.c.id > jobs.c.id,
            ),
        )
        .values(result=verdict)
    )
