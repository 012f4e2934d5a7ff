"""/admin roles: which role each level earns, and whether members keep them all or the top one."""

from __future__ import annotations

from typing import Literal

import discord
from discord import app_commands

from bot import clock
from bot.exts.admin.role_checks import unmanageable_role
from bot.exts.admin.shared import AdminBase, reply
from bot.exts.common import UserFacingError, guild_id_of
from bot.progress import level_roles
from bot.progress.level_roles import MAX_LEVEL, LevelRoleRefused, Listing

MODE_MEANING = {
    "stack": "members keep every level role they have reached",
    "highest": "members keep only the highest level role they have reached",
}


class RoleCommands(AdminBase):
    roles_group = app_commands.Group(name="roles", description="Roles members earn by level")

    @roles_group.command(name="add", description="Give a role to every member at a level")
    @app_commands.describe(level=f"the level that earns it (1 to {MAX_LEVEL})", role="the role")
    async def roles_add(
        self,
        interaction: discord.Interaction,
        level: app_commands.Range[int, 1, MAX_LEVEL],
        role: discord.Role,
    ) -> None:
        problem = unmanageable_role(role)
        if problem:
            raise UserFacingError(f"I cannot give {role.mention}: {problem}")
        guild_id = guild_id_of(interaction)
        try:
            added = await self.bot.services.write(
                level_roles.add_level_role,
                guild_id=guild_id,
                level=level,
                role_id=role.id,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        except LevelRoleRefused as exc:
            raise UserFacingError(str(exc)) from None
        self.bot.dispatch("roles_changed", guild_id)
        text = f"Members who reach level {level} now get {role.mention}. " + _backfill(
            added.queued, level
        )
        if added.replaced_role_id is not None:
            text += (
                f" It replaces <@&{added.replaced_role_id}> for level {level}: I take that "
                "one back from the members I gave it to."
            )
        await reply(interaction, text)

    @roles_group.command(name="remove", description="Stop giving a level's role")
    @app_commands.describe(level="the level whose role to remove")
    async def roles_remove(
        self, interaction: discord.Interaction, level: app_commands.Range[int, 1, MAX_LEVEL]
    ) -> None:
        guild_id = guild_id_of(interaction)
        try:
            removed = await self.bot.services.write(
                level_roles.remove_level_role,
                guild_id=guild_id,
                level=level,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        except LevelRoleRefused as exc:
            raise UserFacingError(str(exc)) from None
        self.bot.dispatch("roles_changed", guild_id)
        role = f"<@&{removed.role_id}>"
        taking = (
            f"I am taking {role} back from the {_members(removed.queued)} I gave it to, "
            "in the background."
            if removed.queued
            else f"Nobody holds {role} from me, so nothing else changes."
        )
        await reply(interaction, f"Level {level} no longer gives {role}. {taking}")

    @roles_group.command(name="list", description="The level roles, who holds them, and errors")
    async def roles_list(self, interaction: discord.Interaction) -> None:
        listing = await self.bot.services.read(
            level_roles.list_level_roles, guild_id_of(interaction)
        )
        await reply(interaction, listing_text(listing))

    @roles_group.command(name="mode", description="Keep every level role reached, or the top one")
    @app_commands.describe(mode="stack: every level role reached; highest: only the highest")
    async def roles_mode(
        self, interaction: discord.Interaction, mode: Literal["stack", "highest"]
    ) -> None:
        guild_id = guild_id_of(interaction)
        try:
            change = await self.bot.services.write(
                level_roles.set_mode,
                guild_id=guild_id,
                mode=mode,
                actor_user_id=interaction.user.id,
                now=clock.now(),
            )
        except LevelRoleRefused as exc:
            raise UserFacingError(str(exc)) from None
        self.bot.dispatch("roles_changed", guild_id)
        text = f"Mode: **{change.new}**: {MODE_MEANING[change.new]}."
        if change.old == change.new:
            text += " (It already was.)"
        elif change.queued:
            text += f" Updating the roles of {_members(change.queued)} in the background."
        await reply(interaction, text)


def listing_text(listing: Listing) -> str:
    """The reply of ``/admin roles list``."""
    lines = [f"Mode: **{listing.mode}**: {MODE_MEANING[listing.mode]}."]
    if listing.roles:
        lines += [
            f"Level {r.level} → <@&{r.role_id}> · held by {_members(r.holders)}"
            for r in listing.roles
        ]
    else:
        lines.append("No level roles yet: add one with `/admin roles add`.")
    if listing.waiting:
        lines.append(f"{_members(listing.waiting)} waiting for a role update.")
    if listing.last_error:
        lines.append(f"{_members(listing.failing)} failed last time. {listing.last_error}")
    return "\n".join(lines)


def _backfill(queued: int, level: int) -> str:
    if not queued:
        return f"Nobody is at level {level} yet."
    return (
        f"{_members(queued)} already at level {level} will get it in the background "
        "(Discord allows a few role changes per second, so a large server takes a while)."
    )


def _members(count: int) -> str:
    return f"{count:,} member" + ("" if count == 1 else "s")
