"""Scheduled posts happen once per (guild, kind, period), whoever claims them and however often.

These drive the scheduler's own loop body (``Schedule.tick``: read the post log, claim,
send, mark posted or release) against a real database on each backend, with only the
Discord send replaced by a record of what went out, so they count posts, not rows.
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
from bot.exts.schedule import PostFailed, Schedule
from bot.progress.periods import Period

GUILD_ID = 111
CHANNEL_ID = 222
DAILY, WEEKLY = "daily_quest", "weekly_leaderboard"


class FakeClock:
    """What ``bot.clock.now`` returns while a test runs; the test moves it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Poster(Schedule):
    """The real scheduler with Discord's send replaced: ``sent`` lists what went out.

    ``fail`` sends fail as a missing channel does (the scheduler releases the claim);
    with ``crash`` set, a send dies mid-post the way a killed bot does (no release).
    """

    _ids = itertools.count(1000)

    def __init__(self, engine: AsyncEngine, sent: list[tuple[str, str]]) -> None:
        services = SimpleNamespace(
            sessions=make_sessionmaker(engine), reads=make_sessionmaker(engine, read_only=True)
        )
        super().__init__(SimpleNamespace(services=services, get_guild=lambda _id: object()))  # type: ignore[arg-type]
        self.sent = sent
        self.fail = 0
        self.crash = False

    async def post_daily(self, guild: Guild, quest: Any, day: date | None = None) -> Any:
        assert day is not None
        return self._send(DAILY, day.isoformat())

    async def post_weekly(self, guild: Guild, week: Period) -> Any:
        return self._send(WEEKLY, week.key)

    def _send(self, kind: str, what: str) -> Any:
        if self.crash:
            raise RuntimeError("the bot died mid-post")
        if self.fail:
            self.fail -= 1
            raise PostFailed("no quest channel is configured")
        self.sent.append((kind, what))
        return SimpleNamespace(id=next(self._ids), channel=SimpleNamespace(id=CHANNEL_ID))


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
    sent: list[tuple[str, str]] = []
    poster = Poster(engine, sent)
    today = now.now.date()
    for _ in range(3):
        await poster.tick()
    restarted = Poster(engine, sent)  # a bot restarted within the same period
    await restarted.tick()
    assert sent == [(DAILY, today.isoformat()), (WEEKLY, _week(today - timedelta(days=7)))]
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
    claims: dict[str, list[int | None]] = {DAILY: [], WEEKLY: []}
    real_claim = post_log.claim

    async def racing_claim(
        session: Any, guild_id: int, kind: str, period: str, at: datetime
    ) -> int | None:
        # a bot reaching its claim waits for the other, which has read the log by then too
        await both_read_the_log.wait()
        claimed = await real_claim(session, guild_id, kind, period, at)
        claims[kind].append(claimed)
        return claimed

    monkeypatch.setattr(post_log, "claim", racing_claim)
    sent: list[tuple[str, str]] = []
    try:
        async with asyncio.timeout(30):
            await asyncio.gather(Poster(engine, sent).tick(), Poster(second_engine, sent).tick())
    except TimeoutError:
        raise AssertionError(f"the racing ticks did not finish; claims so far: {claims}") from None
    for kind, results in claims.items():
        assert len(results) == 2, f"both bots should have claimed the {kind}: {results}"
        assert sum(result is not None for result in results) == 1, (kind, results)
    assert sorted(kind for kind, _ in sent) == [DAILY, WEEKLY]
    assert [status for _, _, status, _ in await _log(engine)] == ["posted", "posted"]


async def test_a_failed_post_is_retried_on_the_next_tick(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    sent: list[tuple[str, str]] = []
    poster = Poster(engine, sent)
    poster.fail = 2  # both of this tick's posts fail and release their claims
    await poster.tick()
    assert sent == []
    assert await _log(engine) == []
    await poster.tick()
    today = now.now.date()
    assert sent == [(DAILY, today.isoformat()), (WEEKLY, _week(today - timedelta(days=7)))]


async def test_a_claim_left_by_a_dead_bot_is_taken_over_once_stale(
    engine: AsyncEngine, guild: None, now: FakeClock
) -> None:
    sent: list[tuple[str, str]] = []
    dying = Poster(engine, sent)
    dying.crash = True
    with pytest.raises(RuntimeError, match="died mid-post"):
        await dying.tick()
    assert [(kind, status) for kind, _, status, _ in await _log(engine)] == [(DAILY, "pending")]
    survivor = Poster(engine, sent)
    await survivor.tick()  # the daily claim is fresh: its owner may still be posting
    assert [kind for kind, _ in sent] == [WEEKLY]
    now.now += post_log.STALE_CLAIM + timedelta(seconds=1)
    await survivor.tick()
    assert [kind for kind, _ in sent] == [WEEKLY, DAILY]
    assert {status for _, _, status, _ in await _log(engine)} == {"posted"}


async def test_a_new_period_posts_again(engine: AsyncEngine, guild: None, now: FakeClock) -> None:
    sent: list[tuple[str, str]] = []
    poster = Poster(engine, sent)
    today = now.now.date()
    await poster.tick()
    now.now += timedelta(days=1)  # Thursday: a new day, the same week
    await poster.tick()
    now.now += timedelta(days=6)  # next Wednesday: a new day and a new week
    await poster.tick()
    assert sent == [
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
