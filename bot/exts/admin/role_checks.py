"""Whether the bot can hand out a role, checked before a moderator is promised it will.

Discord refuses (403, code 50013) any role write unless the bot has Manage Roles and the role
sits strictly below the bot's highest role; managed roles (integrations, boosts) and @everyone
can never be given.  Saying so at ``/admin roles add`` beats a silent failure at the first level-up.
"""

from __future__ import annotations

import discord


def unmanageable_role(role: discord.Role) -> str | None:
    """Why the bot cannot give ``role`` to members, or None when it can."""
    me = role.guild.me
    if role.is_default():
        return "@everyone belongs to every member already."
    if role.managed:
        return (
            "it is managed by an integration (a bot, a boost or a subscription), "
            "so nobody can assign it."
        )
    if not me.guild_permissions.manage_roles:
        return (
            "I am missing the Manage Roles permission. "
            "Give it to my role in Server Settings → Roles."
        )
    if role >= me.top_role:
        return (
            f"it is not below my highest role ({me.top_role.name}). Drag my role above it in "
            "Server Settings → Roles."
        )
    return None
