"""How the bot's local workers tell it that they wrote a verdict: a byte down a pipe.

SQLite has no notifications, and the bot's local pool (``brrrbot run`` starts it) is the
bot's own child: the bot opens a pipe, hands its write end to the pool (``VERDICT_FD_ENV``
names the descriptor, which the pool passes on to each worker process it starts), and a worker
writes one byte after each verdict it committed.  The bot reads whatever arrived and wakes
its delivery once, however many bytes it finds.  The same pipe serves PostgreSQL, where it only
doubles the NOTIFY (``bot.jobs.listen``).

A byte is only a hint, never data: a full pipe (the bot is busy; a wake is pending anyway) or
a closed one (the bot is gone) is ignored.  Workers elsewhere are covered by delivery's safety
net pass.  The descriptor is not inherited past a worker: its zygote and the jobs never get it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

#: names the inherited write end in a worker's environment
VERDICT_FD_ENV = "BRRRBOT_VERDICT_FD"
READ_CHUNK = 4096


class VerdictPipe:
    """The bot's side: calls ``written()`` in the event loop when a local worker wrote a verdict.

    ``child_env`` and ``child_fds`` are what a pool process is started with; the write end
    stays open here too, so the pipe outlives each pool it is handed to.
    """

    def __init__(self, written: Callable[[], None]) -> None:
        self.written = written
        self._read, self._write = os.pipe()  # neither inherited by default
        os.set_blocking(self._read, False)
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._read, self._readable)

    def child_env(self) -> dict[str, str]:
        return {VERDICT_FD_ENV: str(self._write)}

    def child_fds(self) -> tuple[int, ...]:
        return (self._write,)

    def _readable(self) -> None:
        got = False
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(self._read, READ_CHUNK):
                got = True
                if len(chunk) < READ_CHUNK:
                    break
        if got:
            self.written()

    def close(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self._read)
            self._loop = None
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)


class VerdictBell:
    """A worker's side: ``ring()`` after each committed verdict; does nothing when the worker
    was not started by a bot (``VERDICT_FD_ENV`` unset)."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self.fd = inherited_fd(environ)

    def ring(self) -> None:
        if self.fd is None:
            return
        try:
            os.write(self.fd, b"\0")
        except BlockingIOError:
            pass  # full: the bot has wakes pending already
        except OSError as exc:  # the bot is gone (EPIPE) or the descriptor is not ours
            log.info("not telling the bot about verdicts any more: %s", exc)
            self.fd = None


def passed_on(environ: Mapping[str, str] = os.environ) -> tuple[int, ...]:
    """What a pool that supervises workers passes to each (``pass_fds``): the write end, if it
    was handed one."""
    value = environ.get(VERDICT_FD_ENV, "")
    return (int(value),) if value.isdigit() else ()


def inherited_fd(environ: Mapping[str, str] = os.environ) -> int | None:
    """The write end this process was handed, made non-blocking and not inheritable (a pool
    passes it on explicitly); None when none was handed or it is not a pipe."""
    value = environ.get(VERDICT_FD_ENV)
    if not value:
        return None
    try:
        fd = int(value)
        os.set_blocking(fd, False)
        os.set_inheritable(fd, False)
    except (ValueError, OSError) as exc:
        log.warning("%s=%r is not a descriptor I can write to: %s", VERDICT_FD_ENV, value, exc)
        return None
    return fd
