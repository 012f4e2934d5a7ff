"""What wraps every HTTP request: faults, auth, rate limits, error mapping, the journal, holds.

Handlers only raise ``ApiError`` and return data; this layer turns that into
Discord's responses and records each request, so every route behaves alike.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from urllib.parse import unquote

from aiohttp import web

from fakediscord.bodies import PAYLOAD
from fakediscord.context import Context, context_of
from fakediscord.errors import ApiError, unauthorized
from fakediscord.faults import Fault
from fakediscord.journal import RequestRecord
from fakediscord.responses import error_response, json_response, rate_limited, server_error

API_PREFIX = "/api/v10"
#: API routes that take no bot token: interaction callbacks and webhooks carry their own
PUBLIC_PREFIXES = ("/interactions/", "/webhooks/")
PUBLIC_ROUTES = {"/gateway"}
#: route parameters that split a route into separate rate-limit buckets
MAJOR_PARAMETERS = ("channel_id", "guild_id", "application_id", "token")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def route_template(request: web.Request) -> str:
    """``/channels/{channel_id}/messages``-style template, or the raw path when unrouted."""
    resource = request.match_info.route.resource
    template = resource.canonical if resource is not None else request.path
    return template.removeprefix(API_PREFIX)


@web.middleware
async def discord_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return await handler(request)
    ctx = context_of(request)
    route = route_template(request)
    key = f"{request.method} {route}"
    fault = ctx.faults.take(key)
    if fault is not None:
        response = _fault_response(fault)
    else:
        response = await _answer(request, handler, ctx, route, key)
    record = RequestRecord(
        method=request.method,
        route=route,
        path=request.path,
        status=response.status,
        at=ctx.clock.now(),
        payload=request.get(PAYLOAD),
        params=dict(request.match_info),
        reason=_audit_reason(request),
    )
    ctx.journal.add(record)
    ctx.changes.bump()
    if (hold := ctx.holds.take(record)) is not None:
        await hold.keep()  # done and recorded; the bot hears back only once it is released
    return response


async def _answer(
    request: web.Request, handler: Handler, ctx: Context, route: str, key: str
) -> web.StreamResponse:
    api = request.path.startswith(API_PREFIX)
    public = route in PUBLIC_ROUTES or route.startswith(PUBLIC_PREFIXES)
    if api and not public and request.headers.get("Authorization") != f"Bot {ctx.token}":
        return error_response(unauthorized())
    bucket = None
    if api:
        major = "+".join(request.match_info.get(p, "") for p in MAJOR_PARAMETERS)
        bucket = ctx.ratelimits.hit(key, major)
        if bucket.exhausted:
            response = rate_limited(bucket.reset_after, "user")
            response.headers.update(bucket.headers())
            return response
    try:
        response = await handler(request)
    except ApiError as error:
        response = error_response(error)
    except web.HTTPException as error:
        response = json_response(
            {"message": f"{error.status}: {error.reason}", "code": 0}, error.status
        )
    except Exception as error:
        # A bug in the fake: kept so FakeDiscord.stop() fails the test with it.
        ctx.crashes.append(error)
        response = json_response({"message": f"fake Discord crashed: {error!r}", "code": 0}, 500)
    if bucket is not None:
        response.headers.update(bucket.headers())
    return response


def _audit_reason(request: web.Request) -> str | None:
    raw = request.headers.get("X-Audit-Log-Reason")
    return None if raw is None else unquote(raw)


def _fault_response(fault: Fault) -> web.Response:
    if fault.status == 429:
        return rate_limited(fault.retry_after, "shared")
    return server_error(fault.status)
