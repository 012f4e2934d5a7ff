"""Absolute links to a server's public web pages, for Discord messages.

A server's pages are reachable only when it opted in (``/admin setup web:true``), the bot
serves them (``WEB_PORT`` is not 0) and the operator said where they are reached from outside
(``WEB_BASE_URL``); ``page_links`` is None otherwise, and then no message links anywhere.  The
addresses are ``bot.web.site``'s, built here from ids alone: the pages' own templates build
their relative links themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from bot.config import Settings
from bot.content.refs import TaskRef
from bot.db.models import Guild

Period = Literal["week", "month", "all"]
PERIODS: tuple[Period, ...] = ("week", "month", "all")
#: rows on one page of a web XP board (``bot.web.site.PAGE_SIZE``; a test holds them equal)
WEB_PAGE_SIZE = 50


@dataclass(frozen=True)
class PageLinks:
    """The pages of one server under ``base`` (no trailing slash)."""

    base: str
    guild_id: int

    @property
    def _root(self) -> str:
        return f"{self.base}/g/{self.guild_id}"

    def home(self) -> str:
        return f"{self._root}/"

    def board(self, period: Period, page: int = 1) -> str:
        """The XP board of ``period``, at its web page ``page`` (1 is the board's own address)."""
        if period not in PERIODS:
            raise ValueError(f"no board for the period {period!r}")
        if page < 1:
            raise ValueError(f"board pages start at 1, not {page}")
        url = f"{self._root}/xp/{period}"
        return url if page == 1 else f"{url}?page={page}"

    def board_holding(self, period: Period, position: int) -> str:
        """The web page of the ``period`` board that shows its ``position``-th row (1-based):
        where a Discord page, shorter than a web page, continues on the web."""
        return self.board(period, web_page_holding(position))

    def member(self, user_id: int) -> str:
        """A member's page, by their Discord user id (it answers only while they are listed)."""
        return f"{self._root}/members/{int(user_id)}"

    def speed_board(self, task_ref: str) -> str:
        """A task's speed board; ``BadTaskRef`` when ``task_ref`` is not ``QUEST/TASK``."""
        ref = TaskRef.parse(task_ref)
        return f"{self._root}/speed/{ref.quest}/{ref.task}"

    def speed_boards(self) -> str:
        return f"{self._root}/speed"

    def map(self) -> str:
        return f"{self._root}/map"


def web_page_holding(position: int) -> int:
    """The web board page that shows row ``position`` (1-based)."""
    return max(position - 1, 0) // WEB_PAGE_SIZE + 1


def links(
    *, base_url: str | None, serving: bool, guild_id: int, published: bool
) -> PageLinks | None:
    """The server's links, or None unless it ``published`` its pages, the bot is ``serving``
    them (``WEB_PORT`` is not 0) and ``base_url`` (``WEB_BASE_URL``) is set."""
    if not (published and serving and base_url):
        return None
    return PageLinks(base_url.rstrip("/"), guild_id)


def page_links(settings: Settings, guild: Guild | None) -> PageLinks | None:
    """The links of ``guild`` under these settings (None for no server, as for one that has
    not opted in)."""
    if guild is None:
        return None
    return links(
        base_url=settings.web_base_url,
        serving=settings.web_port != 0,
        guild_id=guild.id,
        published=bool(guild.web_pages),
    )


def missing_settings(settings: Settings) -> tuple[str, ...]:
    """The settings the operator must still give for anyone to reach a published server's
    pages through a link: ``WEB_PORT`` (0 serves none) and ``WEB_BASE_URL``."""
    missing = []
    if settings.web_port == 0:
        missing.append("WEB_PORT")
    if not settings.web_base_url:
        missing.append("WEB_BASE_URL")
    return tuple(missing)
