"""The command digest: the same tree gives the same digest, any change gives another; the
stores it and the quest drafts use are plain modules."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.command_sync import commands_digest, remember_synced, synced_digest
from bot.db.engine import make_sessionmaker
from tests.support import REPO

APP = 1234
PAYLOAD = [
    {"name": "today", "description": "Today's quest", "type": 1, "options": []},
    {"name": "Submit solution", "type": 3, "contexts": None},
]


def test_the_digest_ignores_key_order_but_nothing_else() -> None:
    digest = commands_digest(PAYLOAD, APP)
    reordered = [dict(reversed(command.items())) for command in PAYLOAD]
    assert commands_digest(reordered, APP) == digest
    assert len(digest) == 64
    changed = [{**PAYLOAD[0], "description": "Today's quest!"}, PAYLOAD[1]]
    for other in (
        commands_digest(changed, APP),
        commands_digest(PAYLOAD[:1], APP),
        commands_digest(list(reversed(PAYLOAD)), APP),  # the order Discord receives them in
        commands_digest(PAYLOAD, APP + 1),  # another application
    ):
        assert other != digest


async def test_the_last_synced_digest_is_kept(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    now = datetime.now(UTC)
    async with sessions() as session:
        assert await synced_digest(session) is None
    for digest in ("a" * 64, "b" * 64):
        async with sessions() as session, session.begin():
            await remember_synced(session, digest, now=now)
        async with sessions() as session:
            assert await synced_digest(session) == digest


def test_the_stores_import_no_discord() -> None:
    code = (
        "import sys, bot.command_sync, bot.curriculum.drafts; "
        "assert 'discord' not in sys.modules and 'torch' not in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
