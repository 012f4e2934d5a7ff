"""The one background-pass primitive and the one retry policy (``bot.background``).

Passes are driven by events the test holds: a pass starts, blocks until the test releases it,
and the test observes which passes started.  Timeouts only bound a failure; the only times
measured are the backoff's waits, against their lower bounds.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
import sqlite3
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy.exc import OperationalError

from bot import background
from bot.background import Backoff, Doorbell, PassLoop, RetryPolicy

NEVER_S = 3600.0  # a safety net this slow cannot be what starts a pass in a test
FAIL_AFTER_S = 10.0  # bounds a wait for something that must happen
EARLY_S = 0.005  # asyncio may fire a timer this much before its time (clock resolution)


class Passes:
    """A pass function the test steers: pass N sets ``started[N]`` and waits for
    ``release(N)`` (unless ``free``); it then raises ``errors[N]`` if there is one, or returns
    ``more[N]`` (default None)."""

    def __init__(self, *, free: bool = False) -> None:
        self.free = free
        self.count = 0
        self.finished = 0
        self.times: list[float] = []
        self.errors: dict[int, Exception] = {}
        self.more: dict[int, bool] = {}
        self._started: dict[int, asyncio.Event] = {}
        self._released: dict[int, asyncio.Event] = {}

    def _event(self, table: dict[int, asyncio.Event], number: int) -> asyncio.Event:
        return table.setdefault(number, asyncio.Event())

    async def __call__(self) -> bool | None:
        self.count += 1
        number = self.count
        self.times.append(time.monotonic())
        self._event(self._started, number).set()
        if not self.free:
            await self._event(self._released, number).wait()
        self.finished = number
        if number in self.errors:
            raise self.errors[number]
        return self.more.get(number)

    async def started(self, number: int) -> None:
        try:
            async with asyncio.timeout(FAIL_AFTER_S):
                await self._event(self._started, number).wait()
        except TimeoutError:
            raise AssertionError(f"pass {number} did not start; {self.count} did") from None

    def release(self, number: int) -> None:
        self._event(self._released, number).set()


@pytest.fixture
async def loops() -> AsyncIterator[list[PassLoop]]:
    """Loops a test starts; each is stopped (its pass cancelled) afterwards."""
    started: list[PassLoop] = []
    yield started
    for loop in started:
        await loop.stop(grace_s=0)


def _start(loops: list[PassLoop], passes: Passes, **options: object) -> PassLoop:
    options.setdefault("idle_s", NEVER_S)
    loop = PassLoop("test-loop", passes, **options)  # type: ignore[arg-type]
    loop.start()
    loops.append(loop)
    return loop


async def _settled() -> None:
    """Let every task that can run, run (a loop that would start a pass has started it)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_wake_during_a_pass_causes_another_pass(loops: list[PassLoop]) -> None:
    passes = Passes()
    loop = _start(loops, passes)
    await passes.started(1)
    loop.wake()  # while pass 1 runs: the work it announces may have come too late for pass 1
    passes.release(1)
    await passes.started(2)  # only the wake can start it: the safety net is an hour away
    passes.release(2)
    await _settled()
    assert passes.count == 2  # one wake, one more pass; then idle


async def test_a_wake_while_idle_starts_a_pass_and_wakes_coalesce(
    loops: list[PassLoop],
) -> None:
    passes = Passes()
    loop = _start(loops, passes)
    await passes.started(1)
    passes.release(1)
    await _settled()
    assert passes.count == 1  # idle, waiting for a wake
    loop.wake()
    loop.wake()
    await passes.started(2)
    passes.release(2)
    await _settled()
    assert passes.count == 2


async def test_the_safety_net_runs_passes_without_wakes(loops: list[PassLoop]) -> None:
    passes = Passes(free=True)
    _start(loops, passes, idle_s=0.01)
    await passes.started(3)


