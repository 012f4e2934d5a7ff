"""The INTERACTION_CREATE payload around a draft: who, where, with which permissions.

discord.py reads fields here that the docs call optional but it does not
default (``attachment_size_limit``, member ``flags``), so all are filled.
"""

from __future__ import annotations

from typing import Any

from fakediscord.entities import UPLOAD_LIMITS
from fakediscord.invocations import Draft
from fakediscord.world import World

GUILD_CONTEXT = 0
BOT_DM_CONTEXT = 1


def envelope(world: World, draft: Draft, interaction_id: int, token: str) -> dict[str, Any]:
    channel = world.channel(draft.channel_id)
    user = world.user(draft.user_id)
    user_permissions = world.permissions_in(channel, user)
    payload: dict[str, Any] = {
        "id": str(interaction_id),
        "application_id": str(world.application.id),
        "type": int(draft.kind),
        "data": draft.data,
        "token": token,
        "version": 1,
        "channel_id": str(channel.id),
        "channel": {**channel.payload(), "permissions": str(user_permissions)},
        "app_permissions": str(world.permissions_in(channel, world.bot)),
        "locale": user.locale,
        "entitlements": [],
        "entitlement_sku_ids": [],
    }
    if draft.guild_id is None:
        payload.update(
            user=user.payload(),
            context=BOT_DM_CONTEXT,
            authorizing_integration_owners={"0": "0"},
            attachment_size_limit=UPLOAD_LIMITS[0],
        )
    else:
        guild = world.guilds[draft.guild_id]
        payload.update(
            guild_id=str(guild.id),
            guild={"id": str(guild.id), "locale": guild.locale, "features": []},
            guild_locale=guild.locale,
            member=guild.members[user.id].payload(user_permissions),
            context=GUILD_CONTEXT,
            authorizing_integration_owners={"0": str(guild.id)},
            attachment_size_limit=guild.upload_limit,
        )
    if draft.source_message_id is not None:
        payload["message"] = world.messages[draft.source_message_id].payload()
    return payload
