"""Background work: one retry policy, and one loop that runs a pass when woken.

``RetryPolicy`` is how long anything waits after failures in a row: ``first_delay_s`` after
the first, doubled after each further one up to ``max_delay_s``, and (with ``max_attempts``)
given up after that many tries.  A verdict that cannot be delivered
(``bot.delivery.failures``), a member whose roles cannot be written
(``bot.progress.role_sync``), a worker process that keeps dying (``bot.worker.pool``,
``bot.runner``) and a pass that fails as a whole (``PassLoop``) all wait by it, each with
its own numbers.  ``Backoff`` counts one thing's failures in a row for it.

``PassLoop`` is every long-running loop of the bot: it runs ``async pass()`` when woken
(``wake``), and at least every ``idle_s`` as a safety net.  The wake is cleared *before* a
pass starts, so a wake that arrives during a pass causes another one: it is never lost.  A
pass that returns True has more work due and is followed by another at once.  A pass that
raises is logged once per distinct failure (its traceback once, not once per retry), then
retried after ``RetryPolicy``'s delay, which a wake does not cut short (a failing database
is not asked again sooner because work arrived); the first pass that succeeds again says so.
A pass that failed because the database is away (``bot.outage``: a refused connect, a
restart, a lock held past the busy timeout, driver exceptions included) is an outage, not a
bug: the loop logs one WARNING, "database unavailable: …", without a traceback, however often
it retries and whatever the driver says each time, and one INFO when a pass succeeds again;
it retries at least every ``OUTAGE_RETRY_S`` meanwhile, so that what waited is done within
that long of the database's return.
One bad item is the pass's own business: delivery, role sync and posting each record an
item's failure on that item and go on with the rest.  ``stop`` starts no new pass and waits
for the running one (or cancels it after ``grace_s``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

from bot import outage

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait after failures in a row, and after how many tries to give up."""

    first_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_attempts: int | None = None  # None: never give up

    def delay_s(self, failures: int) -> float:
        """The wait after the ``failures``-th failure in a row (1-based)."""
        doublings = min(max(failures, 1) - 1, 64)  # 2**64 times any delay is past any ceiling
        return min(self.first_delay_s * 2.0**doublings, self.max_delay_s)

    def delay(self, failures: int) -> timedelta:
        return timedelta(seconds=self.delay_s(failures))

    def gives_up(self, attempts: int) -> bool:
        """True when ``attempts`` tries are all this policy allows."""
        return self.max_attempts is not None and attempts >= self.max_attempts


#: a process that dies is started again after 1 s, doubling to 60 s while it keeps dying
RESTARTS = RetryPolicy(first_delay_s=1.0, max_delay_s=60.0)
#: a run this long counts as healthy: the next death waits ``first_delay_s`` again
HEALTHY_AFTER_S = 60.0
#: a pass that failed as a whole is tried again after 1 s, doubling to 60 s
PASS_RETRIES = RetryPolicy(first_delay_s=1.0, max_delay_s=60.0)
#: while the database is away a pass is retried at least this often (a refused connect costs
#: nothing), so work waiting is done within this long of its return, however long it was away
OUTAGE_RETRY_S = 2.0
#: distinct failures a loop remembers (so as not to log them again) while it keeps failing
MAX_REMEMBERED = 100


class Backoff:
    """One thing's failures in a row under a ``RetryPolicy``: quick after a rare failure, slow
    in a failure loop.  A run that lasted ``healthy_after_s`` before it failed counts as
    healthy, so the failures before it are forgotten (one crash a day is always repaired
    within a second); ``reset`` forgets them after a success."""

    def __init__(
        self, policy: RetryPolicy = RESTARTS, healthy_after_s: float = HEALTHY_AFTER_S
    ) -> None:
        self.policy = policy
        self.healthy_after_s = healthy_after_s
        self.failures = 0

    def delay(self, ran_for_s: float = 0.0) -> float:
        """Count a failure after a run of ``ran_for_s``; how long to wait before the next try."""
        if ran_for_s >= self.healthy_after_s:
            self.failures = 0
        self.failures += 1
        return self.policy.delay_s(self.failures)

    def reset(self) -> None:
        self.failures = 0


