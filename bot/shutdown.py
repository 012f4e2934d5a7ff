"""Stopping ``brrrbot run``: the first SIGTERM or SIGINT asks for an orderly stop; a second
one, or an orderly stop that overruns its deadline, ends the process at once.

Why a hard deadline: Docker sends SIGKILL 10 s after SIGTERM, and a stop that hangs (a Discord
request that never answers, a pool that ignores SIGTERM) must still end on our terms: with a
log line naming the step that hung, the local pool killed, and exit code 1.  The deadline is
kept by a thread, so it holds even when the event loop itself is stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: from the first signal to a forced exit; under Docker's 10 s before its SIGKILL
DEADLINE_S = 9.0
#: exit code of a forced exit (a second signal, an overrun deadline)
FORCED_EXIT = 1


@runtime_checkable
class Drains(Protocol):
    """A cog with work in flight that a stop should let finish (``BrrrBot.stop_gracefully``)."""

    async def drain(self) -> None:
        """Start nothing new; return once the work in hand is finished and recorded."""


class Shutdown:
    """What the signals asked for, and the deadline that bounds the answer.

    ``requested`` is set on the first signal; ``step`` names what the stop is doing, for the
    log line of a forced exit; hooks added with ``on_force`` run just before one (e.g. kill the
    local pool, which must not outlive the bot).
    """

    def __init__(self, deadline_s: float = DEADLINE_S) -> None:
        self.deadline_s = deadline_s
        self.requested = asyncio.Event()
        self.signal_name: str | None = None
        self.step = "stopping"
        self._asked_at: float | None = None  # loop time of the first signal
        self._force_hooks: list[Callable[[], None]] = []
        self._request_hooks: list[Callable[[], None]] = []
        self._signalled = threading.Event()
        self._ended = False

    def on_request(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` (in the loop) as soon as a stop is asked for."""
        self._request_hooks.append(hook)

    def on_force(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` (from the loop or the deadline's thread) just before a forced exit."""
        self._force_hooks.append(hook)

    def time_left(self) -> float:
        """Seconds until the forced exit; the whole deadline while no stop was asked for."""
        if self._asked_at is None:
            return self.deadline_s
        return self._asked_at + self.deadline_s - asyncio.get_running_loop().time()

    @contextlib.contextmanager
    def handling_signals(self) -> Iterator[None]:
        """SIGTERM and SIGINT ask for a stop while inside (afterwards: the defaults again).

        The loop's own signal handling, since it wakes the loop whichever thread the signal
        lands on; a loop too stuck to run the handler is ended by the deadline's thread.
        """
        loop = asyncio.get_running_loop()
        watchdog = threading.Thread(target=self._keep_deadline, name="shutdown-deadline")
        watchdog.daemon = True  # never holds the interpreter's exit back
        watchdog.start()
        for sig in SIGNALS:
            loop.add_signal_handler(sig, self._on_signal, loop, sig)
        try:
            yield
        finally:
            for sig in SIGNALS:
                loop.remove_signal_handler(sig)
            self._ended = True
            self._signalled.set()  # lets the watchdog go if no signal came

    def _on_signal(self, loop: asyncio.AbstractEventLoop, sig: signal.Signals) -> None:
        if self.signal_name is not None:
            self.force(f"second signal ({sig.name})")
        self.signal_name = sig.name
        self._asked_at = loop.time()
        self._signalled.set()
        log.info("shutting down (%s)", sig.name)
        self.requested.set()
        for hook in self._request_hooks:
            hook()

    def _keep_deadline(self) -> None:
        self._signalled.wait()
        if self._ended and self.signal_name is None:
            return
        # The orderly stop ends with the process; waking up here means it did not.
        threading.Event().wait(self.deadline_s)
        self.force(f"still {self.step} {self.deadline_s:g} s after {self.signal_name}")

    def force(self, why: str) -> None:
        """Exit now, with ``FORCED_EXIT``, after the force hooks."""
        log.error("exiting at once: %s", why)
        for hook in self._force_hooks:
            with contextlib.suppress(Exception):
                hook()
        logging.shutdown()
        os._exit(FORCED_EXIT)
