"""Starting a public thread from a message.

Discord's rules: a text channel's visible message (50024 elsewhere), Create Public
Threads there (50013), a name of 1 to 100 characters and an archive duration it
knows (50035), and one thread per message (160004). The thread takes the
message's id.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from fakediscord import errors
from fakediscord.bodies import read_json
from fakediscord.context import context_of
from fakediscord.entities import ARCHIVE_DURATIONS, TEXT_CHANNEL
from fakediscord.errors import FormErrors
from fakediscord.middleware import API_PREFIX
from fakediscord.permissions import Permission
from fakediscord.responses import json_response
from fakediscord.routes.access import require, visible_channel

routes = web.RouteTableDef()
THREAD_NAME = 100


@routes.post(API_PREFIX + "/channels/{channel_id}/messages/{message_id}/threads")
async def start_thread_from_message(request: web.Request) -> web.Response:
    ctx = context_of(request)
    channel = visible_channel(ctx, request)
    payload = await read_json(request)
    if not isinstance(payload, dict):
        raise errors.invalid_json()
    name, archive_after = _checked(payload)
    message = ctx.world.message(channel, request.match_info["message_id"])
    if message.ephemeral:
        raise errors.unknown("Message")
    if channel.kind != TEXT_CHANNEL:
        raise errors.wrong_channel_type()
    require(ctx, channel, Permission.CREATE_PUBLIC_THREADS)
    thread = await ctx.composer.start_thread(
        channel, message, ctx.world.bot, name=name, archive_after=archive_after
    )
    return json_response(thread.payload())


def _checked(payload: dict[str, Any]) -> tuple[str, int]:
    """The thread's name and auto-archive minutes, or 50035 naming every bad field."""
    form = FormErrors()
    name = payload.get("name")
    if not isinstance(name, str) or not name:
        form.add(["name"], "BASE_TYPE_REQUIRED", "This field is required")
    elif len(name) > THREAD_NAME:
        form.too_long(["name"], THREAD_NAME)
    archive_after = payload.get("auto_archive_duration") or ARCHIVE_DURATIONS[1]
    if archive_after not in ARCHIVE_DURATIONS:
        form.add(
            ["auto_archive_duration"],
            "BASE_TYPE_CHOICES",
            f"Value must be one of {set(ARCHIVE_DURATIONS)}.",
        )
    form.raise_if_any()
    return str(name), int(archive_after)
