"""HTTP routes, one module per area of Discord's API."""

from __future__ import annotations

from aiohttp import web

from fakediscord.routes import (
    attachment_bytes,
    channels,
    command_routes,
    identity,
    interaction_replies,
    member_roles,
    threads,
)


def add_routes(app: web.Application) -> None:
    for module in (
        identity,
        channels,
        threads,
        member_roles,
        command_routes,
        interaction_replies,
        attachment_bytes,
    ):
        app.add_routes(module.routes)
