"""Leaderboards: a page of the ranking and the caller's own place, for a week, a month or all time.

Rules:

- ``week`` and ``month`` are the server-local periods containing "now"; ``all`` is all time.
- Only members with more than 0 XP in the period are ranked, and only listed ones: a member
  hidden from the boards (``/privacy hide``, or anonymised) is on no page, and the ranks close up
  around them.  Their own rank (``rank_of``) is still 1 + the listed members ahead of them.
- Order: more XP first; on equal XP, whoever reached that total first; then the lower member id,
  so the order is total and ranks are distinct positions.
- Pages hold 10 entries (Discord; the web pages ask for more) and are numbered from 1; a page
  past the end shows the last page.
- Reads only the derived totals, never the ledger: a page is one range of the ``member_xp``
  leaderboard index, and a rank or a board's size sums ``member_xp_counts`` (members per XP
  value) instead of counting every member ahead, so both stay within milliseconds with 100k
  members (``bench/leaderboard.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import ColumnElement, Row, Select, and_, bindparam, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot.db.models import Member, MemberXp, MemberXpCount
from bot.progress.totals import Board, period_key

PAGE_SIZE = 10


@dataclass(frozen=True)
class Entry:
    rank: int
    member_id: int
    user_id: int
    display_name: str
    xp: int
    listed: bool = True  # False: a hidden member's own place, shown to nobody else


@dataclass(frozen=True)
class Page:
    period: Board
    period_key: str
    page: int
    pages: int
    ranked: int  # members with XP in the period
    entries: tuple[Entry, ...]
    caller: Entry | None  # None when the caller has no XP in the period; unlisted when hidden


def _on_board(guild_id: int, board: Board, key: str) -> tuple[ColumnElement[bool], ...]:
    """The listed rows of one board (callers add ``xp > 0`` or an exact XP: not both, as SQLite
    would then range-scan on ``xp > 0``)."""
    return (
        MemberXp.guild_id == guild_id,
        MemberXp.period_kind == board,
        MemberXp.period_key == key,
        MemberXp.listed == true(),
    )


def _counts_of(guild_id: int, board: Board, key: str) -> tuple[ColumnElement[bool], ...]:
    """The per-XP-value counts of one board's listed members."""
    return (
        MemberXpCount.guild_id == guild_id,
        MemberXpCount.period_kind == board,
        MemberXpCount.period_key == key,
    )


def _members_at(guild_id: int, board: Board, key: str) -> Select[tuple[int]]:
    """How many listed members are on a board, to be narrowed to a range of XP values."""
    return select(func.coalesce(func.sum(MemberXpCount.members), 0)).where(
        *_counts_of(guild_id, board, key)
    )


_ORDER = (MemberXp.xp.desc(), MemberXp.reached_at, MemberXp.member_id)


@functools.cache
def _rank_query() -> Select[Any]:
    """``rank_of``'s statement, built once with its values bound at each execution."""
    me = aliased(MemberXp)
    guild_id, board, key = bindparam("guild_id"), bindparam("board"), bindparam("key")
    # Every listed member with more XP (from the per-value counts), and every listed one with the
    # same XP who reached it earlier or at the same instant with a lower id (a short range of the
    # leaderboard index).
    higher = _members_at(guild_id, board, key).where(MemberXpCount.xp > me.xp)
    tied_before = select(func.count()).where(
        *_on_board(guild_id, board, key),
        MemberXp.xp == me.xp,
        or_(
            MemberXp.reached_at < me.reached_at,
            and_(MemberXp.reached_at == me.reached_at, MemberXp.member_id < me.member_id),
        ),
    )
    return (
        select(
            me.member_id,
            Member.user_id,
            Member.display_name,
            me.xp,
            higher.scalar_subquery() + tied_before.scalar_subquery(),
            me.listed,
        )
        .join(Member, Member.id == me.member_id)
        .where(
            me.guild_id == guild_id,
            me.period_kind == board,
            me.period_key == key,
            me.member_id == bindparam("member_id"),
            me.xp > 0,
        )
    )


async def rank_of(
    session: AsyncSession, guild_id: int, board: Board, key: str, member_id: int
) -> Entry | None:
    """A member's place on one board, or None when they have no XP on it (one statement).

    A hidden member gets the place they would have (1 + the listed members ahead), unlisted.
    """
    values = {"guild_id": guild_id, "board": board, "key": key, "member_id": member_id}
    row = (await session.execute(_rank_query(), values)).one_or_none()
    if row is None:
        return None
    member, user_id, display_name, xp, ahead, listed = row
    return Entry(ahead + 1, member, user_id, display_name, xp, listed)


