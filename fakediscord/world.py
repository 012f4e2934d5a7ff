"""The in-memory Discord: users, servers, channels, messages, DMs.

Tests build it with the ``add_*`` methods before the bot connects; routes read
and change it. Lookups raise the ``ApiError`` Discord would return for a missing
object, so routes stay short.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from fakediscord import errors
from fakediscord.entities import (
    DM_CHANNEL,
    Application,
    Channel,
    Guild,
    Member,
    Role,
    Thread,
    User,
)
from fakediscord.fake_time import FakeClock
from fakediscord.ids import Snowflakes
from fakediscord.messages import Attachment, Message
from fakediscord.permissions import (
    DM_DEFAULT,
    EVERYONE_DEFAULT,
    MEMBER_OVERWRITE,
    ROLE_OVERWRITE,
    Overwrite,
    Permission,
    apply_overwrites,
    base_permissions,
)

T = TypeVar("T")


class World:
    def __init__(self, ids: Snowflakes, clock: FakeClock, *, app_name: str) -> None:
        self._ids = ids
        self._clock = clock
        self.users: dict[int, User] = {}
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, Message] = {}
        #: every stored file by attachment id, served by the CDN route
        self.files: dict[int, Attachment] = {}
        self._dm_channels: dict[int, int] = {}
        bot_id = ids.next()
        bot = User(id=bot_id, username=app_name, bot=True)
        owner = self.add_user(f"{app_name}-developer")
        self.users[bot_id] = bot
        # Like every modern app, the application id is the bot user's id.
        self.application = Application(id=bot_id, name=app_name, owner=owner, bot=bot)

    @property
    def bot(self) -> User:
        return self.application.bot

    # building

    def add_user(self, username: str, *, dms_open: bool = True, bot: bool = False) -> User:
        user = User(id=self._ids.next(), username=username, dms_open=dms_open, bot=bot)
        self.users[user.id] = user
        return user

    def add_guild(
        self,
        name: str,
        *,
        owner: User | None = None,
        everyone_permissions: int = EVERYONE_DEFAULT,
        bot_permissions: int = EVERYONE_DEFAULT,
        premium_tier: int = 0,
    ) -> Guild:
        """A server the bot is in; the bot gets a role of its own with ``bot_permissions``.

        Like the role Discord makes when a bot joins, it is managed (tagged with the bot's id)
        and sits at the bottom (position 1): the bot can assign no role until it is moved up.
        """
        guild_id = self._ids.next()
        owner = owner or self.add_user(f"{name}-owner")
        guild = Guild(id=guild_id, name=name, owner_id=owner.id, premium_tier=premium_tier)
        guild.roles[guild_id] = Role(guild_id, guild_id, "@everyone", everyone_permissions)
        self.guilds[guild_id] = guild
        bot_role = self.add_role(guild, self.bot.username, permissions=bot_permissions)
        bot_role.tags = {"bot_id": str(self.bot.id)}
        self.add_member(guild, owner)
        self.add_member(guild, self.bot, roles=[bot_role])
        return guild

    def add_role(
        self,
        guild: Guild,
        name: str,
        *,
        permissions: int = 0,
        position: int | None = None,
        managed: bool = False,
        mentionable: bool = False,
    ) -> Role:
        """A role at ``position`` (default: above every other); ``managed`` makes it an
        integration's role, which nobody can assign."""
        if position is None:
            position = max(r.position for r in guild.roles.values()) + 1
        elif position < 1:
            raise ValueError("position 0 is @everyone's; roles start at 1")
        role = Role(
            id=self._ids.next(),
            guild_id=guild.id,
            name=name,
            permissions=permissions,
            position=position,
            mentionable=mentionable,
            tags={"integration_id": str(self._ids.next())} if managed else None,
        )
        guild.roles[role.id] = role
        return role

    def add_member(
        self, guild: Guild, user: User, *, roles: Iterable[Role] = (), nick: str | None = None
    ) -> Member:
        member = Member(
            user=user,
            guild_id=guild.id,
            role_ids=[r.id for r in roles],
            joined_at=self._clock.iso(),
            nick=nick,
        )
        guild.members[user.id] = member
        return member

    def add_channel(self, guild: Guild, name: str, *, topic: str | None = None) -> Channel:
        channel = Channel(
            id=self._ids.next(),
            name=name,
            guild_id=guild.id,
            position=len(guild.channels),
            topic=topic,
        )
        guild.channels[channel.id] = channel
        self.channels[channel.id] = channel
        return channel

    def set_overwrite(
        self, channel: Channel, target: Role | User, *, allow: int = 0, deny: int = 0
    ) -> None:
        kind = ROLE_OVERWRITE if isinstance(target, Role) else MEMBER_OVERWRITE
        channel.overwrites[target.id] = Overwrite(target.id, kind, allow=allow, deny=deny)

    def start_thread(
        self, channel: Channel, message: Message, owner: User, *, name: str, archive_after: int
    ) -> Thread:
        """A public thread from ``message``, sharing its id; 160004 if it already has one."""
        if message.thread is not None:
            raise errors.thread_exists()
        assert channel.guild_id is not None
        thread = Thread(
            id=message.id,
            name=name,
            guild_id=channel.guild_id,
            parent_id=channel.id,
            owner_id=owner.id,
            auto_archive_duration=archive_after,
            created_at=self._clock.iso(),
            member_ids={owner.id},
        )
        self.guilds[channel.guild_id].threads[thread.id] = thread
        self.channels[thread.id] = thread
        message.thread = thread
        return thread

    def dm_channel(self, user: User) -> Channel:
        """The bot's DM channel with ``user``, opened on first use like Discord does."""
        existing = self.existing_dm(user)
        if existing is not None:
            return existing
        channel = Channel(id=self._ids.next(), name="", kind=DM_CHANNEL, recipient=user)
        self.channels[channel.id] = channel
        self._dm_channels[user.id] = channel.id
        return channel

    def existing_dm(self, user: User) -> Channel | None:
        channel_id = self._dm_channels.get(user.id)
        return None if channel_id is None else self.channels[channel_id]

    # lookups

    def user(self, user_id: int | str) -> User:
        return _get(self.users, user_id, "User")

    def guild(self, guild_id: int | str) -> Guild:
        return _get(self.guilds, guild_id, "Guild")

    def channel(self, channel_id: int | str) -> Channel:
        return _get(self.channels, channel_id, "Channel")

    def member(self, guild: Guild, user_id: int | str) -> Member:
        return _get(guild.members, user_id, "Member")

    def role(self, guild: Guild, role_id: int | str) -> Role:
        return _get(guild.roles, role_id, "Role")

    def message(self, channel: Channel, message_id: int | str) -> Message:
        message = _get(self.messages, message_id, "Message")
        if message.channel_id != channel.id or message.deleted:
            raise errors.unknown("Message")
        return message

    def channel_messages(self, channel_id: int) -> list[Message]:
        return [m for m in self.messages.values() if m.channel_id == channel_id and not m.deleted]

    # permissions

    def permissions_in(self, channel: Channel, user: User) -> int:
        """``user``'s permissions in ``channel``, overwrites included."""
        if channel.guild_id is None:
            return DM_DEFAULT
        if isinstance(channel, Thread):
            channel = self.channels[channel.parent_id]
        guild = self.guilds[channel.guild_id]
        member = guild.members.get(user.id)
        if member is None:
            return 0
        return apply_overwrites(
            self.guild_permissions(guild, member),
            guild_id=guild.id,
            user_id=user.id,
            role_ids=member.role_ids,
            overwrites=channel.overwrites,
        )

    def guild_permissions(self, guild: Guild, member: Member) -> int:
        return base_permissions(
            is_owner=member.user.id == guild.owner_id,
            everyone=guild.everyone.permissions,
            role_permissions=(guild.roles[r].permissions for r in member.role_ids),
        )

    def top_role(self, guild: Guild, member: Member) -> Role:
        """The member's highest role (``guild.me.top_role`` in discord.py)."""
        held = [guild.everyone, *(guild.roles[r] for r in member.role_ids)]
        return max(held, key=lambda r: r.rank)

    def may_assign(self, guild: Guild, role: Role) -> bool:
        """Discord's check for the bot giving or taking ``role``: Manage Roles, a role people
        hand out (not @everyone, not managed), strictly below the bot's highest role."""
        me = guild.members[self.bot.id]
        if not self.guild_permissions(guild, me) & Permission.MANAGE_ROLES:
            return False
        if role.is_everyone or role.managed:
            return False
        return self.bot.id == guild.owner_id or self.top_role(guild, me).rank > role.rank


def _get(table: dict[int, T], key: int | str, what: str) -> T:
    try:
        return table[int(key)]
    except (KeyError, ValueError):
        raise errors.unknown(what) from None
