"""Serving attachment bytes at their signed URLs, so ``Attachment.read()`` works offline."""

from __future__ import annotations

from aiohttp import web

from fakediscord.context import context_of
from fakediscord.signed_urls import PATH

routes = web.RouteTableDef()


@routes.get(PATH + "/{channel_id}/{attachment_id}/{filename}")
async def download(request: web.Request) -> web.Response:
    ctx = context_of(request)
    query = request.query
    signed = ctx.cdn.valid(
        request.rel_url.raw_path, query.get("ex", ""), query.get("is", ""), query.get("hm", "")
    )
    attachment_id = request.match_info["attachment_id"]
    attachment = ctx.world.files.get(int(attachment_id)) if attachment_id.isdigit() else None
    if not signed or attachment is None:
        return web.Response(status=404, text="This content is no longer available.")
    return web.Response(
        body=attachment.data,
        content_type=attachment.content_type or "application/octet-stream",
    )
