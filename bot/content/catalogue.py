"""The validated content the bot runs on: read-only, indexed for lookups."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from bot.content.refs import BadTaskRef, TaskRef
from bot.content.schema import AnyTask, LibraryEntry, Phase, Quest


@dataclass(frozen=True)
class Content:
    """Everything in a content directory after it checked clean.

    Build it with ``Content.build``; the mappings are read-only views.
    """

    library: Mapping[str, LibraryEntry]  # in library.yaml order
    phases: tuple[Phase, ...]
    quests: tuple[Quest, ...]  # in map order: the default daily schedule
    quests_by_id: Mapping[str, Quest]
    cited_by: Mapping[str, tuple[str, ...]]  # library id -> citing quest ids, map order

    @classmethod
    def build(
        cls, library: Iterable[LibraryEntry], phases: Iterable[Phase], quests: Iterable[Quest]
    ) -> Content:
        """Index content whose cross-references were already checked; quests are
        put in map order, so every quest must appear in exactly one phase."""
        phases = tuple(phases)
        by_id = {quest.id: quest for quest in quests}
        ordered = tuple(by_id[qid] for phase in phases for qid in phase.quests)
        entries = {entry.id: entry for entry in library}
        cited = {
            entry_id: tuple(q.id for q in ordered if any(r.ref == entry_id for r in q.readings))
            for entry_id in entries
        }
        return cls(
            library=MappingProxyType(entries),
            phases=phases,
            quests=ordered,
            quests_by_id=MappingProxyType(by_id),
            cited_by=MappingProxyType(cited),
        )

    def quest(self, quest_id: str) -> Quest:
        try:
            return self.quests_by_id[quest_id]
        except KeyError:
            raise KeyError(f"unknown quest {quest_id!r}") from None

    def find_task(self, ref: str | TaskRef) -> tuple[Quest, AnyTask]:
        """The quest and task named by ``QUEST/TASK``.

        KeyError when either part is unknown, and also when the text is not a
        ref at all: to a caller both mean "no such task".
        """
        if isinstance(ref, str):
            try:
                ref = TaskRef.parse(ref)
            except BadTaskRef as exc:
                raise KeyError(str(exc)) from None
        quest = self.quest(ref.quest)
        return quest, quest.task(ref.task)

    def phase_of(self, quest_id: str) -> Phase:
        for phase in self.phases:
            if quest_id in phase.quests:
                return phase
        raise KeyError(f"unknown quest {quest_id!r}")
