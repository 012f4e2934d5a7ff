"""A discord.py program as a child process talking to a FakeDiscord, started through
``launch.py`` the way a user starts it, with its output kept for assertions and failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

from fakediscord.loopback import Urls
from tests.faked_clock import faked_clock_env

REPO = Path(__file__).resolve().parents[1]
LAUNCHER = "fakediscord.launch"
#: inherited from the test's environment; everything else is explicit
PASSED_THROUGH = ("PATH", "HOME", "LANG", "TMPDIR")
#: makes the program print every thread's Python stack (the launcher registers it)
STACKS_SIGNAL = signal.SIGUSR1


class BotProcess:
    """``entry`` is ``MODULE:FUNCTION`` for the launcher; None runs the bot (``bot.cli:main``)."""

    def __init__(
        self,
        urls: Urls,
        args: Sequence[str],
        *,
        entry: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        launcher_options: Sequence[str] = (),
    ) -> None:
        chosen = [] if entry is None else ["--entry", entry]
        launcher = [sys.executable, "-m", LAUNCHER, urls.api, urls.gateway, *launcher_options]
        self._command = [*launcher, *chosen, "--", *args]
        base = {k: os.environ[k] for k in PASSED_THROUGH if k in os.environ}
        base.update(faked_clock_env())
        self._env = {**base, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1", **(env or {})}
        self._cwd = cwd or REPO
        self._process: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self._exit_watch: asyncio.Task[None] | None = None
        self._exit_listeners: list[Callable[[], None]] = []
        self._stopping = False
        self._stacks_shown = asyncio.Event()
        self.lines: list[str] = []

    @property
    def output(self) -> str:
        """Everything the program printed (stdout and stderr) so far."""
        return "\n".join(self.lines)

    async def wait_for_output(self, text: str, timeout: float = 10.0) -> None:
        """Until the program has printed ``text`` (its output arrives through a pipe, later)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while text not in self.output:
            if asyncio.get_running_loop().time() >= deadline:
                raise AssertionError(f"the program did not print {text!r} within {timeout:g} s")
            await asyncio.sleep(0.02)

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def returncode(self) -> int | None:
        return None if self._process is None else self._process.returncode

    def on_exit(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever the program exits."""
        self._exit_listeners.append(listener)

    def unexpected_exit(self) -> str | None:
        """Why the program is gone although nobody stopped it, or None."""
        process = self._process
        if self._stopping or process is None or process.returncode is None:
            return None
        last = next((line for line in reversed(self.lines) if line.strip()), "(no output)")
        return f"the bot process exited (code {process.returncode}); its last line: {last}"

    async def start(self) -> None:
        self._stopping = False
        self._process = await asyncio.create_subprocess_exec(
            *self._command,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=self._env,
            cwd=self._cwd,
        )
        self._reader = asyncio.create_task(self._collect(self._process))
        self._exit_watch = asyncio.create_task(self._watch_exit(self._process))

    async def _collect(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            self.lines.append(line.decode(errors="replace").rstrip("\n"))
            if self.lines[-1].startswith(("Thread 0x", "Current thread 0x")):
                self._stacks_shown.set()

    async def _watch_exit(self, process: asyncio.subprocess.Process) -> None:
        await process.wait()
        for listener in self._exit_listeners:
            listener()

    async def stop(self, grace: float = 10.0) -> int:
        """Ctrl-C (as a user stops it), then a kill if it has not exited within ``grace`` s."""
        process = self._process
        if process is None:
            raise RuntimeError("the process was never started")
        self._stopping = True
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGINT)
            try:
                await asyncio.wait_for(process.wait(), grace)
            except TimeoutError:
                await self._show_stacks(grace)
                process.kill()
                await process.wait()
        if self._reader is not None:
            await self._reader
        if self._exit_watch is not None:
            await self._exit_watch
        return process.returncode if process.returncode is not None else -1

    async def _show_stacks(self, grace: float) -> None:
        """Before killing a program that ignored Ctrl-C, have it print where it is stuck."""
        self.lines.append(f"--- still running {grace:g} s after Ctrl-C; its stacks: ---")
        self._stacks_shown.clear()
        with contextlib.suppress(ProcessLookupError):
            assert self._process is not None
            self._process.send_signal(STACKS_SIGNAL)
        with contextlib.suppress(TimeoutError):  # the dump comes through the pipe
            await asyncio.wait_for(self._stacks_shown.wait(), 2)

    def kill(self) -> None:
        """SIGKILL, as the OOM killer would; ``stop`` then collects it."""
        self._stopping = True
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
