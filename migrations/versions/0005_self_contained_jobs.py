"""self-contained jobs, delivery retries, multi-part posts, a ledger that cannot be rewritten

Jobs carry their grading spec (``bot.jobs.job_spec``), so a worker grades any job, a
moderator's quest included, from the database alone; jobs queued before this revision have
none and are refused by workers with a clear verdict.  Submissions count delivery attempts,
so one verdict that cannot be sent is retried with backoff and finally marked failed instead
of holding back every later one.  A post remembers the messages of its parts already sent,
so a multi-message post resumes where it failed instead of repeating its first part.

The XP ledger also refuses an ``INSERT OR REPLACE`` of an existing row on SQLite (a REPLACE
deletes without firing the delete guard unless ``recursive_triggers`` is on, which the bot's
own connections also turn on) and ``TRUNCATE`` on PostgreSQL.  Stored verdicts and awards of
older shapes (the hand-built "given up" verdict had no task; an award of nothing had no
levels) are rewritten into the one shape the bot reads back.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 12:00:00.000000
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

NO_REPLACE_SQLITE = (
    "CREATE TRIGGER xp_ledger_no_replace BEFORE INSERT ON xp_ledger "
    "WHEN EXISTS (SELECT 1 FROM xp_ledger WHERE id = NEW.id) "
    "BEGIN SELECT RAISE(ABORT, 'xp_ledger is append-only'); END"
)
NO_TRUNCATE_POSTGRESQL = (
    "CREATE FUNCTION xp_ledger_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN RAISE EXCEPTION 'xp_ledger is append-only' "
    "USING ERRCODE = 'integrity_constraint_violation'; END $$",
    "CREATE TRIGGER xp_ledger_no_truncate BEFORE TRUNCATE ON xp_ledger "
    "FOR EACH STATEMENT EXECUTE FUNCTION xp_ledger_no_truncate()",
)
AWARD_KEYS = ("old_level", "new_level", "xp_added", "streak_bonus", "new_total", "streak")

submissions = sa.table(
    "submissions",
    sa.column("id", sa.Integer()),
    sa.column("task_ref", sa.String()),
    sa.column("verdict", sa.JSON()),
    sa.column("award", sa.JSON()),
)
jobs = sa.table(
    "grading_jobs",
    sa.column("id", sa.Integer()),
    sa.column("submission_id", sa.Integer()),
    sa.column("result", sa.JSON()),
)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        op.execute(NO_REPLACE_SQLITE)
    else:
        for statement in NO_TRUNCATE_POSTGRESQL:
            op.execute(statement)
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("spec", sa.JSON(), nullable=True))
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("delivery_attempts", sa.Integer(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("next_delivery_at", sa.DateTime(timezone=True)))
        batch_op.add_column(sa.Column("delivery_error", sa.Text()))
        batch_op.add_column(sa.Column("delivery_failed_at", sa.DateTime(timezone=True)))
    with op.batch_alter_table("post_log", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sent_message_ids", sa.JSON(), nullable=True))
    _reshape_stored_results()


def _reshape_stored_results() -> None:
    """Give old verdicts their task and old awards every field (see the docstring)."""
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(
            submissions.c.id, submissions.c.task_ref, submissions.c.verdict, submissions.c.award
        )
    ).all()
    task_of = {}
    for row_id, task_ref, verdict, award in rows:
        task_of[row_id] = task_ref
        changes: dict[str, Any] = {}
        if isinstance(verdict, dict) and "task" not in verdict:
            changes["verdict"] = _with_task(verdict, task_ref)
        if isinstance(award, dict) and any(key not in award for key in AWARD_KEYS):
            changes["award"] = {key: int(award.get(key, 0)) for key in AWARD_KEYS}
        if changes:
            bind.execute(submissions.update().where(submissions.c.id == row_id).values(**changes))
    for job_id, submission_id, result in bind.execute(
        sa.select(jobs.c.id, jobs.c.submission_id, jobs.c.result)
    ).all():
        if isinstance(result, dict) and "task" not in result and submission_id in task_of:
            bind.execute(
                jobs.update()
                .where(jobs.c.id == job_id)
                .values(result=_with_task(result, task_of[submission_id]))
            )


def _with_task(verdict: dict[str, Any], task_ref: str) -> dict[str, Any]:
    kept = {key: value for key, value in verdict.items() if key != "internal"}
    return {"task": task_ref, "duration_s": 0.0, "device": "cpu", "notes": [], **kept}


def downgrade() -> None:
    with op.batch_alter_table("post_log", schema=None) as batch_op:
        batch_op.drop_column("sent_message_ids")
    with op.batch_alter_table("submissions", schema=None) as batch_op:
        batch_op.drop_column("delivery_failed_at")
        batch_op.drop_column("delivery_error")
        batch_op.drop_column("next_delivery_at")
        batch_op.drop_column("delivery_attempts")
    with op.batch_alter_table("grading_jobs", schema=None) as batch_op:
        batch_op.drop_column("spec")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER xp_ledger_no_replace")
    else:
        op.execute("DROP TRIGGER xp_ledger_no_truncate ON xp_ledger")
        op.execute("DROP FUNCTION xp_ledger_no_truncate()")
