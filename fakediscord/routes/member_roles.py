"""Giving and taking a member's role: ``PUT``/``DELETE /guilds/{g}/members/{u}/roles/{r}``.

Discord's rules: the member (10007) and role (10011) exist; the bot has Manage
Roles and the role is one people hand out (not @everyone, not managed) strictly
below the bot's highest role (else 403 50013). Both are idempotent (204 either
way) and share one per-guild rate-limit bucket (see ``ratelimits``).
"""

from __future__ import annotations

from aiohttp import web

from fakediscord import errors
from fakediscord.context import context_of
from fakediscord.middleware import API_PREFIX
from fakediscord.ratelimits import MEMBER_ROLE
from fakediscord.responses import no_content
from fakediscord.role_changes import set_member_role

routes = web.RouteTableDef()


@routes.put(API_PREFIX + MEMBER_ROLE)
async def add_member_role(request: web.Request) -> web.Response:
    return await _write(request, held=True)


@routes.delete(API_PREFIX + MEMBER_ROLE)
async def remove_member_role(request: web.Request) -> web.Response:
    return await _write(request, held=False)


async def _write(request: web.Request, *, held: bool) -> web.Response:
    ctx = context_of(request)
    world = ctx.world
    guild = world.guild(request.match_info["guild_id"])
    member = world.member(guild, request.match_info["user_id"])
    role = world.role(guild, request.match_info["role_id"])
    if not world.may_assign(guild, role):
        raise errors.missing_permissions()
    await set_member_role(ctx.gateway, guild, member, role, held=held)
    return no_content()