class Doorbell:
    """Rung by whatever learns that work may be waiting (a worker's verdict pipe, a NOTIFY);
    wakes every loop that listens.  Ringing costs nothing when nobody listens yet."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` on each ring; returns what stops it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def ring(self) -> None:
        for listener in list(self._listeners):
            listener()


#: what a pass returns: True when more work is due at once
PassResult = bool | None


class PassLoop:
    """Runs ``run_pass`` in a task of its own, named ``name``, whenever woken and at least every
    ``idle_s``, until ``stop``; see the module's docstring for the rules."""

    def __init__(
        self,
        name: str,
        run_pass: Callable[[], Awaitable[PassResult]],
        *,
        idle_s: float,
        retries: RetryPolicy = PASS_RETRIES,
    ) -> None:
        self.name = name
        self.idle_s = idle_s
        self._run_pass = run_pass
        self._backoff = Backoff(retries, healthy_after_s=math.inf)
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._logged: set[tuple[str, ...]] = set()  # failures logged since the last success
        self._failing_since: float | None = None
        self._database_away = False  # this failure run's outage was logged

    def start(self, ready: Callable[[], Awaitable[object]] | None = None) -> None:
        """Start the loop; with ``ready``, the first pass waits for it (e.g. a connection)."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(ready), name=self.name)

    def wake(self) -> None:
        """Ask for a pass: at once when idle, right after the running one otherwise."""
        self._wake.set()

    async def stop(self, grace_s: float | None = None) -> None:
        """Start no new pass; return once the running one (if any) has finished, or, with
        ``grace_s``, cancel it after that many seconds.  Cancelling the caller of ``stop``
        leaves the pass running."""
        self._stopping.set()
        task = self._task
        if task is None or task.done():
            return
        finished, _ = await asyncio.wait({task}, timeout=grace_s)
        if not finished:
            task.cancel()
            await asyncio.wait({task})

    async def _run(self, ready: Callable[[], Awaitable[object]] | None) -> None:
        if ready is not None and not await self._until(ready(), self._stopping):
            return
        while not self._stopping.is_set():
            self._wake.clear()  # before the pass: a wake during it asks for the next one
            try:
                more = await self._run_pass()
            except Exception as exc:
                delay = self._failed(exc, self._backoff.delay())
            else:
                self._recovered()
                if more:
                    await asyncio.sleep(0)  # others get their turn between full passes
                else:
                    await self._until(asyncio.sleep(self.idle_s), self._stopping, self._wake)
                continue
            await self._until(asyncio.sleep(delay), self._stopping)

    @staticmethod
    async def _until(awaitable: Awaitable[object], *events: asyncio.Event) -> bool:
        """Await ``awaitable`` unless one of ``events`` is set first; True when it finished."""
        if any(event.is_set() for event in events):
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            return False
        main = asyncio.ensure_future(awaitable)
        waiters = [asyncio.ensure_future(event.wait()) for event in events]
        try:
            await asyncio.wait([main, *waiters], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            if not main.done():
                main.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await main
        if main.cancelled():
            return False
        main.result()  # a ready() that raised is a bug: it ends the loop, loudly
        return True

    def _failed(self, exc: Exception, delay: float) -> float:
        """Log the failure as the rules say; the wait before the next pass."""
        if self._failing_since is None:
            self._failing_since = time.monotonic()
        if outage.is_database_unavailable(exc):
            delay = min(delay, OUTAGE_RETRY_S)
            if self._database_away:
                log.debug("%s: database still unavailable (%s)", self.name, outage.describe(exc))
                return delay
            self._database_away = True
            log.warning(
                "%s: database unavailable: %s; retrying at least every %g s until it answers "
                "(not logged again)",
                self.name,
                outage.describe(exc),
                OUTAGE_RETRY_S,
            )
            return delay
        signature = failure_signature(exc)
        if len(self._logged) >= MAX_REMEMBERED:
            self._logged.clear()  # failures that never repeat: log on, forget the oldest
        if signature in self._logged:
            log.debug("%s: pass failed again (%s); retrying in %g s", self.name, exc, delay)
            return delay
        self._logged.add(signature)
        self._log_error(exc, delay)
        return delay

    def _log_error(self, exc: Exception, delay: float) -> None:
        log.error(
            "%s: pass failed; retrying in %g s, then backing off to %g s while it keeps "
            "failing (the same failure is not logged again)",
            self.name,
            delay,
            self._backoff.policy.max_delay_s,
            exc_info=exc,
        )

    def _recovered(self) -> None:
        if self._database_away:
            log.info(
                "%s: database available again, after %d failed pass(es) in %.0f s",
                self.name,
                self._backoff.failures,
                time.monotonic() - (self._failing_since or time.monotonic()),
            )
        elif self._failing_since is not None:
            log.info(
                "%s: passes succeed again, after %d failed in %.0f s",
                self.name,
                self._backoff.failures,
                time.monotonic() - self._failing_since,
            )
        self._failing_since = None
        self._database_away = False
        self._logged.clear()
        self._backoff.reset()


def failure_signature(exc: BaseException) -> tuple[str, ...]:
    """What makes two failures the same one: the exception's type, where it was raised, and
    its message (for a database error, the driver's: SQLAlchemy's own text repeats the
    statement's parameters, which differ from pass to pass)."""
    cause = getattr(exc, "orig", None) or exc
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename}:{frames[-1].lineno}" if frames else ""
    return (type(exc).__qualname__, type(cause).__qualname__, where, str(cause))
