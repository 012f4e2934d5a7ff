"""The public pages' HTTP routes, on a listener of their own (``WEB_HOST:WEB_PORT``).

The operations routes (``/metrics``, ``/healthz``) and the API live on the other listener
(``bot.http.server``), so publishing these pages publishes nothing else.  Every page is read
from the same domain functions as the Discord replies (``bot.progress.leaderboard``,
``speed_results``, ``public``; the map from ``Services.guild_map``).

Addresses are ids, stable and shareable: ``/g/{server id}/`` then ``xp/{week|month|all}``,
``speed``, ``speed/{quest}/{task}``, ``map`` and ``members/{Discord user id}``.  A server that
has not opted in answers 404 to everything, and so does a member who is not listed, with the
very bytes a member who never existed gets.  Every error is a plain page (400, 404, 405), never
a traceback; every page carries a strict Content-Security-Policy and an ``ETag``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol
from zoneinfo import ZoneInfo

from aiohttp import web

from bot import clock
from bot.config import Settings
from bot.content import TaskRef
from bot.curriculum.guild_map import today_quest
from bot.curriculum.task_choices import speed_boards
from bot.db.models import Guild
from bot.http.server import listening
from bot.presentation.roofline_svg import roofline_svg
from bot.progress.leaderboard import leaderboard
from bot.progress.public import member_page, published_guild
from bot.progress.speed_results import is_speed_ranked, speed_board, speed_task_refs
from bot.progress.totals import Board
from bot.services import Services
from bot.web.render import STATIC, render, static_file

log = logging.getLogger(__name__)

#: XP board rows per page (Discord shows 10; a page has room for more)
PAGE_SIZE = 50
#: speed results per device class on a task's page
PER_DEVICE = 50
#: a page number longer than this is not one any board has
PAGE_DIGITS = 7
#: how long a browser or proxy may reuse a page before asking again (it then gets a 304)
MAX_AGE_S = 60
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}
PERIODS: dict[str, str] = {"week": "This week", "month": "This month", "all": "All time"}
ID = r"[0-9]{1,20}"
SLUG = r"[a-z0-9]+(?:-[a-z0-9]+)*"
MAX_ID = 2**63 - 1
_PAGE_NUMBER = re.compile(rf"[1-9][0-9]{{0,{PAGE_DIGITS - 1}}}")


class DiscordNames(Protocol):
    """Names the database does not hold: a server's and its roles' (from the bot's cache)."""

    def guild_name(self, guild_id: int) -> str | None: ...

    def role_name(self, guild_id: int, role_id: int) -> str | None: ...


@dataclass(frozen=True)
class Site:
    services: Services
    names: DiscordNames


SITE = web.AppKey("web-site", Site)
pages = web.RouteTableDef()


class PageError(Exception):
    """Answered as a plain page with ``status`` and ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


NOT_FOUND = "There is no page at this address."
NO_MEMBER = "There is no public page for this member."


def _respond(request: web.Request, body: bytes, *, status: int = 200) -> web.Response:
    """A page with its headers; a fresh ``If-None-Match`` gets 304 and no body."""
    headers = dict(SECURITY_HEADERS)
    if status == 200:
        tag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
        headers["ETag"] = tag
        headers["Cache-Control"] = f"public, max-age={MAX_AGE_S}"
        asked = request.headers.get("If-None-Match", "")
        if tag in (part.strip() for part in asked.split(",")) or asked.strip() == "*":
            return web.Response(status=304, headers=headers)
    else:
        headers["Cache-Control"] = "no-store"
    return web.Response(
        body=body, status=status, content_type="text/html", charset="utf-8", headers=headers
    )


def _page(request: web.Request, template: str, **context: Any) -> web.Response:
    return _respond(request, render(template, **context))


#: ``_page`` bound to one server: it takes a template and that page's own context
ServerPage = Callable[..., web.Response]


async def _guild(request: web.Request) -> tuple[Site, Guild, ServerPage]:
    """The opted-in server the address names, else 404; and ``_page`` with what every one of
    its pages needs, since ``base.html`` shows the server's name and links by its id."""
    site = request.app[SITE]
    guild_id = int(request.match_info["guild"])
    if guild_id > MAX_ID:
        raise PageError(404, NOT_FOUND)
    guild = await site.services.read(published_guild, guild_id)
    if guild is None:
        raise PageError(404, NOT_FOUND)
    name = site.names.guild_name(guild_id) or "This study group"
    return site, guild, functools.partial(_page, request, guild=guild, server=name)


def _page_number(request: web.Request) -> int:
    raw = request.query.get("page", "1")
    if not _PAGE_NUMBER.fullmatch(raw):
        raise PageError(400, "The page number must be a whole number from 1.")
    return int(raw)


@pages.get(rf"/g/{{guild:{ID}}}")
@pages.get(rf"/g/{{guild:{ID}}}/")
async def home(request: web.Request) -> web.Response:
    site, guild, show = await _guild(request)
    guild_map = await site.services.guild_map(guild.id)
    return show("home.html", periods=PERIODS, today=today_quest(guild_map, guild, clock.now()))


@pages.get(rf"/g/{{guild:{ID}}}/xp/{{period:week|month|all}}")
async def xp_board(request: web.Request) -> web.Response:
    site, guild, show = await _guild(request)
    period: Board = request.match_info["period"]  # type: ignore[assignment]
    number = _page_number(request)
    board = await site.services.read(
        leaderboard,
        guild_id=guild.id,
        period=period,
        page=number,
        tz=ZoneInfo(guild.timezone),
        now=clock.now(),
        caller_member_id=None,
        page_size=PAGE_SIZE,
    )
    if board.page != number:
        raise PageError(404, f"There is no page {number}: this board has {board.pages}.")
    return show("xp_board.html", board=board, period=period, periods=PERIODS)


@pages.get(rf"/g/{{guild:{ID}}}/speed")
async def speed_index(request: web.Request) -> web.Response:
    site, guild, show = await _guild(request)
    guild_map = await site.services.guild_map(guild.id)
    with_results = set(await site.services.read(speed_task_refs, guild.id))
    boards = speed_boards(guild_map, with_results)
    tasks = [(ref, title, ref in with_results) for ref, title in boards]
    return show("speed_index.html", tasks=tasks)


@pages.get(rf"/g/{{guild:{ID}}}/speed/{{quest:{SLUG}}}/{{task:{SLUG}}}")
async def speed_task(request: web.Request) -> web.Response:
    site, guild, show = await _guild(request)
    ref = str(TaskRef(request.match_info["quest"], request.match_info["task"]))
    guild_map = await site.services.guild_map(guild.id)
    try:
        task = guild_map.find_task(ref)[1]
    except KeyError:
        task = None
    board = await site.services.read(
        speed_board, guild_id=guild.id, task_ref=ref, per_device=PER_DEVICE
    )
    if board.empty and not (task is not None and is_speed_ranked(task)):
        raise PageError(404, "There is no speed board for this task.")
    title = task.title if task is not None else None
    return show("speed_task.html", board=board, ref=ref, title=title, svg=roofline_svg)


@pages.get(rf"/g/{{guild:{ID}}}/map")
async def quest_map(request: web.Request) -> web.Response:
    site, guild, show = await _guild(request)
    guild_map = await site.services.guild_map(guild.id)
    return show(
        "map.html",
        phases=guild_map.phases(),
        today=today_quest(guild_map, guild, clock.now()),
        library=site.services.content.library,
        speed_ranked=is_speed_ranked,
    )


@pages.get(rf"/g/{{guild:{ID}}}/members/{{user:{ID}}}")
async def member(request: web.Request) -> web.Response:
    site, guild, show = await _guild(request)
    user_id = int(request.match_info["user"])
    guild_map = await site.services.guild_map(guild.id)
    refs = {q.id: tuple(str(TaskRef(q.id, t.id)) for t in q.tasks) for q in guild_map.quests}
    data = None
    if user_id <= MAX_ID:
        data = await site.services.read(
            member_page, guild=guild, user_id=user_id, now=clock.now(), task_refs_by_quest=refs
        )
    if data is None:
        raise PageError(404, NO_MEMBER)
    roles = [
        (level, site.names.role_name(guild.id, role_id)) for level, role_id in data.level_roles
    ]
    titles = {ref: task.title for ref, _, task in guild_map.tasks()}
    return show("member.html", page=data, roles=roles, titles=titles)


@pages.get(r"/static/{name:[a-z]+\.(?:css|svg)}")
async def static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC:
        raise PageError(404, NOT_FOUND)
    body = static_file(name)
    tag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {**SECURITY_HEADERS, "ETag": tag, "Cache-Control": "public, max-age=3600"}
    if tag in request.headers.get("If-None-Match", ""):
        return web.Response(status=304, headers=headers)
    return web.Response(body=body, content_type=STATIC[name], charset="utf-8", headers=headers)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def plain_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as a plain page: ours with their words, aiohttp's 404 and 405 as such,
    anything else as a 500 that shows nothing of why (the log has it)."""
    try:
        return await handler(request)
    except PageError as exc:
        return _error(request, exc.status, exc.message)
    except web.HTTPException as exc:
        if exc.status == 405:
            return _error(request, 405, "This address only answers GET.")
        if exc.status in (400, 404):
            return _error(request, exc.status, NOT_FOUND if exc.status == 404 else exc.reason)
        raise
    except Exception:
        log.exception("web page %s failed", request.path)
        return _error(request, 500, "Something went wrong on our side; try again later.")


def _error(request: web.Request, status: int, message: str) -> web.Response:
    return _respond(request, render("error.html", status=status, message=message), status=status)


def make_site(services: Services, names: DiscordNames) -> web.Application:
    """The pages' application, for a listener of its own."""
    app = web.Application(middlewares=[plain_errors])
    app[SITE] = Site(services, names)
    app.add_routes(pages)
    return app


@contextlib.asynccontextmanager
async def web_pages(
    settings: Settings, services: Services, names: DiscordNames
) -> AsyncIterator[int | None]:
    """Serve the pages while the block runs; yields the port, or None when ``WEB_PORT=0``."""
    if settings.web_port == 0:
        log.info("web pages off (WEB_PORT=0)")
        yield None
        return
    site = make_site(services, names)
    async with listening(
        site, settings.web_host, settings.web_port, settings="WEB", serves="the web pages"
    ) as port:
        yield port