async def test_a_pass_with_more_due_is_followed_at_once(loops: list[PassLoop]) -> None:
    passes = Passes(free=True)
    passes.more = {1: True, 2: True}
    _start(loops, passes)
    await passes.started(3)
    await _settled()
    assert passes.count == 3  # the third had nothing more: idle until woken


async def test_a_failing_pass_is_logged_once_backs_off_and_recovers(
    loops: list[PassLoop], caplog: pytest.LogCaptureFixture
) -> None:
    """The same failure three times, another one, then a success: the waits double from the
    policy's first delay (wakes do not cut them short), the repeated failure is logged with its
    traceback once, the other one once more, and the recovery is said."""
    passes = Passes(free=True)
    same = ConnectionError("the database is away")
    passes.errors = {1: same, 2: same, 3: same, 4: KeyError("boom")}
    policy = RetryPolicy(first_delay_s=0.1, max_delay_s=0.4)
    caplog.set_level(logging.DEBUG, logger="bot.background")
    loop = _start(loops, passes, retries=policy)
    for number in range(1, 6):
        await passes.started(number)
        for _ in range(3):
            loop.wake()  # work arriving while the pass fails: no sooner retry
            await asyncio.sleep(0)
    waits = [b - a for a, b in itertools.pairwise(passes.times)]
    assert len(waits) == 4
    for wait, delay in zip(waits, (0.1, 0.2, 0.4, 0.4), strict=True):
        assert delay - EARLY_S <= wait < delay + 3.0, waits
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.exc_info[1] if r.exc_info else None for r in errors] == [same, passes.errors[4]]
    recovered = [r.getMessage() for r in caplog.records if "succeed again" in r.getMessage()]
    assert len(recovered) == 1 and "after 4 failed" in recovered[0], recovered
    passes.errors = {6: same}  # failing again after the recovery is news again
    loop.wake()
    await passes.started(6)
    await passes.started(7)  # after a first delay, not the ceiling
    assert 0.1 - EARLY_S <= passes.times[6] - passes.times[5] < 0.4 + 3.0
    assert len([r for r in caplog.records if r.levelno == logging.ERROR]) == 3


async def test_stop_waits_for_the_running_pass_and_starts_no_other(
    loops: list[PassLoop],
) -> None:
    passes = Passes()
    loop = _start(loops, passes)
    await passes.started(1)
    loop.wake()  # would ask for a pass 2
    stopping = asyncio.create_task(loop.stop())
    await _settled()
    assert not stopping.done()  # pass 1 is still running: stop waits for it
    assert passes.finished == 0  # and has not cancelled it
    passes.release(1)
    async with asyncio.timeout(FAIL_AFTER_S):
        await stopping
    assert passes.finished == 1
    await _settled()
    assert passes.count == 1  # the wake asked for pass 2; a stopped loop starts none


async def test_stop_with_a_grace_cancels_a_pass_that_hangs(loops: list[PassLoop]) -> None:
    passes = Passes()
    loop = _start(loops, passes)
    await passes.started(1)
    async with asyncio.timeout(FAIL_AFTER_S):
        await loop.stop(grace_s=0.01)
    assert passes.finished == 0  # cut off where it waited


async def test_stop_during_a_wait_for_ready_starts_no_pass() -> None:
    passes = Passes(free=True)
    loop = PassLoop("test-loop", passes, idle_s=NEVER_S)
    never_ready = asyncio.Event()
    loop.start(ready=never_ready.wait)
    await _settled()
    async with asyncio.timeout(FAIL_AFTER_S):
        await loop.stop()
    assert passes.count == 0


async def test_a_cancelled_stop_leaves_the_pass_running(loops: list[PassLoop]) -> None:
    """A drain that runs out of time is cancelled; the pass it waited for is not."""
    passes = Passes()
    loop = _start(loops, passes)
    await passes.started(1)
    stopping = asyncio.create_task(loop.stop())
    await _settled()
    stopping.cancel()
    await _settled()
    passes.release(1)
    await _settled()
    assert passes.finished == 1


