"""Task XP and the daily streak bonus: what a verdict or a ``/done`` is worth.

Rules:

- A verdict earns XP only when its status is ``passed``.  It is worth the task's XP scaled by the
  score, ``round(xp * score)`` (Python's round: halves go to the even neighbour).  Graders decide
  what passes (a quiz can pass with partial credit, a build only at full marks).
- A task pays once per member: a later, better passing score adds only the difference to what the
  task has paid so far; an equal or worse one adds nothing.  A regrade is just another verdict,
  so the better of the two counts and nothing is paid twice.
- The idempotency key is ``task:MEMBER:QUEST/TASK:TOTAL`` with the task's new cumulative total, so
  two processes awarding the same verdict at once write one row.
- A self-reported task (``/done`` on an exercise or reading) pays its full XP once.
- Each award that adds task XP is a completion for the streak; the first one of a local day on
  day n >= 2 of a streak also pays the streak bonus (see ``bot.progress.streaks``), keyed
  ``streak:MEMBER:YYYY-MM-DD`` so it is paid once per member per local day.
- An award runs inside the caller's transaction: it is kept only when the caller commits, so a
  worker can store the verdict and its XP atomically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Literal
from zoneinfo import ZoneInfo

from pydantic import TypeAdapter
from sqlalchemy.ext.asyncio import AsyncSession

from bot.progress.ledger import append, completion_days, task_earned
from bot.progress.levels import LevelChange, level_change
from bot.progress.members import lock_member
from bot.progress.periods import day_key, local_date
from bot.progress.streaks import streak_bonus, streak_on
from bot.progress.totals import total_xp

VerdictStatus = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class Award(LevelChange):
    """What one award did.  ``xp_added`` is task XP; ``streak_bonus`` comes on top of it."""

    xp_added: int
    streak_bonus: int
    new_total: int
    streak: int  # the current streak after this award, in days

    def to_json(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Award:
        """The award ``to_json`` stored (pydantic's ValidationError when it is not one)."""
        return _STORED.validate_python(dict(data))


#: what a verdict that pays nothing records (failed, an error, or a task without XP)
NO_AWARD = Award(old_level=0, new_level=0, xp_added=0, streak_bonus=0, new_total=0, streak=0)
_STORED = TypeAdapter(Award)


def verdict_xp(task_xp: int, status: VerdictStatus, score: float) -> int:
    """What a verdict is worth before anything already paid for the task is subtracted."""
    if task_xp <= 0:
        raise ValueError(f"task XP must be positive, not {task_xp}")
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"score {score} is outside 0..1")
    return round(task_xp * score) if status == "passed" else 0


async def award_verdict(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    task_ref: str,
    task_xp: int,
    status: VerdictStatus,
    score: float,
    submission_id: int | None,
    tz: ZoneInfo,
    now: datetime,
    source: Literal["task", "quiz"] = "task",
) -> Award:
    """Pay a graded verdict (build or quiz) per the rules above."""
    worth = verdict_xp(task_xp, status, score)
    where = f"submission {submission_id}" if submission_id is not None else source
    reason = f"{task_ref} passed at {score:.0%} ({where})"
    return await _award(
        session,
        guild_id=guild_id,
        member_id=member_id,
        task_ref=task_ref,
        worth=worth,
        source=source,
        reason=reason,
        tz=tz,
        now=now,
    )


async def award_self_report(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    task_ref: str,
    task_xp: int,
    tz: ZoneInfo,
    now: datetime,
) -> Award:
    """Pay a ``/done`` on an exercise or reading: its full XP, once."""
    if task_xp <= 0:
        raise ValueError(f"task XP must be positive, not {task_xp}")
    reason = f"{task_ref} done (self-reported)"
    return await _award(
        session,
        guild_id=guild_id,
        member_id=member_id,
        task_ref=task_ref,
        worth=task_xp,
        source="self",
        reason=reason,
        tz=tz,
        now=now,
    )


async def _award(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    task_ref: str,
    worth: int,
    source: Literal["task", "quiz", "self"],
    reason: str,
    tz: ZoneInfo,
    now: datetime,
) -> Award:
    """Pay ``worth`` for a task minus what it already paid, then the day's streak bonus."""
    await lock_member(session, guild_id, member_id)
    old_total = await total_xp(session, member_id)
    earned = await task_earned(session, member_id, task_ref)
    added = 0
    if worth > earned and await append(
        session,
        guild_id=guild_id,
        member_id=member_id,
        amount=worth - earned,
        source=source,
        reason=reason,
        reference=task_ref,
        key=f"task:{member_id}:{task_ref}:{worth}",
        tz=tz,
        now=now,
    ):
        added = worth - earned
    today = local_date(now, tz)
    streak = streak_on((await completion_days(session, [member_id], tz)).get(member_id, ()), today)
    bonus = streak_bonus(streak.current) if added else 0
    if bonus and not await append(
        session,
        guild_id=guild_id,
        member_id=member_id,
        amount=bonus,
        source="streak",
        reason=f"day {streak.current} of a streak",
        reference=day_key(today),
        key=f"streak:{member_id}:{day_key(today)}",
        tz=tz,
        now=now,
    ):
        bonus = 0
    new_total = old_total + added + bonus
    levels = level_change(old_total, new_total)
    return Award(
        old_level=levels.old_level,
        new_level=levels.new_level,
        xp_added=added,
        streak_bonus=bonus,
        new_total=new_total,
        streak=streak.current,
    )
