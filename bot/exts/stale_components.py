"""Clicks on buttons nothing handles any more get an answer, never "This interaction failed".

Every component the bot sends has a custom id starting with ``brrr:`` and a dynamic item that
needs nothing in memory.  Another id belongs either to something this process still handles
(a view it holds, such as a quiz's Continue button, or another dynamic item) or to a message
sent before a restart, whose view died with the old process (discord.py's random ids).  The
second kind is told so, and the message loses its components where Discord lets the bot edit
it.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Self

import discord

from bot.app import BrrrBot

log = logging.getLogger(__name__)

STALE = "This button is from before the bot restarted and no longer works: run the command again."


class StaleComponent(
    discord.ui.DynamicItem[discord.ui.Item[Any]],
    template=re.compile(r"(?!brrr:).+", re.DOTALL),
):
    """Any component whose custom id is not the bot's ``brrr:`` kind."""

    def __init__(self, item: discord.ui.Item[Any], *, handled: bool) -> None:
        super().__init__(item)
        self.handled = handled

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> Self:
        return cls(item, handled=_handled_elsewhere(interaction, item.type.value, match.group()))

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        return not self.handled  # then the click is someone else's to answer

    async def callback(self, interaction: discord.Interaction) -> None:
        try:
            await interaction.response.edit_message(view=None)
        except discord.HTTPException as exc:
            log.info("could not remove stale components from message: %s", exc)
            await interaction.response.send_message(STALE, ephemeral=True)
            return
        await interaction.followup.send(STALE, ephemeral=True)


def _handled_elsewhere(
    interaction: discord.Interaction, component_type: int, custom_id: str
) -> bool:
    """Whether another dynamic item or a view held by this process answers the click
    (discord.py dispatches a click to every match).

    discord.py offers no public lookup, so this reads its view store the way its own dispatch
    does: the other dynamic items' templates, then views by the message's id, then views
    registered without one.
    """
    store = interaction.client._connection._view_store
    for pattern, item in store._dynamic_items.items():
        if item is not StaleComponent and pattern.fullmatch(custom_id):
            return True
    key = (component_type, custom_id)
    message_id = interaction.message.id if interaction.message is not None else None
    return any(key in store._views.get(entity, {}) for entity in (message_id, None))


async def setup(bot: BrrrBot) -> None:
    bot.add_dynamic_items(StaleComponent)


async def teardown(bot: BrrrBot) -> None:
    bot.remove_dynamic_items(StaleComponent)
