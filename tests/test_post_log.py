"""Scheduled posts happen once per (guild, kind, period), whoever claims them and however often.

These drive the scheduler's own pass (``Posting.post_due``: read the post log, claim,
send, mark posted or release) against a real database on each backend, with only the
Discord side (``PostTransport``) replaced by a record of what went out, so they count posts,
not rows.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot import clock, post_log
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Guild, PostLog
from bot.posting.post_transport import SendRefused
from bot.posting.posts import Posting
from bot.progress.periods import Period

GUILD_ID = 111
CHANNEL_ID = 222
OTHER_GUILD_ID, OTHER_CHANNEL_ID = 333, 444
DAILY, WEEKLY = "daily_quest", "weekly_leaderboard"


class FakeClock:
    """What ``bot.clock.now`` returns while a test runs; the test moves it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


Part = tuple[str, str, int]  # (kind, period, number) of one message


class Poster(Posting[Part]):
    """The real scheduler with Discord's side replaced: ``sent`` lists what went out.

    A daily post has two parts (messages), a weekly one; ``sent`` records each part as
    (kind, period, part).  ``fail`` sends fail as Discord's HTTP errors do (the scheduler
    gives the claim up); ``fail_part`` fails only that part; with ``crash`` set, a send dies
    the way a killed bot does (no release), ``crash_part`` only at that part.
    """

    _ids = itertools.count(1000)

    def __init__(self, engine: AsyncEngine, sent: list[tuple[str, str, int]]) -> None:
        services = SimpleNamespace(
            sessions=make_sessionmaker(engine), reads=make_sessionmaker(engine, read_only=True)
        )
        super().__init__(services, self)  # type: ignore[arg-type]
        self.sent = sent
        self.fail = 0
        self.fail_part: int | None = None
        self.crash = False
        self.crash_part: int | None = None
        self.broken: int | None = None  # a server whose posts cannot be rendered
        self.channels: list[int] = []  # where each part went

    async def tick(self) -> None:
        await self.post_due()

    def in_server(self, guild_id: int) -> bool:
        return True

    def check_channel(self, channel_id: int | None) -> None:
        assert channel_id in (CHANNEL_ID, OTHER_CHANNEL_ID)

    async def daily_parts(self, guild: Guild, quest: Any, day: date) -> list[Part]:  # type: ignore[override]
        if guild.id == self.broken:
            raise RuntimeError("cannot render this server's post")
        return [(DAILY, day.isoformat(), number) for number in (1, 2)]

    async def weekly_parts(self, guild: Guild, week: Period) -> list[Part]:  # type: ignore[override]
        return [(WEEKLY, week.key, 1)]

    async def send(self, channel_id: int, part: Part) -> int:
        kind, what, number = part
        if self.crash or self.crash_part == number:
            raise RuntimeError("the bot died mid-post")
        if self.fail or self.fail_part == number:
            self.fail = max(self.fail - 1, 0)
            raise SendRefused("429 Too Many Requests")  # as discord.py's HTTPException is
        self.sent.append((kind, what, number))
        self.channels.append(channel_id)
        return next(self._ids)


def _posts(sent: list[tuple[str, str, int]]) -> list[tuple[str, str]]:
    """The posts that went out complete, in the order their first part went."""
    parts = {DAILY: 2, WEEKLY: 1}
    return [(kind, what) for kind, what, number in sent if number == parts[kind]]


def _week(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year:04d}-W{week:02d}"


@pytest.fixture
def now() -> Iterator[FakeClock]:
    """Noon UTC on the latest Wednesday: today's 09:00 post is due and +1 day stays in the week."""
    today = datetime.now(UTC).replace(hour=12, minute=0, second=0, microsecond=0)
    fake = FakeClock(today - timedelta(days=(today.weekday() - 2) % 7))
    previous = clock.set_source(fake)
    yield fake
    clock.set_source(previous)


@pytest.fixture
async def guild(engine: AsyncEngine) -> None:
    async with make_sessionmaker(engine)() as session, session.begin():
        session.add(Guild(id=GUILD_ID, quest_channel_id=CHANNEL_ID))  # UTC, 09:00, Mondays


@pytest.fixture
async def second_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A second bot's own connections to the same database."""
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


