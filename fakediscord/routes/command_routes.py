"""Application commands: what ``tree.sync()`` PUTs and ``fetch_commands()`` GETs."""

from __future__ import annotations

from aiohttp import web

from fakediscord import errors
from fakediscord.bodies import read_json
from fakediscord.context import Context, context_of
from fakediscord.errors import FormErrors
from fakediscord.middleware import API_PREFIX
from fakediscord.responses import json_response
from fakediscord.send_limits import check_commands

routes = web.RouteTableDef()
GLOBAL = API_PREFIX + "/applications/{application_id}/commands"
GUILD = API_PREFIX + "/applications/{application_id}/guilds/{guild_id}/commands"


@routes.get(GLOBAL)
@routes.get(GUILD)
async def list_commands(request: web.Request) -> web.Response:
    ctx = context_of(request)
    scope = _scope(ctx, request)
    return json_response([c.payload() for c in ctx.commands.listed(scope)])


@routes.put(GLOBAL)
@routes.put(GUILD)
async def overwrite_commands(request: web.Request) -> web.Response:
    ctx = context_of(request)
    scope = _scope(ctx, request)
    commands = await read_json(request)
    if not isinstance(commands, list):
        raise errors.invalid_json()
    form = FormErrors()
    check_commands(commands, form)
    form.raise_if_any()
    registered = ctx.commands.overwrite(scope, commands)
    return json_response([c.payload() for c in registered])


def _scope(ctx: Context, request: web.Request) -> int | None:
    """None for global commands, else the guild; a foreign application id is refused."""
    if request.match_info["application_id"] != str(ctx.world.application.id):
        raise errors.missing_access()
    guild_id = request.match_info.get("guild_id")
    return None if guild_id is None else ctx.world.guild(guild_id).id
