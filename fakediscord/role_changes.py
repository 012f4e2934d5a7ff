"""Changing who holds which role, and where roles sit, announced as Discord announces it.

A bot with only the GUILDS intent hears of role edits (GUILD_ROLE_UPDATE) and of
changes to its own member, but not of other members' changes: GUILD_MEMBER_UPDATE
needs GUILD_MEMBERS except for the current user.
"""

from __future__ import annotations

from fakediscord.entities import Guild, Member, Role
from fakediscord.gateway import GUILD_MEMBERS, GUILDS, Gateway


async def set_member_role(
    gateway: Gateway, guild: Guild, member: Member, role: Role, *, held: bool
) -> bool:
    """Gives (``held``) or takes ``role``; False when nothing changed (then nothing is sent)."""
    if (role.id in member.role_ids) == held:
        return False
    if held:
        member.role_ids.append(role.id)
    else:
        member.role_ids.remove(role.id)
    is_bot = member.user.id == gateway.bot_id
    await gateway.publish(
        "GUILD_MEMBER_UPDATE",
        {"guild_id": str(guild.id), **member.payload()},
        None if is_bot else GUILD_MEMBERS,
    )
    return True


async def edit_role(
    gateway: Gateway, role: Role, *, position: int | None, permissions: int | None
) -> None:
    """Moves ``role`` to ``position`` exactly (ties allowed, broken by id as Discord does)
    and/or replaces its permissions."""
    if position is not None:
        if role.is_everyone or position < 1:
            raise ValueError("@everyone stays at position 0; other roles start at 1")
        role.position = position
    if permissions is not None:
        role.permissions = permissions
    data = {"guild_id": str(role.guild_id), "role": role.payload()}
    await gateway.publish("GUILD_ROLE_UPDATE", data, GUILDS)
