"""Levels from total XP.

Rule: the total XP needed to reach level L is ``25 * L * (L - 1)``, so level 1 starts at 0,
level 2 at 50, level 3 at 150, level 4 at 300, level 5 at 500: each level costs 50 XP more
than the one before, which keeps early levels quick and later ones meaningful.  A total below 0
(which revokes never produce) counts as level 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import isqrt

XP_STEP = 25


def xp_for_level(level: int) -> int:
    """The total XP at which ``level`` starts."""
    if level < 1:
        raise ValueError(f"levels start at 1, not {level}")
    return XP_STEP * level * (level - 1)


def level_for(total: int) -> int:
    """The level a member with ``total`` XP is at."""
    if total <= 0:
        return 1
    # Solve 25 L (L - 1) <= total for the largest integer L, exactly (no floats).
    level = (5 + isqrt(25 + 4 * total)) // 10
    while xp_for_level(level + 1) <= total:
        level += 1
    while xp_for_level(level) > total:
        level -= 1
    return level


@dataclass(frozen=True)
class LevelProgress:
    """Where a total sits inside its level: ``into`` of ``span`` XP towards the next one."""

    level: int
    into: int
    span: int

    @property
    def to_next(self) -> int:
        return self.span - self.into


def progress(total: int) -> LevelProgress:
    level = level_for(total)
    start = xp_for_level(level)
    return LevelProgress(level, max(total, 0) - start, xp_for_level(level + 1) - start)


@dataclass(frozen=True)
class LevelChange:
    """The level before and after one XP movement, so the bot can announce a level-up."""

    old_level: int
    new_level: int

    @property
    def leveled_up(self) -> bool:
        return self.new_level > self.old_level


def level_change(old_total: int, new_total: int) -> LevelChange:
    return LevelChange(level_for(old_total), level_for(new_total))
