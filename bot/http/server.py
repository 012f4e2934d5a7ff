"""The bot process's one HTTP server (aiohttp's, which discord.py already brings).

``make_app`` builds the application in one place: the operations routes (``/healthz``,
``/metrics``) plus whatever each setup function passed to it adds, so a later module (a
REST API) brings its own route table and state instead of a second server.  ``http_server``
runs it for as long as the bot runs, on ``HTTP_HOST:HTTP_PORT``; ``HTTP_PORT=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

from aiohttp import web

from bot.config import Settings
from bot.errors import ConfigError
from bot.http.health import HealthReport

log = logging.getLogger(__name__)

#: the Prometheus text format ``generate_latest`` writes
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
#: how long stopping waits for requests in flight (all of ours take milliseconds)
SHUTDOWN_TIMEOUT_S = 2.0

#: adds routes (``app.add_routes(table)``) and the state they need to the application
AppSetup = Callable[[web.Application], None]


class HealthSource(Protocol):
    async def report(self) -> HealthReport: ...


class MetricsSource(Protocol):
    async def render(self) -> bytes: ...


HEALTH = web.AppKey("health", HealthSource)
METRICS = web.AppKey("metrics", MetricsSource)

operations = web.RouteTableDef()


@operations.get("/healthz")
async def healthz(request: web.Request) -> web.Response:
    """200 while Discord and the database answer, else 503 naming what fails."""
    report = await request.app[HEALTH].report()
    return web.json_response(report.to_json(), status=200 if report.healthy else 503)


@operations.get("/metrics")
async def metrics(request: web.Request) -> web.Response:
    body = await request.app[METRICS].render()
    return web.Response(body=body, headers={"Content-Type": METRICS_CONTENT_TYPE})


def make_app(
    health: HealthSource, metrics: MetricsSource, setups: Sequence[AppSetup] = ()
) -> web.Application:
    """The application: the operations routes, then each setup's routes and state."""
    app = web.Application()
    app[HEALTH] = health
    app[METRICS] = metrics
    app.add_routes(operations)
    for setup in setups:
        setup(app)
    return app


@contextlib.asynccontextmanager
async def listening(
    app: web.Application,
    host: str,
    port: int,
    *,
    settings: str = "HTTP",
    serves: str = "/healthz, /metrics, /api/v1",
) -> AsyncIterator[int]:
    """Serve ``app`` on ``host:port`` (0: any free port) and yield the bound port.  A port in
    use or a host that is not this machine's fails here, naming the settings to change
    (``{settings}_PORT`` and ``{settings}_HOST``)."""
    # No access log: a scrape every 15 s and a healthcheck every 30 s would fill the log.
    runner = web.AppRunner(
        app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_TIMEOUT_S
    )
    await runner.setup()
    try:
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            raise ConfigError(
                f"{settings}_PORT: cannot listen on {host}:{port} ({exc.strerror or exc}); set "
                f"{settings}_PORT to a free port (and {settings}_HOST to an address of this "
                f"machine), or {settings}_PORT=0 to turn this listener off"
            ) from None
        bound = runner.addresses[0][1]
        log.info("%s listener on %s:%d (%s)", settings, host, bound, serves)
        yield bound
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def http_server(
    settings: Settings,
    health: HealthSource,
    metrics: MetricsSource,
    setups: Sequence[AppSetup] = (),
) -> AsyncIterator[int | None]:
    """Run the server while the block runs; yields the port, or None when ``HTTP_PORT=0``."""
    if settings.http_port == 0:
        log.info("HTTP server off (HTTP_PORT=0)")
        yield None
        return
    app = make_app(health, metrics, setups)
    async with listening(app, settings.http_host, settings.http_port) as port:
        yield port
