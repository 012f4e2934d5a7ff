"""``brrrbot`` with two test knobs, for ``BotProcess(entry="tests.bot.instrumented:main")``.

Harness instrumentation like the launcher's ``--clock-file``; nothing in the bot knows of it:

- ``STATEMENTS_ENV`` names a file to which every statement the bot process sends to its
  database is appended, one line each (SQLAlchemy's ``before_cursor_execute``, on every engine),
  so a test counts what an idle bot asks of the database;
- ``SAFETY_NET_ENV`` sets delivery's safety-net interval (``bot.exts.delivery.SAFETY_NET_S``,
  the ``idle_s`` of its ``PassLoop``: patched there, since discord.py executes an extension's
  module afresh when it loads it), so that a verdict delivered sooner than that can only have
  been woken for.

Neither reaches the local pool: its environment is built from the bot's settings alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

STATEMENTS_ENV = "BRRRBOT_TEST_STATEMENTS"
SAFETY_NET_ENV = "BRRRBOT_TEST_DELIVERY_SAFETY_NET_S"
DELIVERY_LOOP = "verdict-delivery"


def main(argv: Sequence[str]) -> int:
    path = os.environ.get(STATEMENTS_ENV)
    if path:
        _record_statements(path)
    safety_net = os.environ.get(SAFETY_NET_ENV)
    if safety_net:
        _slow_delivery_safety_net(float(safety_net))
    from bot.cli import main as brrrbot

    return int(brrrbot(list(argv)) or 0)


def _slow_delivery_safety_net(idle_s: float) -> None:
    from bot.background import PassLoop

    make = PassLoop.__init__

    def made(self: PassLoop, name: str, *args: Any, **options: Any) -> None:
        if name == DELIVERY_LOOP:
            options["idle_s"] = idle_s
            print(f"instrumented: {name} runs every {idle_s:g} s unless woken", flush=True)
        make(self, name, *args, **options)

    PassLoop.__init__ = made  # type: ignore[method-assign]


def _record_statements(path: str) -> None:
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        os.write(fd, (" ".join(statement.split()) + "\n").encode())  # one write: whole lines

    event.listen(Engine, "before_cursor_execute", record)
