"""HTTP routes, one module per area of Discord's API."""

from __future__ import annotations

from aiohttp import web

from fakediscord.routes import (
    cdn,
    channels,
    commands,
    identity,
    interactions,
    members,
    threads,
)


def add_routes(app: web.Application) -> None:
    for module in (identity, channels, threads, members, commands, interactions, cdn):
        app.add_routes(module.routes)
