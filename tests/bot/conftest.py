"""The real bot, started as a user starts it (``brrrbot run``), against the loopback fake.

One bot process (with its real local worker) serves a whole test module; the
scene gives each test fresh members so tests do not depend on each other.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import pytest_asyncio

from bot.config import Settings
from fakediscord import Channel, FakeDiscord, Guild, Permission, Role, User
from fakediscord.bot_events import BotEvents
from fakediscord.handle import InteractionHandle
from fakediscord.process import BotProcess
from tests import timeline
from tests.support import BUILD_TASK, SEED_QUESTS, SOLUTIONS, verify_problems

#: 00:00 UTC of the Monday at least two days after the real now: a bot whose clock starts in
#: that week is far ahead of every interaction the fake issues (their tokens look expired)
MONDAY = timeline.monday_after(timeline.now(), days=2)
START = MONDAY + timedelta(hours=8)  # the bot's clock when a clock-controlled world starts
CORRECT = (SOLUTIONS / "correct.py").read_bytes()  # passes BUILD_TASK
#: the lease ``brrrbot db verify`` checks running jobs against when its environment sets none
VERIFY_LEASE_S = float(Settings.model_fields["lease_seconds"].default)


@dataclass
class World:
    fake: FakeDiscord
    bot: BotProcess
    guild: Guild
    quests: Channel
    closed: Channel  # the bot may not send messages here
    mods: Role
    owner: User  # Manage Server
    moderator: User  # has the moderator role only (after setup)
    workdir: Path
    clock_file: Path
    events: BotEvents
    _names: itertools.count

    def learner(self, *, dms_open: bool = True) -> User:
        """A new plain member (world changes reach the bot through the fake's REST)."""
        user = self.fake.add_user(f"learner{next(self._names)}", dms_open=dms_open)
        self.fake.add_member(self.guild, user)
        return user

    async def slash(self, user: User, name: str, /, **options: object) -> InteractionHandle:
        """``user`` runs ``/name`` in the quests channel, where members talk to the bot."""
        return await self.fake.invoke_slash(self.guild, self.quests, user, name, options=options)

    async def submit(
        self,
        user: User,
        data: bytes = CORRECT,
        *,
        filename: str = "solution.py",
        task: str = BUILD_TASK,
    ) -> InteractionHandle:
        """``user`` runs ``/submit`` for ``task`` with ``data`` attached as ``filename``."""
        return await self.slash(user, "submit", task=task, file=(filename, data))

    async def submit_reply(self, user: User) -> str:
        """``user`` submits ``CORRECT``; the bot's first reply (queued, refused, limited), once in.

        Waiting for it also orders a test's submissions as the member would send them.
        """
        return (await (await self.submit(user)).original(timeout=15)).content

    def set_time(self, moment: datetime) -> None:
        self.clock_file.write_text(moment.isoformat())

    async def settle(self) -> None:
        """Until the bot finished a scheduled-post pass that began after this call."""
        assert self.bot.pid is not None
        await self.events.next_pass(self.bot.pid)

    async def at(self, moment: datetime) -> None:
        """Move the bot's clock to ``moment`` and let it act on it (post what is due)."""
        self.set_time(moment)
        await self.settle()

    async def restart(self, moment: datetime | None = None) -> None:
        """Stop the bot, move its clock while it is down, start it, wait for its first pass."""
        old = self.fake.gateway.session
        await self.bot.stop()
        if moment is not None:
            self.set_time(moment)
        await self.bot.start()
        await self.fake.wait_until_connected(timeout=30, replacing=old)
        await self.settle()

    async def handled(self, handle: InteractionHandle) -> int:
        """Until the bot finished handling the interaction; how many times it did."""
        await self.events.until_handled(handle.id)
        return self.events.handled(handle.id)

    @property
    def database(self) -> Path:
        return self.workdir / "data" / "brrrbot.sqlite3"


async def start_world(
    tmp_path: Path,
    *,
    workers: int,
    clock: bool = False,
    extra_env: dict[str, str] | None = None,
    entry: str | None = None,
) -> AsyncIterator[World]:
    """A world whose bot runs ``brrrbot run`` (through ``entry``, MODULE:FUNCTION, if given:
    e.g. ``tests.bot.instrumented:main``)."""
    fake = FakeDiscord(heartbeat_interval=1.0)
    guild = fake.add_guild("brrr study group")
    quests = fake.add_channel(guild, "quests")
    closed = fake.add_channel(guild, "read-only")
    fake.deny_bot(closed, Permission.SEND_MESSAGES)
    mods = fake.add_role(guild, "mentors")
    owner = fake.add_user("owner")
    moderator = fake.add_user("mentor")
    admins = fake.add_role(guild, "admins", permissions=Permission.MANAGE_GUILD)
    fake.add_member(guild, owner, roles=[admins])
    fake.add_member(guild, moderator, roles=[mods])
    clock_file = tmp_path / "now.txt"
    clock_file.write_text(START.isoformat())
    events = tmp_path / "bot-events.log"
    env = {
        "DISCORD_TOKEN": fake.token,
        "QUESTS_DIR": str(SEED_QUESTS),
        "WORKERS": str(workers),
        "LOG_LEVEL": "INFO",
        "HTTP_PORT": "0",  # tests that need /healthz give a free port in extra_env
        **(extra_env or {}),
    }
    options = ["--events", str(events)]
    if clock:
        options += ["--clock-file", str(clock_file), "--schedule-tick", "0.2"]
    async with fake:
        args = ["run"] if workers else ["run", "--no-workers"]
        bot = BotProcess(
            fake.urls, args, entry=entry, env=env, cwd=tmp_path, launcher_options=options
        )
        fake.watch(bot)  # a bot that dies fails the waiting test at once, naming why
        async with bot:
            await fake.wait_until_connected(timeout=30)
            try:
                yield World(
                    fake,
                    bot,
                    guild,
                    quests,
                    closed,
                    mods,
                    owner,
                    moderator,
                    tmp_path,
                    clock_file,
                    BotEvents(events),
                    itertools.count(1),
                )
            finally:
                print("--- bot output (tail) ---\n" + bot.output[-8000:])  # shown on failure
        # The bot is stopped: whatever the module did, the database must still be consistent
        # (checked as `brrrbot db verify` in tmp_path checks it: its DATABASE_URL, else the
        # default file there, and the default lease).
        default = f"sqlite+aiosqlite:///{tmp_path / 'data' / 'brrrbot.sqlite3'}"
        problems = await verify_problems(env.get("DATABASE_URL", default), VERIFY_LEASE_S)
        assert not problems, "brrrbot db verify after this module:\n" + "\n".join(problems)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async for started in start_world(tmp_path_factory.mktemp("bot"), workers=1):
        yield started
