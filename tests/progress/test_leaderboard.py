"""Leaderboards: deterministic order, pages of 10, the caller's rank, local weeks and months."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.progress import privacy
from bot.progress.leaderboard import Page, leaderboard, rank_of
from bot.progress.totals import Board
from tests.progress.world import BERLIN, GUILD_ID, World

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=BERLIN)  # a Wednesday in 2026-W48


async def board(
    world: World,
    period: Board = "all",
    page: int = 1,
    caller: int | None = None,
    now: datetime = NOW,
) -> Page:
    async with world.sessions() as session:
        return await leaderboard(
            session,
            guild_id=GUILD_ID,
            period=period,
            page=page,
            tz=BERLIN,
            now=now,
            caller_member_id=caller,
        )


async def test_ties_go_to_whoever_reached_the_total_first(world: World) -> None:
    ada, bob, cyd, dan = [await world.member(user_id) for user_id in (1, 2, 3, 4)]
    await world.verdict(cyd, NOW - timedelta(hours=3), xp=50)
    await world.verdict(bob, NOW - timedelta(hours=2), xp=50)
    await world.verdict(ada, NOW - timedelta(hours=2), xp=50)  # same instant as bob: lower id
    await world.verdict(dan, NOW - timedelta(hours=1), xp=80)
    page = await board(world)
    assert [(e.rank, e.member_id, e.xp) for e in page.entries] == [
        (1, dan, 80),
        (2, cyd, 50),
        (3, min(ada, bob), 50),
        (4, max(ada, bob), 50),
    ]
    assert page.entries[1].display_name == "user3" and page.entries[1].user_id == 3


async def test_a_later_award_loses_the_tie(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    await world.verdict(ada, NOW - timedelta(hours=5), xp=40)
    await world.verdict(bob, NOW - timedelta(hours=4), xp=50)
    await world.verdict(
        ada, NOW - timedelta(hours=3), task="q2/build", xp=10
    )  # ada reaches 50 later
    assert [e.member_id for e in (await board(world)).entries] == [bob, ada]


async def test_pages_of_ten_and_every_callers_rank(world: World) -> None:
    members = [await world.member(user_id) for user_id in range(1, 26)]
    for n, member in enumerate(members):
        await world.verdict(member, NOW - timedelta(minutes=n), xp=10 + (n % 7) * 5)
    pages = [await board(world, page=p) for p in (1, 2, 3)]
    order = [e.member_id for page in pages for e in page.entries]
    assert [len(p.entries) for p in pages] == [10, 10, 5]
    assert {(p.pages, p.ranked) for p in pages} == {(3, 25)}
    assert [e.rank for p in pages for e in p.entries] == list(range(1, 26))
    assert sorted(order) == sorted(members)
    xp = [e.xp for p in pages for e in p.entries]
    assert xp == sorted(xp, reverse=True)
    for position, member in enumerate(order, start=1):
        caller = (await board(world, page=2, caller=member)).caller
        assert caller is not None and (caller.rank, caller.member_id) == (position, member)


async def test_pages_out_of_range_are_clamped(world: World) -> None:
    for user_id in range(1, 13):
        await world.verdict(await world.member(user_id), NOW)
    assert (await board(world, page=99)).page == 2
    assert (await board(world, page=0)).page == 1
    empty = await board(world, period="month", now=NOW + timedelta(days=40))
    assert (empty.page, empty.pages, empty.ranked, empty.entries) == (1, 1, 0, ())


async def test_callers_without_xp_are_unranked(world: World) -> None:
    ada, bob, cyd = await world.member(1), await world.member(2), await world.member(3)
    await world.verdict(ada, NOW)
    await world.verdict(cyd, NOW, xp=30)
    await world.grant(cyd, -30, NOW)
    assert (await board(world, caller=bob)).caller is None
    assert (await board(world, caller=cyd)).caller is None
    assert [e.member_id for e in (await board(world)).entries] == [ada]


async def test_week_and_month_boards_use_local_periods(world: World) -> None:
    ada, bob = await world.member(1), await world.member(2)
    sunday_night = datetime(2026, 11, 29, 23, 30, tzinfo=BERLIN)  # 22:30 UTC, still W48
    monday_early = datetime(2026, 11, 30, 0, 30, tzinfo=BERLIN)  # 23:30 UTC Sunday, but W49
    await world.verdict(ada, sunday_night, xp=70)
    await world.verdict(bob, monday_early, xp=40)
    w48 = await board(world, "week", now=sunday_night)
    w49 = await board(world, "week", now=monday_early, caller=bob)
    assert (w48.period_key, [e.member_id for e in w48.entries]) == ("2026-W48", [ada])
    assert (w49.period_key, [e.member_id for e in w49.entries]) == ("2026-W49", [bob])
    assert w49.caller is not None and w49.caller.rank == 1
    november = await board(world, "month", now=sunday_night)
    december = await board(world, "month", now=datetime(2026, 12, 1, 0, 30, tzinfo=BERLIN))
    assert [e.xp for e in november.entries] == [70, 40]
    assert (december.period_key, december.entries) == ("2026-12", ())
    assert [e.xp for e in (await board(world, "all")).entries] == [70, 40]


async def test_rank_of_a_member_not_on_the_board(world: World) -> None:
    ada = await world.member(1)
    async with world.sessions() as session:
        assert await rank_of(session, GUILD_ID, "all", "all", ada) is None


async def test_every_page_holds_exactly_its_rows_with_ties_and_hidden_members(
    world: World,
) -> None:
    """Pages start inside runs of equal XP, and hidden members (in those runs too) take no
    place: each page is its slice of the order computed here, by the rules in the docstring."""
    members = [await world.member(user_id) for user_id in range(1, 38)]
    reached: dict[int, tuple[int, datetime]] = {}
    for n, member in enumerate(members):
        when = NOW - timedelta(minutes=n % 5)  # equal instants too: the lower id goes first
        xp = 10 + (n % 4) * 10
        await world.verdict(member, when, xp=xp)
        reached[member] = (xp, when)
    hidden = set(members[3::6])
    async with world.sessions() as session, session.begin():
        for member in hidden:
            await privacy.hide(
                session, guild_id=GUILD_ID, user_id=members.index(member) + 1, display_name="x"
            )
    expected = sorted(
        (m for m in members if m not in hidden), key=lambda m: (-reached[m][0], reached[m][1], m)
    )
    shown = [
        [(e.rank, e.member_id) for e in (await board(world, page=p)).entries] for p in (1, 2, 3, 4)
    ]
    assert shown == [list(enumerate(expected[i : i + 10], start=i + 1)) for i in range(0, 40, 10)]
