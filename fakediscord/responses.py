"""HTTP responses shaped like Discord's.

JSON goes out with Content-Type exactly ``application/json``: discord.py
compares the header verbatim and treats anything else (aiohttp's default adds
``; charset=utf-8``) as text, which breaks login.
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

from fakediscord.errors import ApiError

REASONS = {500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


def json_response(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(data).encode(),
        status=status,
        headers={"Content-Type": "application/json"},
    )


def no_content() -> web.Response:
    return web.Response(status=204)


def error_response(error: ApiError) -> web.Response:
    return json_response(error.body(), error.status)


def rate_limited(retry_after: float, scope: str) -> web.Response:
    """A 429 discord.py will wait out and retry: it needs the ``Via`` header and a JSON body."""
    response = json_response(
        {"message": "You are being rate limited.", "retry_after": retry_after, "global": False},
        429,
    )
    response.headers["Retry-After"] = str(math.ceil(retry_after))
    response.headers["Via"] = "1.1 google"
    response.headers["X-RateLimit-Scope"] = scope
    return response


def server_error(status: int) -> web.Response:
    """A 5xx like Discord's edge sends; gateway errors come as HTML, not JSON."""
    reason = REASONS.get(status, "Gateway Timeout")
    if status == 500:
        return json_response({"message": f"500: {reason}", "code": 0}, 500)
    return web.Response(
        text=f"<html><body><h1>{status} {reason}</h1></body></html>",
        status=status,
        content_type="text/html",
    )
