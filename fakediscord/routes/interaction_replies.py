"""Answering interactions: the initial callback, then the token's webhook for edits and
follow-ups.

Every refusal is also kept on the interaction's record, so a test can see why
the bot's answer never arrived (late, twice, too long, token expired...).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from aiohttp import web

from fakediscord import errors
from fakediscord.bodies import Body, read_body
from fakediscord.context import Context, context_of
from fakediscord.errors import ApiError, FormErrors
from fakediscord.interaction_rules import InteractionRecord, Kind, Reply
from fakediscord.messages import (
    CHAT_INPUT_COMMAND,
    DEFAULT,
    EPHEMERAL,
    InteractionOrigin,
    Message,
)
from fakediscord.middleware import API_PREFIX
from fakediscord.responses import json_response, no_content
from fakediscord.send_limits import check_choices, check_modal

routes = web.RouteTableDef()
CALLBACK = API_PREFIX + "/interactions/{interaction_id}/{token}/callback"
WEBHOOK = API_PREFIX + "/webhooks/{application_id}/{token}"
WEBHOOK_MESSAGE = WEBHOOK + "/messages/{message_id}"
CONTEXT_MENU_COMMAND = 23
TRUE = {"1", "true", "True"}
T = TypeVar("T")


@routes.post(CALLBACK)
async def respond(request: web.Request) -> web.Response:
    ctx = context_of(request)
    record = ctx.interactions.by_callback(
        request.match_info["interaction_id"], request.match_info["token"]
    )
    body = await read_body(request)

    async def answer() -> tuple[Reply, Message | None]:
        reply = record.check_reply(int(body.payload.get("type", 0)), ctx.clock.now())
        return reply, await _perform(ctx, record, reply, body)

    reply, message = await _tracked(record, answer())
    record.accept_reply(reply)
    if request.query.get("with_response") not in TRUE:
        return no_content()
    return json_response(_callback_payload(record, reply, message))


async def _perform(
    ctx: Context, record: InteractionRecord, reply: Reply, body: Body
) -> Message | None:
    """Carries out an accepted response type; returns the message it shows, if any."""
    data = Body(payload=body.payload.get("data") or {}, uploads=body.uploads)
    channel = ctx.world.channel(record.channel_id)
    bot = ctx.world.bot
    form = FormErrors()
    if reply is Reply.CHANNEL_MESSAGE:
        message = await ctx.composer.create(
            channel,
            bot,
            data,
            path=["data"],
            ephemeral_ok=True,
            origin=_origin(ctx, record),
            kind=_message_kind(record),
        )
        record.original_id = message.id
        return message
    if reply is Reply.DEFERRED_CHANNEL_MESSAGE:
        flags = int(data.payload.get("flags") or 0)
        if flags & ~EPHEMERAL:
            form.add(["data", "flags"], "INTERACTION_DEFER_FLAGS", "Only EPHEMERAL is allowed")
        form.raise_if_any()
        message = await ctx.composer.placeholder(
            channel, bot, _origin(ctx, record), flags=flags, kind=_message_kind(record)
        )
        record.original_id = message.id
        return message
    if reply in (Reply.DEFERRED_UPDATE_MESSAGE, Reply.UPDATE_MESSAGE):
        if record.source_message_id is None:
            raise errors.invalid_form(
                ["type"], "INTERACTION_RESPONSE_TYPE_INVALID", "Interaction has no message"
            )
        source = ctx.world.messages[record.source_message_id]
        if reply is Reply.UPDATE_MESSAGE:
            await ctx.composer.edit(source, data, path=["data"])
        record.original_id = source.id
        return source
    if reply is Reply.AUTOCOMPLETE_RESULT:
        choices = list(data.payload.get("choices") or [])
        check_choices(choices, form, ["data", "choices"])
        form.raise_if_any()
        record.choices = choices
        return None
    check_modal(data.payload, form, ["data"])
    form.raise_if_any()
    record.modal = data.payload
    return None


def _callback_payload(
    record: InteractionRecord, reply: Reply, message: Message | None
) -> dict[str, Any]:
    """What ``?with_response=1`` returns; discord.py needs ``response_message_id`` for views."""
    interaction: dict[str, Any] = {
        "id": str(record.id),
        "type": int(record.kind),
        "response_message_loading": reply is Reply.DEFERRED_CHANNEL_MESSAGE,
        "response_message_ephemeral": message is not None and message.ephemeral,
    }
    resource: dict[str, Any] = {"type": int(reply)}
    if message is not None:
        interaction["response_message_id"] = str(message.id)
        resource["message"] = message.payload()
    return {"interaction": interaction, "resource": resource}


@routes.post(WEBHOOK)
async def follow_up(request: web.Request) -> web.Response:
    ctx = context_of(request)
    record = _record(ctx, request)

    async def send() -> Message:
        record.check_token(ctx.clock.now())
        body = await read_body(request)
        original = ctx.world.messages.get(record.original_id or 0)
        if original is not None and original.loading:
            # After a thinking defer, the first follow-up replaces the placeholder.
            return await ctx.composer.edit(original, body)
        message = await ctx.composer.create(
            ctx.world.channel(record.channel_id),
            ctx.world.bot,
            body,
            ephemeral_ok=True,
            origin=_origin(ctx, record),
            kind=DEFAULT,
        )
        record.followup_ids.append(message.id)
        return message

    message = await _tracked(record, send())
    if request.query.get("wait") not in TRUE:
        return no_content()
    return json_response(message.payload())


@routes.get(WEBHOOK_MESSAGE)
async def get_response(request: web.Request) -> web.Response:
    ctx = context_of(request)
    record = _record(ctx, request)
    message = await _tracked(record, _response_message(ctx, record, request))
    return json_response(message.payload())


@routes.patch(WEBHOOK_MESSAGE)
async def edit_response(request: web.Request) -> web.Response:
    ctx = context_of(request)
    record = _record(ctx, request)

    async def edit() -> Message:
        message = await _response_message(ctx, record, request)
        return await ctx.composer.edit(message, await read_body(request))

    message = await _tracked(record, edit())
    return json_response(message.payload())


@routes.delete(WEBHOOK_MESSAGE)
async def delete_response(request: web.Request) -> web.Response:
    ctx = context_of(request)
    record = _record(ctx, request)

    async def delete() -> None:
        await ctx.composer.delete(await _response_message(ctx, record, request))

    await _tracked(record, delete())
    return no_content()


def _record(ctx: Context, request: web.Request) -> InteractionRecord:
    if request.match_info["application_id"] != str(ctx.world.application.id):
        raise errors.unknown("Webhook")
    return ctx.interactions.by_token(request.match_info["token"])


async def _response_message(
    ctx: Context, record: InteractionRecord, request: web.Request
) -> Message:
    """``@original`` or one of this interaction's follow-ups; nothing else is reachable."""
    record.check_token(ctx.clock.now())
    wanted = request.match_info["message_id"]
    if wanted == "@original":
        message_id = record.original_id
    elif wanted.isdigit() and int(wanted) in record.followup_ids:
        message_id = int(wanted)
    else:
        message_id = None
    message = ctx.world.messages.get(message_id or 0)
    if message is None or message.deleted:
        raise errors.unknown("Message")
    return message


async def _tracked(record: InteractionRecord, action: Awaitable[T]) -> T:
    try:
        return await action
    except ApiError as error:
        record.rejections.append(error)
        raise


def _origin(ctx: Context, record: InteractionRecord) -> InteractionOrigin:
    name = None
    if record.kind is Kind.APPLICATION_COMMAND:
        name = " ".join(_command_path(record.payload["data"]))
    return InteractionOrigin(
        id=record.id,
        kind=int(record.kind),
        user=ctx.world.users[record.user_id],
        name=name,
        guild_id=record.guild_id,
    )


def _command_path(data: dict[str, Any]) -> list[str]:
    """``["admin", "setup"]`` for ``/admin setup``: the name plus subcommand options."""
    path = [str(data["name"])]
    options = data.get("options") or []
    while options and options[0].get("type") in (1, 2):
        path.append(str(options[0]["name"]))
        options = options[0].get("options") or []
    return path


def _message_kind(record: InteractionRecord) -> int:
    if record.kind is not Kind.APPLICATION_COMMAND:
        return DEFAULT
    chat_input = record.payload["data"].get("type", 1) == 1
    return CHAT_INPUT_COMMAND if chat_input else CONTEXT_MENU_COMMAND
