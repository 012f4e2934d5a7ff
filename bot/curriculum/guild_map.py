"""One server's learning map: the shipped map, plus quests its moderators added,
minus the ones they disabled, with dated overrides from ``/admin schedule``.

Added quests are stored as content snapshots in ``guild_quests`` and validated
again on load, so a schema change can never crash the bot on old rows.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from zoneinfo import ZoneInfo

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.content import AnyTask, BadTaskRef, Content, Quest, TaskRef
from bot.db.models import Guild, GuildQuest, QuestSchedule
from bot.progress.periods import local_date

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GuildMap:
    """The quests of one server in schedule order, and lookups over them."""

    quests: tuple[Quest, ...]
    phase_titles: Mapping[str, str]
    overrides: Mapping[date, str] = field(default_factory=dict)  # local date -> quest id
    added: frozenset[str] = frozenset()  # ids of quests moderators added

    def quest(self, quest_id: str) -> Quest:
        for quest in self.quests:
            if quest.id == quest_id:
                return quest
        raise KeyError(f"unknown quest {quest_id!r}")

    def find_task(self, ref: str) -> tuple[Quest, AnyTask]:
        """KeyError for anything that is not a task of this map, malformed refs included."""
        try:
            parsed = TaskRef.parse(ref)
        except BadTaskRef as exc:
            raise KeyError(str(exc)) from None
        quest = self.quest(parsed.quest)
        return quest, quest.task(parsed.task)

    def tasks(self) -> list[tuple[str, Quest, AnyTask]]:
        return [(str(TaskRef(q.id, t.id)), q, t) for q in self.quests for t in q.tasks]

    def phases(self) -> list[tuple[str, list[Quest]]]:
        """Phase title and its quests, in map order."""
        grouped: dict[str, list[Quest]] = {}
        for quest in self.quests:
            grouped.setdefault(quest.phase, []).append(quest)
        return [(self.phase_titles.get(pid, pid), quests) for pid, quests in grouped.items()]

    def quest_on(self, start: date, day: date) -> Quest | None:
        """The quest of a local date: an override, else the map walked from ``start``.

        Each quest occupies ``days`` consecutive days; after the last quest the
        walk starts over, so a server never runs out of daily posts.
        """
        if day in self.overrides:
            try:
                return self.quest(self.overrides[day])
            except KeyError:
                pass  # the scheduled quest was disabled since: fall back to the walk
        if not self.quests:
            return None
        cycle = sum(q.days for q in self.quests)
        offset = (day - start).days % cycle
        for quest in self.quests:
            if offset < quest.days:
                return quest
            offset -= quest.days
        raise AssertionError("unreachable: offset is within the cycle")


async def load_guild_map(session: AsyncSession, content: Content, guild_id: int) -> GuildMap:
    rows = (
        (await session.execute(select(GuildQuest).where(GuildQuest.guild_id == guild_id)))
        .scalars()
        .all()
    )
    disabled = {row.quest_id for row in rows if not row.enabled}
    added: dict[str, Quest] = {}
    for row in rows:
        if row.origin != "added" or not row.enabled:
            continue
        try:
            added[row.quest_id] = Quest.model_validate(row.content)
        except ValidationError as exc:
            log.error(
                "guild %d: stored quest %s no longer validates: %s", guild_id, row.quest_id, exc
            )
    order: list[Quest] = []
    for phase in content.phases:
        for quest_id in phase.quests:
            if quest_id in added:
                order.append(added.pop(quest_id))  # a moderator's version replaces the shipped one
            elif quest_id not in disabled:
                order.append(content.quest(quest_id))
        for quest in [q for q in added.values() if q.phase == phase.id]:
            order.append(added.pop(quest.id))  # new quests join the end of their phase
    order.extend(added.values())  # a phase the shipped map no longer has: at the end
    schedule = (
        await session.execute(
            select(QuestSchedule.on_date, QuestSchedule.quest_id).where(
                QuestSchedule.guild_id == guild_id
            )
        )
    ).all()
    return GuildMap(
        quests=tuple(order),
        phase_titles={phase.id: phase.title for phase in content.phases},
        overrides={on_date: quest_id for on_date, quest_id in schedule},
        added=frozenset(row.quest_id for row in rows if row.origin == "added" and row.enabled),
    )


def today_quest(guild_map: GuildMap, guild: Guild | None, now: datetime) -> Quest | None:
    """The quest of the server's local today; a server not set up yet starts the walk today."""
    tz = ZoneInfo(guild.timezone if guild else "UTC")
    today = local_date(now, tz)
    start = guild.schedule_start if guild and guild.schedule_start else today
    return guild_map.quest_on(start, today)
