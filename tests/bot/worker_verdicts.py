"""A passing verdict written into the bot's database as a worker writes one, so that a test of
the bot decides what a grading found (a speed trial, its figures) without running a worker;
the bot then settles and delivers it as usual."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from datetime import UTC, datetime

from fakediscord import User
from graders.base import Check, SpeedResult, Verdict
from tests.bot.conftest import CORRECT, World
from tests.support import BUILD_TASK


def query(world: World, sql: str, *args: object) -> list[tuple]:
    """One statement on the bot's SQLite database, committed."""
    with contextlib.closing(sqlite3.connect(world.database, timeout=30)) as db, db:
        return db.execute(sql, args).fetchall()


async def submit_and_pass(
    world: World,
    user: User,
    *,
    finished_at: datetime,
    speed: SpeedResult | None = None,
    task: str = BUILD_TASK,
    code: bytes = CORRECT,
) -> int:
    """``user`` submits ``code`` and it passes with ``speed``'s trial, finished at
    ``finished_at``; the submission's id (the bot settles it soon after)."""
    queued = await (await world.submit(user, code, task=task)).original(timeout=15)
    assert queued.content.startswith("Queued"), queued.content
    ((submission_id,),) = query(
        world,
        "SELECT s.id FROM submissions s JOIN members m ON m.id = s.member_id "
        "WHERE m.user_id = ? ORDER BY s.id DESC LIMIT 1",
        user.id,
    )
    verdict = Verdict(task, "passed", 1.0, (Check("correct", True, "ok"),), "", speed=speed)
    query(
        world,
        "UPDATE submissions SET status = 'passed', score = 1.0, verdict = ?, finished_at = ? "
        "WHERE id = ?",
        json.dumps(verdict.to_json()),
        finished_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f"),
        submission_id,
    )
    query(world, "UPDATE grading_jobs SET status = 'done' WHERE submission_id = ?", submission_id)
    return int(submission_id)