def test_the_retry_policy_doubles_to_its_ceiling_and_gives_up_after_its_tries() -> None:
    policy = RetryPolicy(first_delay_s=2, max_delay_s=300, max_attempts=10)
    assert [policy.delay_s(n) for n in range(1, 11)] == [
        2, 4, 8, 16, 32, 64, 128, 256, 300, 300
    ]  # fmt: skip
    assert policy.delay(3) == timedelta(seconds=8)
    assert policy.delay_s(10_000) == 300  # no overflow however long it fails
    assert not policy.gives_up(9) and policy.gives_up(10)
    assert not RetryPolicy().gives_up(10**6)  # no max_attempts: it never gives up


def test_backoff_counts_failures_in_a_row_until_a_reset() -> None:
    backoff = Backoff(RetryPolicy(first_delay_s=1, max_delay_s=4), healthy_after_s=float("inf"))
    assert [backoff.delay() for _ in range(4)] == [1, 2, 4, 4]
    backoff.reset()
    assert backoff.delay() == 1


def test_a_doorbell_rings_every_listener_until_it_stops_listening() -> None:
    bell = Doorbell()
    heard: list[str] = []
    stop_a = bell.listen(lambda: heard.append("a"))
    bell.listen(lambda: heard.append("b"))
    bell.ring()
    stop_a()
    bell.ring()
    assert heard == ["a", "b", "b"]


async def _refused_connect() -> OSError:
    """What asyncpg raises when nothing listens: a raw OSError raised inside the driver."""
    import asyncpg

    with socket.socket() as probe:  # a port nothing listens on (bound, never listened)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        try:
            await asyncpg.connect(host="127.0.0.1", port=port, user="x", timeout=5)
        except OSError as exc:
            return exc
    raise AssertionError("a connect to a port nobody listens on succeeded")


async def test_a_database_outage_is_one_warning_and_one_info_without_tracebacks(
    loops: list[PassLoop], caplog: pytest.LogCaptureFixture
) -> None:
    """Five passes fail because the database is away (a refused connect, as asyncpg raises
    it, then a locked SQLite, each with its own text), then one succeeds: one WARNING naming
    the outage, no ERROR and no traceback, one INFO for the return."""
    refused = await _refused_connect()
    passes = Passes(free=True)
    locked = OperationalError("INSERT …", {}, sqlite3.OperationalError("database is locked"))
    passes.errors = {1: refused, 2: refused, 3: locked, 4: refused, 5: locked}
    caplog.set_level(logging.DEBUG, logger="bot.background")
    _start(loops, passes, retries=RetryPolicy(first_delay_s=0.01, max_delay_s=0.02))
    await passes.started(6)
    await _settled()
    at_least_info = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [(r.levelno, r.exc_info) for r in at_least_info] == [
        (logging.WARNING, None),
        (logging.INFO, None),
    ], [r.getMessage() for r in at_least_info]
    warning, info = (r.getMessage() for r in at_least_info)
    assert "database unavailable: ConnectionRefusedError" in warning, warning
    assert "database available again, after 5 failed" in info, info


async def test_while_the_database_is_away_a_slow_policy_still_retries_soon(
    loops: list[PassLoop], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop whose policy waits an hour still asks a database that is away again within
    ``OUTAGE_RETRY_S``: what waited is done soon after the database returns."""
    monkeypatch.setattr(background, "OUTAGE_RETRY_S", 0.05)
    passes = Passes(free=True)
    passes.errors = {1: await _refused_connect(), 2: KeyError("a bug")}
    _start(loops, passes, retries=RetryPolicy(first_delay_s=NEVER_S, max_delay_s=NEVER_S))
    await passes.started(2)  # within FAIL_AFTER_S, not after NEVER_S
    await asyncio.sleep(0.2)  # a bug is no outage: its retry waits the policy's hour
    assert passes.count == 2
