"""Run a program against FakeDiscord, unmodified, as its user would start it.

    python -m fakediscord.launch API_BASE GATEWAY_URL [--entry MODULE:FUNC] -- ARGS...

points discord.py at the fake (REST base, gateway, asset CDN) and then calls
the entry point (default ``bot.cli:main``) with ARGS, e.g. ``-- run --no-workers``.
``--clock-file`` puts the bot's clock (``bot.clock``) under the test's control: the
file holds an ISO datetime the test rewrites to move time; ``--schedule-tick``
shortens the scheduled-post loop's sleep so a moved clock is noticed quickly; ``--events``
reports finished schedule passes and handled interactions to a file (``bot_events``).
A plain ``Client`` never asks ``GET /gateway/bot``; it dials ``DEFAULT_GATEWAY``,
which is why that is patched too. Attachment URLs come from payloads and already
point at the fake.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import yarl

from fakediscord import bot_events
from fakediscord.process import STACKS_SIGNAL
from fakediscord.signed_urls import ROOT as CDN_ROOT

DEFAULT_ENTRY = "bot.cli:main"


def overrides(api_base: str, gateway_url: str) -> list[tuple[object, str, object]]:
    """``(owner, attribute, value)`` triples that redirect discord.py; also for in-process tests."""
    from discord import asset, gateway, http

    origin = str(yarl.URL(api_base).origin())
    return [
        (http.Route, "BASE", api_base.rstrip("/")),
        (gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(gateway_url)),
        (asset.Asset, "BASE", origin + CDN_ROOT),
    ]


class FileClock:
    """Now is whatever aware ISO datetime the file holds (re-read when it changes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp = -1
        self._value = datetime.now(UTC)

    def __call__(self) -> datetime:
        stamp = self.path.stat().st_mtime_ns
        if stamp != self._stamp:
            self._value = datetime.fromisoformat(self.path.read_text().strip())
            self._stamp = stamp
        return self._value


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    parser = argparse.ArgumentParser(
        prog="python -m fakediscord.launch",
        description="Run a discord.py program against a FakeDiscord.",
    )
    parser.add_argument("api_base", help="e.g. http://127.0.0.1:PORT/api/v10")
    parser.add_argument("gateway_url", help="e.g. ws://127.0.0.1:PORT/ws")
    parser.add_argument("--entry", default=DEFAULT_ENTRY, help="MODULE:FUNCTION taking argv")
    parser.add_argument("--clock-file", type=Path, help="file holding the bot's current time")
    parser.add_argument("--schedule-tick", type=float, help="seconds between schedule checks")
    parser.add_argument("--events", type=Path, help="file the bot's finished work is reported to")
    options = parser.parse_args(args[:split])
    # Ctrl-C stops the program as in a terminal, even where the suite itself was started in
    # the background by a shell (which makes its children ignore SIGINT); and a program that
    # does not stop when asked can be made to show where it is stuck.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    faulthandler.register(STACKS_SIGNAL, all_threads=True)
    for owner, attribute, value in overrides(options.api_base, options.gateway_url):
        setattr(owner, attribute, value)
    if options.clock_file is not None:
        from bot import clock

        clock.set_source(FileClock(options.clock_file))
    if options.schedule_tick is not None:
        from bot import clock

        clock.RECHECK_S = options.schedule_tick
    if options.events is not None:
        bot_events.install(options.events)
    module_name, _, function = options.entry.partition(":")
    entry = getattr(importlib.import_module(module_name), function)
    return int(entry(args[split + 1 :]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
