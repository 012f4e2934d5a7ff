"""Who is who: gateway discovery, the bot user, the application, users, guilds, members."""

from __future__ import annotations

from aiohttp import web

from fakediscord.context import context_of
from fakediscord.middleware import API_PREFIX
from fakediscord.responses import json_response

routes = web.RouteTableDef()


@routes.get(API_PREFIX + "/gateway")
async def get_gateway(request: web.Request) -> web.Response:
    return json_response({"url": _gateway_url(request)})


@routes.get(API_PREFIX + "/gateway/bot")
async def get_gateway_bot(request: web.Request) -> web.Response:
    """Only AutoShardedClient asks this; a plain Client uses DEFAULT_GATEWAY."""
    return json_response(
        {
            "url": _gateway_url(request),
            "shards": 1,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 86_400_000,
                "max_concurrency": 1,
            },
        }
    )


def _gateway_url(request: web.Request) -> str:
    # Discord hands out a bare URL; the client adds ?v=10&encoding=json itself.
    return context_of(request).gateway.connect_url


@routes.get(API_PREFIX + "/users/@me")
async def get_me(request: web.Request) -> web.Response:
    bot = context_of(request).world.bot
    return json_response({**bot.payload(), "verified": True, "mfa_enabled": False})


@routes.get(API_PREFIX + "/oauth2/applications/@me")
@routes.get(API_PREFIX + "/applications/@me")
async def get_application(request: web.Request) -> web.Response:
    return json_response(context_of(request).world.application.payload())


@routes.get(API_PREFIX + "/users/{user_id}")
async def get_user(request: web.Request) -> web.Response:
    world = context_of(request).world
    return json_response(world.user(request.match_info["user_id"]).payload())


@routes.get(API_PREFIX + "/guilds/{guild_id}")
async def get_guild(request: web.Request) -> web.Response:
    ctx = context_of(request)
    guild = ctx.world.guild(request.match_info["guild_id"])
    payload = guild.create_payload(ctx.clock.iso(), all_members=False, bot_id=ctx.world.bot.id)
    for live_only in ("members", "channels", "threads", "presences", "voice_states", "joined_at"):
        payload.pop(live_only)
    return json_response(payload)


@routes.get(API_PREFIX + "/guilds/{guild_id}/members/{user_id}")
async def get_member(request: web.Request) -> web.Response:
    world = context_of(request).world
    guild = world.guild(request.match_info["guild_id"])
    return json_response(world.member(guild, request.match_info["user_id"]).payload())
