"""A loopback Discord for tests: the real discord.py client talks to it over real sockets.

Build a world, start the fake, run the bot against it with ``BotProcess`` (or
in-process, redirected with ``launch.overrides``), act as users, assert::

    fake = FakeDiscord()
    guild = fake.add_guild("study")
    general = fake.add_channel(guild, "general")
    alice = fake.add_user("alice")
    fake.add_member(guild, alice)
    async with fake, BotProcess(fake.urls, ["run", "--no-workers"], env={...}):
        await fake.wait_until_connected(timeout=20)
        handle = await fake.invoke_slash(guild, general, alice, "ping")
        assert await handle.acked() < 3
        assert (await handle.original()).content == "pong"
"""

from tests.fakediscord.clock import FakeClock
from tests.fakediscord.errors import ApiError
from tests.fakediscord.handle import InteractionHandle, InteractionRejected
from tests.fakediscord.interactions import Reply
from tests.fakediscord.journal import RequestRecord, RoleWrite
from tests.fakediscord.messages import Attachment, Message
from tests.fakediscord.models import Channel, Guild, Member, Role, Thread, User
from tests.fakediscord.permissions import Permission
from tests.fakediscord.process import BotProcess
from tests.fakediscord.ratelimits import RateLimitPolicy
from tests.fakediscord.server import FakeDiscord, Urls

__all__ = [
    "ApiError",
    "Attachment",
    "BotProcess",
    "Channel",
    "FakeClock",
    "FakeDiscord",
    "Guild",
    "InteractionHandle",
    "InteractionRejected",
    "Member",
    "Message",
    "Permission",
    "RateLimitPolicy",
    "Reply",
    "RequestRecord",
    "Role",
    "RoleWrite",
    "Thread",
    "Urls",
    "User",
]