def _standings(
    guild_id: int, board: Board, key: str, limit: int, offset: int, top: Any = None
) -> Select[Any]:
    """A range of a board, from its members with at most ``top`` XP (None: all): the offset is
    skipped inside the covering leaderboard index alone, and only the rows kept are joined to
    their members (a skipped row costs an index step, not a member lookup)."""
    below = (MemberXp.xp <= top,) if top is not None else ()
    page = (
        select(MemberXp.member_id, MemberXp.xp, MemberXp.reached_at)
        .where(*_on_board(guild_id, board, key), MemberXp.xp > 0, *below)
        .order_by(*_ORDER)
        .limit(limit)
        .offset(offset)
        .subquery()
    )
    return (
        select(page.c.member_id, Member.user_id, Member.display_name, page.c.xp)
        .join(Member, Member.id == page.c.member_id)
        .order_by(page.c.xp.desc(), page.c.reached_at, page.c.member_id)
    )


def _entries(rows: Sequence[Row[Any]], offset: int) -> tuple[Entry, ...]:
    return tuple(Entry(offset + i, *row[:4]) for i, row in enumerate(rows, start=1))


async def standings(
    session: AsyncSession, guild_id: int, board: Board, key: str, *, limit: int, offset: int = 0
) -> tuple[Entry, ...]:
    """``limit`` entries of a board in leaderboard order, starting after ``offset``."""
    rows = (await session.execute(_standings(guild_id, board, key, limit, offset))).all()
    return _entries(rows, offset)


@functools.cache
def _start_query() -> Select[Any]:
    """Where a page starts, from the per-value counts alone: the XP value its first row has,
    how many listed members have more, and the board's size.  So a deep page skips only the
    ties at that value in the leaderboard index, not every row ahead of it."""
    guild_id, board, key = bindparam("guild_id"), bindparam("board"), bindparam("key")
    upto = func.sum(MemberXpCount.members).over(order_by=MemberXpCount.xp.desc())
    values = (
        select(MemberXpCount.xp, MemberXpCount.members, upto.label("upto"))
        .where(*_counts_of(guild_id, board, key))
        .subquery()
    )
    size = _members_at(guild_id, board, key).scalar_subquery()
    return (
        select(values.c.xp, values.c.upto - values.c.members, size)
        .where(values.c.upto > bindparam("offset"))
        .order_by(values.c.xp.desc())
        .limit(1)
    )


@functools.cache
def _page_query() -> Select[Any]:
    """A page from its first row's XP value on, built once with its values bound at each
    execution (building it costs more than SQLite takes to answer it)."""
    guild_id, board, key = bindparam("guild_id"), bindparam("board"), bindparam("key")
    return _standings(
        guild_id, board, key, bindparam("limit"), bindparam("offset"), top=bindparam("top")
    )


async def _page(
    session: AsyncSession, guild_id: int, board: Board, key: str, page: int, size: int
) -> tuple[tuple[Entry, ...], int]:
    """A page's entries and the board's size: two short statements, one past the end."""
    offset = (page - 1) * size
    values = {"guild_id": guild_id, "board": board, "key": key}
    start = (await session.execute(_start_query(), {**values, "offset": offset})).first()
    if start is None:  # past the end (or an empty board)
        return (), (await session.execute(_members_at(guild_id, board, key))).scalar_one()
    top, ahead, ranked = start
    window = {"top": top, "limit": size, "offset": offset - ahead}
    rows = (await session.execute(_page_query(), {**values, **window})).all()
    return _entries(rows, offset), ranked


async def leaderboard(
    session: AsyncSession,
    *,
    guild_id: int,
    period: Board,
    page: int,
    tz: ZoneInfo,
    now: datetime,
    caller_member_id: int | None,
    page_size: int = PAGE_SIZE,
) -> Page:
    """One page of the ``period`` board (1-based ``page`` of ``page_size`` entries) and the
    caller's own entry."""
    key = period_key(period, now, tz)
    page = max(page, 1)
    entries, ranked = await _page(session, guild_id, period, key, page, page_size)
    pages = max(1, -(-ranked // page_size))
    if page > pages:
        page = pages
        entries, ranked = await _page(session, guild_id, period, key, page, page_size)
    caller = None
    if caller_member_id is not None:
        caller = await rank_of(session, guild_id, period, key, caller_member_id)
    return Page(period, key, page, pages, ranked, entries, caller)
