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

from fakediscord.entities import Channel, Guild, Member, Role, Thread, User
from fakediscord.errors import ApiError
from fakediscord.fake_time import FakeClock
from fakediscord.handle import InteractionHandle, InteractionRejected
from fakediscord.interaction_rules import Reply
from fakediscord.journal import RequestRecord, RoleWrite
from fakediscord.loopback import FakeDiscord, Urls
from fakediscord.messages import Attachment, Message
from fakediscord.permissions import Permission
from fakediscord.process import BotProcess
from fakediscord.ratelimits import RateLimitPolicy

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