async def _log(engine: AsyncEngine) -> list[tuple[str, str, str, int | None]]:
    async with make_sessionmaker(engine)() as session:
        rows = await session.execute(
            select(PostLog.kind, PostLog.period, PostLog.status, PostLog.message_id).order_by(
                PostLog.kind, PostLog.period
            )
        )
        return [tuple(row) for row in rows]  # type: ignore[misc]


async def test_ticking_again_posts_nothing_more(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    sent: list[tuple[str, str, int]] = []
    poster = Poster(engine, sent)
    today = now.now.date()
    for _ in range(3):
        await poster.tick()
    restarted = Poster(engine, sent)  # a bot restarted within the same period
    await restarted.tick()
    assert sent == [
        (DAILY, today.isoformat(), 1),
        (DAILY, today.isoformat(), 2),
        (WEEKLY, _week(today - timedelta(days=7)), 1),
    ]
    log = await _log(engine)
    assert [(kind, period, status) for kind, period, status, _ in log] == [
        (DAILY, today.isoformat(), "posted"),
        (WEEKLY, _week(today), "posted"),
    ]
    assert all(message_id is not None for *_, message_id in log)


async def test_two_bots_racing_for_a_period_post_once(
    engine: AsyncEngine,
    second_engine: AsyncEngine,
    guild: None,
    now: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both bots read an empty log and claim the same period at once; one of them posts."""
    both_read_the_log = asyncio.Barrier(2)
    claims: dict[str, list[post_log.Claim | None]] = {DAILY: [], WEEKLY: []}
    real_claim = post_log.claim

    async def racing_claim(
        session: Any, guild_id: int, kind: str, period: str, at: datetime
    ) -> post_log.Claim | None:
        # a bot reaching its claim waits for the other, which has read the log by then too
        await both_read_the_log.wait()
        claimed = await real_claim(session, guild_id, kind, period, at)
        claims[kind].append(claimed)
        return claimed

    monkeypatch.setattr(post_log, "claim", racing_claim)
    sent: list[tuple[str, str, int]] = []
    try:
        async with asyncio.timeout(30):
            await asyncio.gather(Poster(engine, sent).tick(), Poster(second_engine, sent).tick())
    except TimeoutError:
        raise AssertionError(f"the racing ticks did not finish; claims so far: {claims}") from None
    for kind, results in claims.items():
        assert len(results) == 2, f"both bots should have claimed the {kind}: {results}"
        assert sum(result is not None for result in results) == 1, (kind, results)
    assert sorted(kind for kind, _, _ in sent) == [DAILY, DAILY, WEEKLY]
    assert [status for _, _, status, _ in await _log(engine)] == ["posted", "posted"]


async def test_a_failed_post_is_retried_on_the_next_tick(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    sent: list[tuple[str, str, int]] = []
    poster = Poster(engine, sent)
    poster.fail = 2  # both of this tick's posts fail and release their claims
    await poster.tick()
    assert sent == []
    assert await _log(engine) == []
    await poster.tick()
    today = now.now.date()
    assert _posts(sent) == [(DAILY, today.isoformat()), (WEEKLY, _week(today - timedelta(days=7)))]
    assert len(sent) == 3


async def test_a_claim_left_by_a_dead_bot_is_taken_over_once_stale(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    sent: list[tuple[str, str, int]] = []
    dying = Poster(engine, sent)
    dying.crash = True
    with pytest.raises(RuntimeError, match="died mid-post"):
        await dying.tick()
    assert [(kind, status) for kind, _, status, _ in await _log(engine)] == [(DAILY, "pending")]
    survivor = Poster(engine, sent)
    await survivor.tick()  # the daily claim is fresh: its owner may still be posting
    assert [kind for kind, _, _ in sent] == [WEEKLY]
    now.now += post_log.STALE_CLAIM + timedelta(seconds=1)
    await survivor.tick()
    assert [(kind, number) for kind, _, number in sent] == [(WEEKLY, 1), (DAILY, 1), (DAILY, 2)]
    assert {status for _, _, status, _ in await _log(engine)} == {"posted"}


async def test_a_part_that_fails_is_retried_alone(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    """The second message of the daily post keeps failing (429s until discord.py gives up):
    the next ticks send the second part only, and the first is never repeated."""
    sent: list[tuple[str, str, int]] = []
    poster = Poster(engine, sent)
    poster.fail_part = 2
    await poster.tick()
    await poster.tick()  # still failing: the claim keeps its first part
    today = now.now.date().isoformat()
    assert [(kind, number) for kind, _, number in sent] == [(DAILY, 1), (WEEKLY, 1)]
    assert [(kind, status) for kind, _, status, _ in await _log(engine)] == [
        (DAILY, "partial"),
        (WEEKLY, "posted"),
    ]
    poster.fail_part = None
    await poster.tick()
    await poster.tick()
    assert [(kind, what, number) for kind, what, number in sent if kind == DAILY] == [
        (DAILY, today, 1),
        (DAILY, today, 2),
    ]
    assert {status for _, _, status, _ in await _log(engine)} == {"posted"}
    async with make_sessionmaker(engine)() as session:
        row = (await session.execute(select(PostLog).where(PostLog.kind == DAILY))).scalar_one()
    assert row.sent_message_ids is not None and len(row.sent_message_ids) == 2
    assert row.message_id == row.sent_message_ids[0]  # the post is its first message


async def test_a_bot_that_dies_mid_post_is_resumed_after_its_sent_parts(
    engine: AsyncEngine, second_engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    """Killed after the first part: once the claim is stale another bot sends the rest."""
    sent: list[tuple[str, str, int]] = []
    dying = Poster(engine, sent)
    dying.crash_part = 2
    with pytest.raises(RuntimeError, match="died mid-post"):
        await dying.tick()
    assert [(kind, status) for kind, _, status, _ in await _log(engine)] == [(DAILY, "pending")]
    other = Poster(second_engine, sent)
    await other.tick()  # fresh: the dying bot may still be posting
    assert [(kind, number) for kind, _, number in sent] == [(DAILY, 1), (WEEKLY, 1)]
    now.now += post_log.STALE_CLAIM + timedelta(seconds=1)
    await other.tick()
    await other.tick()
    assert [(kind, number) for kind, _, number in sent] == [(DAILY, 1), (WEEKLY, 1), (DAILY, 2)]
    assert {status for _, _, status, _ in await _log(engine)} == {"posted"}


async def test_a_new_period_posts_again(engine: AsyncEngine, guild: None, now: FakeClock) -> None:
    sent: list[tuple[str, str, int]] = []
    poster = Poster(engine, sent)
    today = now.now.date()
    await poster.tick()
    now.now += timedelta(days=1)  # Thursday: a new day, the same week
    await poster.tick()
    now.now += timedelta(days=6)  # next Wednesday: a new day and a new week
    await poster.tick()
    assert _posts(sent) == [
        (DAILY, today.isoformat()),
        (WEEKLY, _week(today - timedelta(days=7))),
        (DAILY, (today + timedelta(days=1)).isoformat()),
        (DAILY, (today + timedelta(days=7)).isoformat()),
        (WEEKLY, _week(today)),
    ]
    periods = [(kind, period) for kind, period, _, _ in await _log(engine)]
    assert periods == [
        (DAILY, today.isoformat()),
        (DAILY, (today + timedelta(days=1)).isoformat()),
        (DAILY, (today + timedelta(days=7)).isoformat()),
        (WEEKLY, _week(today)),
        (WEEKLY, _week(today + timedelta(days=7))),
    ]


async def test_one_servers_failure_does_not_hold_back_the_others(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    """The first server's daily post meets an unexpected error: the second server's posts
    still go out in the same pass, which raises the error at its end (for the loop to log and
    back off); the broken claim waits, as a crashed bot's does, until it is stale."""
    async with make_sessionmaker(engine)() as session, session.begin():
        session.add(Guild(id=OTHER_GUILD_ID, quest_channel_id=OTHER_CHANNEL_ID))
    sent: list[tuple[str, str, int]] = []
    poster = Poster(engine, sent)
    poster.broken = GUILD_ID  # the first of the two the pass takes (in id order)
    with pytest.raises(RuntimeError, match="cannot render"):
        await poster.tick()
    today = now.now.date()
    assert _posts(sent) == [(DAILY, today.isoformat()), (WEEKLY, _week(today - timedelta(days=7)))]
    assert set(poster.channels) == {OTHER_CHANNEL_ID}
    poster.broken = None
    now.now += post_log.STALE_CLAIM + timedelta(seconds=1)
    await poster.tick()
    assert poster.channels.count(CHANNEL_ID) == 3  # both parts of the daily, the weekly
