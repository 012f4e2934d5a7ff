"""Channels and their messages, typing, and opening DMs.

Sending checks what Discord checks: the bot must see the channel (50001) and
may send (and attach files) there (50013; in a thread, Send Messages in Threads);
a DM fails with 50007 when the user does not accept DMs from the bot. Reads
withhold others' message content when the app lacks the Message Content intent.
"""

from __future__ import annotations

from aiohttp import web

from fakediscord import errors
from fakediscord.bodies import read_body, read_json
from fakediscord.context import context_of
from fakediscord.middleware import API_PREFIX
from fakediscord.permissions import Permission
from fakediscord.responses import json_response, no_content
from fakediscord.routes.access import require, visible_channel

routes = web.RouteTableDef()
CHANNEL = API_PREFIX + "/channels/{channel_id}"
MESSAGE = CHANNEL + "/messages/{message_id}"


@routes.get(CHANNEL)
async def get_channel(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    return json_response(channel.payload())


@routes.get(CHANNEL + "/messages")
async def list_messages(request: web.Request) -> web.Response:
    """Newest first, like Discord; ``before``/``after``/``limit`` page through."""
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    require(ctx, channel, Permission.READ_MESSAGE_HISTORY)
    before = _number(request, "before", 1 << 63)
    after = _number(request, "after", 0)
    limit = min(_number(request, "limit", 50), 100)
    found = [
        m
        for m in ctx.world.channel_messages(channel.id)
        if after < m.id < before and not m.ephemeral
    ]
    found.sort(key=lambda m: m.id, reverse=True)
    reader = ctx.gateway.rest_reader
    return json_response([m.payload(reader) for m in found[:limit]])


@routes.post(CHANNEL + "/messages")
async def create_message(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    body = await read_body(request)
    if channel.recipient is not None and not channel.recipient.dms_open:
        raise errors.cannot_dm()
    require(ctx, channel, channel.send_permission)
    if body.uploads:
        require(ctx, channel, Permission.ATTACH_FILES)
    message = await ctx.composer.create(channel, ctx.world.bot, body)
    return json_response(message.payload())


@routes.get(MESSAGE)
async def get_message(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    require(ctx, channel, Permission.READ_MESSAGE_HISTORY)
    message = ctx.world.message(channel, request.match_info["message_id"])
    return json_response(message.payload(ctx.gateway.rest_reader))


@routes.patch(MESSAGE)
async def edit_message(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    message = ctx.world.message(channel, request.match_info["message_id"])
    body = await read_body(request)
    if message.author.id != ctx.world.bot.id:
        raise errors.not_author()
    await ctx.composer.edit(message, body)
    return json_response(message.payload())


@routes.delete(MESSAGE)
async def delete_message(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    message = ctx.world.message(channel, request.match_info["message_id"])
    if message.author.id != ctx.world.bot.id:
        require(ctx, channel, Permission.MANAGE_MESSAGES)
    await ctx.composer.delete(message)
    return no_content()


@routes.post(CHANNEL + "/typing")
async def trigger_typing(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    require(ctx, channel, channel.send_permission)
    return no_content()


@routes.post(API_PREFIX + "/users/@me/channels")
async def open_dm(request: web.Request) -> web.Response:
    ctx = context_of(request)
    payload = await read_json(request)
    if not isinstance(payload, dict) or "recipient_id" not in payload:
        raise errors.invalid_form(["recipient_id"], "BASE_TYPE_REQUIRED", "This field is required")
    user = ctx.world.user(payload["recipient_id"])
    return json_response(ctx.world.dm_channel(user).payload())


def _number(request: web.Request, name: str, default: int) -> int:
    raw = request.query.get(name)
    if raw is None:
        return default
    if not raw.isdigit():
        raise errors.invalid_form([name], "NUMBER_TYPE_COERCE", f"Value {raw!r} is not a number.")
    return int(raw)
