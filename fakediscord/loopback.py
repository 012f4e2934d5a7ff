"""``FakeDiscord``: a loopback Discord (REST, gateway, CDN) for the real discord.py client.

Tests build a world (servers, channels, users), start the fake, point
discord.py at it (see ``launch.py``), then act as users (``invoke_slash``,
``click_button``...) and assert on what the bot did (messages, responses,
requests). Faults (429/5xx, gateway drops, held responses) and the clock are theirs
to steer. Mid-test changes a bot would hear of (role edits, its own roles) go through
the ``async`` methods, which announce them on the gateway as Discord does.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self

from aiohttp import web

from fakediscord.authoring import post_as
from fakediscord.changes import Changes
from fakediscord.command_registry import CommandRegistry, RegisteredCommand
from fakediscord.composer import Composer
from fakediscord.context import CONTEXT, Context
from fakediscord.entities import Channel, Guild, Member, Role, Thread, User
from fakediscord.envelope import envelope
from fakediscord.fake_time import FakeClock
from fakediscord.faults import Fault, FaultPlan
from fakediscord.gateway import PRIVILEGED, Gateway, Session
from fakediscord.handle import InteractionHandle
from fakediscord.holds import HeldResponse
from fakediscord.ids import Snowflakes, new_token
from fakediscord.interaction_rules import InteractionRecord, InteractionRegistry
from fakediscord.invocations import Draft, Invoker, Ref, Upload, ref_id
from fakediscord.journal import Journal, RequestRecord, RoleWrite
from fakediscord.messages import Message
from fakediscord.middleware import API_PREFIX, discord_middleware
from fakediscord.permissions import EVERYONE_DEFAULT
from fakediscord.ratelimits import (
    DEFAULT_POLICY,
    MEMBER_ROLE,
    ROLE_WRITE_POLICY,
    ROLE_WRITES,
    RateLimitPolicy,
    RateLimits,
)
from fakediscord.role_changes import edit_role, set_member_role
from fakediscord.routes import add_routes
from fakediscord.signed_urls import ROOT as CDN_ROOT
from fakediscord.signed_urls import Cdn
from fakediscord.world import World


class Watched(Protocol):
    """A program whose unexpected exit fails every wait (``process.BotProcess`` is one)."""

    def on_exit(self, listener: Callable[[], None]) -> None: ...
    def unexpected_exit(self) -> str | None: ...


MAX_UPLOAD = 200 * 1024 * 1024


@dataclass(frozen=True)
class Urls:
    origin: str
    #: for ``discord.http.Route.BASE``
    api: str
    #: for ``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY``
    gateway: str
    #: for ``discord.asset.Asset.BASE``
    cdn: str


class FakeDiscord:
    def __init__(
        self,
        *,
        token: str = "fake-bot-token",
        app_name: str = "brrrbot",
        heartbeat_interval: float = 1.0,
        rate_limit: RateLimitPolicy = DEFAULT_POLICY,
        role_write_limit: RateLimitPolicy = ROLE_WRITE_POLICY,
        privileged_intents: int = PRIVILEGED,
        attachment_url_ttl: float = 24 * 3600.0,
        clock: FakeClock | None = None,
    ) -> None:
        self.clock = clock or FakeClock()
        crashes: list[Exception] = []
        ids = Snowflakes(self.clock)
        self.world = World(ids, self.clock, app_name=app_name)
        changes = Changes()
        self.gateway = Gateway(
            self.world,
            self.clock,
            changes,
            token=token,
            heartbeat_interval=heartbeat_interval,
            allowed_privileged=privileged_intents,
            crashes=crashes,
        )
        cdn = Cdn(self.clock, attachment_url_ttl)
        commands = CommandRegistry(ids, self.world.application.id)
        self._ctx = Context(
            token=token,
            clock=self.clock,
            ids=ids,
            world=self.world,
            changes=changes,
            gateway=self.gateway,
            composer=Composer(self.world, ids, self.clock, cdn, changes, self.gateway),
            commands=commands,
            interactions=InteractionRegistry(),
            cdn=cdn,
            faults=FaultPlan(),
            journal=Journal(),
            ratelimits=RateLimits(rate_limit, {ROLE_WRITES: role_write_limit}),
            crashes=crashes,
        )
        self._invoker = Invoker(self.world, ids, commands, cdn)
        self._app = web.Application(middlewares=[discord_middleware], client_max_size=MAX_UPLOAD)
        self._app[CONTEXT] = self._ctx
        add_routes(self._app)
        self._app.router.add_get("/ws", self.gateway.handle)
        self._app.router.add_get("/resume", self.gateway.handle)
        self._runner: web.AppRunner | None = None
        self.urls: Urls | None = None

    @property
    def token(self) -> str:
        return self._ctx.token

    @property
    def bot(self) -> User:
        return self.world.bot

    @property
    def application_id(self) -> int:
        return self.world.application.id

    @property
    def role_write_limit(self) -> RateLimitPolicy:
        """The per-guild bucket that adding and removing members' roles share."""
        return self._ctx.ratelimits.shared[ROLE_WRITES]

    @role_write_limit.setter
    def role_write_limit(self, policy: RateLimitPolicy) -> None:
        self._ctx.ratelimits.shared[ROLE_WRITES] = policy

    # lifecycle

    async def start(self) -> Urls:
        """Listen on a free port of 127.0.0.1 and return where everything is."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        self._runner = web.AppRunner(self._app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        await web.SockSite(self._runner, listener).start()
        origin = f"http://127.0.0.1:{port}"
        self.urls = Urls(
            origin=origin,
            api=origin + API_PREFIX,
            gateway=f"ws://127.0.0.1:{port}/ws",
            cdn=origin + CDN_ROOT,
        )
        self.gateway.connect_url = self.urls.gateway
        self.gateway.resume_url = f"ws://127.0.0.1:{port}/resume"
        self._ctx.cdn.origin = origin
        return self.urls

    async def stop(self) -> None:
        """Shut down; raises if the fake itself crashed meanwhile, so no bug of its hides."""
        if self._runner is None:
            return
        self._ctx.holds.release_all()
        await self.gateway.close_all()
        await self._runner.cleanup()
        self._runner = None
        crashes = self._ctx.crashes
        if crashes:
            raise RuntimeError(f"the fake crashed {len(crashes)} time(s)") from crashes[0]

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

    # building the world (before the bot connects: later changes are not announced)

    def add_user(self, username: str, *, dms_open: bool = True) -> User:
        return self.world.add_user(username, dms_open=dms_open)

    def add_guild(
        self,
        name: str,
        *,
        owner: User | None = None,
        everyone_permissions: int = EVERYONE_DEFAULT,
        bot_permissions: int = EVERYONE_DEFAULT,
        premium_tier: int = 0,
    ) -> Guild:
        return self.world.add_guild(
            name,
            owner=owner,
            everyone_permissions=everyone_permissions,
            bot_permissions=bot_permissions,
            premium_tier=premium_tier,
        )

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
        """A role at ``position`` (default: above all others; ties are broken by id, the older
        role ranking higher); ``managed``: an integration's role, which nobody can assign.

        The bot's own role (``bot_role``) is managed and sits at position 1.
        """
        return self.world.add_role(
            guild,
            name,
            permissions=permissions,
            position=position,
            managed=managed,
            mentionable=mentionable,
        )

    def bot_role(self, guild: Guild) -> Role:
        """The managed role Discord gave the bot when it joined (``add_guild``'s permissions)."""
        return guild.bot_role

    def add_member(
        self, guild: Guild, user: User, *, roles: Iterable[Role] = (), nick: str | None = None
    ) -> Member:
        return self.world.add_member(guild, user, roles=roles, nick=nick)

    def add_channel(self, guild: Guild, name: str, *, topic: str | None = None) -> Channel:
        return self.world.add_channel(guild, name, topic=topic)

    def set_overwrite(
        self, channel: Channel, target: Role | User, *, allow: int = 0, deny: int = 0
    ) -> None:
        self.world.set_overwrite(channel, target, allow=allow, deny=deny)

    def deny_bot(self, channel: Channel, permissions: int) -> None:
        """Take permissions from the bot in one channel (e.g. SEND_MESSAGES: sends get 50013)."""
        self.world.set_overwrite(channel, self.world.bot, deny=permissions)

    # roles at any time (announced to a connected bot as Discord would)

    async def grant_role(self, guild: Guild, user: Ref, role: Role) -> None:
        """An admin gives ``user`` the role (``fake.bot`` too: how the bot gets Manage Roles)."""
        member = self.world.member(guild, ref_id(user))
        await set_member_role(self.gateway, guild, member, role, held=True)

    async def revoke_role(self, guild: Guild, user: Ref, role: Role) -> None:
        member = self.world.member(guild, ref_id(user))
        await set_member_role(self.gateway, guild, member, role, held=False)

    async def update_role(
        self, role: Role, *, position: int | None = None, permissions: int | None = None
    ) -> None:
        """An admin drags ``role`` to ``position`` (exactly; no renumbering) and/or changes
        its permissions; the bot gets GUILD_ROLE_UPDATE."""
        await edit_role(self.gateway, role, position=position, permissions=permissions)

    def member_roles(self, guild: Guild, user: Ref) -> set[int]:
        """The ids of the member's roles now (without @everyone)."""
        return set(self.world.member(guild, ref_id(user)).role_ids)

    def role_writes(self, guild: Ref | None = None) -> list[RoleWrite]:
        """Every role add/remove the bot requested (in ``guild``), with Discord's status."""
        writes = self._ctx.journal.role_writes(MEMBER_ROLE)
        return [w for w in writes if guild is None or w.guild_id == ref_id(guild)]

    def set_command_permission(
        self, guild: Guild, name: str, target: Role | User | Guild, *, allow: bool
    ) -> None:
        """An admin's per-command override in Integrations settings (the guild = @everyone)."""
        command = self._ctx.commands.find(name, guild.id)
        self._ctx.commands.set_permission(guild.id, command, target.id, allow=allow)

    # the user side

    async def send_interaction(self, draft: Draft) -> InteractionHandle:
        """Give ``draft`` an id and token and dispatch it as INTERACTION_CREATE."""
        session = self.gateway.session
        if session is None:
            raise RuntimeError("no bot has identified on the gateway yet")
        if not session.resumable:
            raise RuntimeError("the session is invalidated; wait_until_connected(replacing=...)")
        interaction_id = self._ctx.ids.next()
        token = new_token()
        payload = envelope(self.world, draft, interaction_id, token)
        record = InteractionRecord(
            id=interaction_id,
            token=token,
            kind=draft.kind,
            guild_id=draft.guild_id,
            channel_id=draft.channel_id,
            user_id=draft.user_id,
            payload=payload,
            created_at=self.clock.now(),
            source_message_id=draft.source_message_id,
        )
        self._ctx.interactions.add(record)
        await self.gateway.publish("INTERACTION_CREATE", payload)
        return InteractionHandle(record, self.world, self._ctx.changes, self.clock)

    async def invoke_slash(
        self,
        guild: Ref | None,
        channel: Ref | None,
        user: Ref,
        name: str,
        *,
        options: Mapping[str, Any] | None = None,
        attachments: Sequence[Upload] = (),
    ) -> InteractionHandle:
        """``user`` runs ``/name`` (``"admin setup"`` for subcommands); no guild means a DM.

        ``attachments`` fill the command's attachment options in order; a value of
        ``options`` may also be a ``(filename, bytes)`` pair for an attachment option.
        """
        where = self._invoker.locate(guild, channel, user)
        draft = self._invoker.command(where, name, options or {}, attachments)
        return await self.send_interaction(draft)

    async def invoke_autocomplete(
        self,
        guild: Ref | None,
        channel: Ref | None,
        user: Ref,
        name: str,
        *,
        focused: str,
        value: str,
        options: Mapping[str, Any] | None = None,
        timeout: float = 3.5,
    ) -> list[dict[str, Any]]:
        """``user`` types ``value`` into option ``focused``; returns the bot's choices."""
        where = self._invoker.locate(guild, channel, user)
        filled = {**(options or {}), focused: value}
        draft = self._invoker.command(where, name, filled, (), focused=focused)
        handle = await self.send_interaction(draft)
        return await handle.choices(timeout)

    async def invoke_message_command(
        self, guild: Ref | None, channel: Ref | None, user: Ref, name: str, *, target: Message
    ) -> InteractionHandle:
        """``user`` picks Apps > ``name`` on ``target`` (a message in ``channel``)."""
        where = self._invoker.locate(guild, channel, user)
        return await self.send_interaction(self._invoker.message_command(where, name, target))

    async def post_as(
        self,
        user: Ref,
        channel: Ref | None,
        content: str = "",
        *,
        attachments: Sequence[Upload] = (),
    ) -> Message:
        """``user`` writes in ``channel`` (a guild channel or thread; None: their DM with the
        bot), with ``(filename, bytes)`` files served by the fake CDN."""
        if channel is None:
            where = self._invoker.locate(None, None, user)
        else:
            room = self.world.channel(ref_id(channel))
            where = self._invoker.locate(room.guild_id, room, user)
        return await post_as(self.world, self._ctx.composer, where, content, attachments)

    async def submit_modal(
        self, handle: InteractionHandle, values: Mapping[str, str | Sequence[str]]
    ) -> InteractionHandle:
        """The user fills in the modal the bot answered ``handle`` with, and submits it."""
        await handle.modal()
        return await self.send_interaction(self._invoker.modal_submit(handle.record, values))

    async def click_button(
        self, message: Message, custom_id: str, *, user: Ref | None = None
    ) -> InteractionHandle:
        """``user`` (default: whoever ``message`` answered) presses a button of ``message``."""
        return await self.send_interaction(self._invoker.component(message, custom_id, user, None))

    async def select(
        self, message: Message, custom_id: str, values: Sequence[str], *, user: Ref | None = None
    ) -> InteractionHandle:
        """``user`` (default: whoever ``message`` answered) picks ``values`` in a select menu."""
        draft = self._invoker.component(message, custom_id, user, values)
        return await self.send_interaction(draft)

    # what the bot did

    def messages_in(self, channel: Ref, *, include_ephemeral: bool = False) -> list[Message]:
        """The channel's messages, oldest first; ephemeral ones only on request."""
        messages = self.world.channel_messages(ref_id(channel))
        return sorted(
            (m for m in messages if include_ephemeral or not m.ephemeral), key=lambda m: m.id
        )

    def dms_to(self, user: Ref) -> list[Message]:
        channel = self.world.existing_dm(self.world.user(ref_id(user)))
        return [] if channel is None else self.messages_in(channel)

    async def wait_for_message(
        self,
        channel: Ref,
        predicate: Callable[[Message], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Message:
        """The first (oldest) message in ``channel`` matching ``predicate``, waiting for it."""
        return await self._ctx.changes.until(
            lambda: next((m for m in self.messages_in(channel) if predicate(m)), None),
            timeout,
            f"a matching message in channel {ref_id(channel)}",
        )

    async def wait_for_dm(
        self,
        user: Ref,
        predicate: Callable[[Message], bool] = lambda m: True,
        timeout: float = 5.0,
    ) -> Message:
        return await self._ctx.changes.until(
            lambda: next((m for m in self.dms_to(user) if predicate(m)), None),
            timeout,
            f"a matching DM to user {ref_id(user)}",
        )

    def threads_of(self, channel: Ref) -> list[Thread]:
        """Threads started in ``channel``, oldest first (``messages_in(thread)``: their posts)."""
        room = self.world.channel(ref_id(channel))
        if room.guild_id is None:
            return []
        threads = self.world.guilds[room.guild_id].threads.values()
        return sorted((t for t in threads if t.parent_id == room.id), key=lambda t: t.id)

    def commands(self, guild: Ref | None = None) -> list[RegisteredCommand]:
        """Commands registered globally (no guild) or for one guild."""
        return self._ctx.commands.listed(None if guild is None else ref_id(guild))

    @property
    def requests(self) -> list[RequestRecord]:
        """Every HTTP request so far, in order."""
        return list(self._ctx.journal.records)

    def calls(self, route: str, *, status: int | None = None) -> list[RequestRecord]:
        """Requests to ``"METHOD /template"``, e.g. ``"POST /channels/{channel_id}/messages"``."""
        self._check_route(route)
        return self._ctx.journal.matching(route, status)

    def routes(self) -> set[str]:
        """Every ``"METHOD /template"`` the fake serves."""
        found = set()
        for route in self._app.router.routes():
            if route.method != "HEAD" and route.resource is not None:
                template = route.resource.canonical.removeprefix(API_PREFIX)
                found.add(f"{route.method} {template}")
        return found

    # the gateway

    def watch(self, program: Watched) -> None:
        """Make every wait fail at once, naming it, if ``program`` exits unexpectedly."""
        program.on_exit(self._ctx.changes.bump)
        self._ctx.changes.guard(program.unexpected_exit)

    async def wait_until_connected(
        self, timeout: float = 5.0, *, replacing: Session | None = None
    ) -> Session:
        """The connected session, once it has READY and its GUILD_CREATEs (or RESUMED).

        With ``replacing``, waits for a new session instead (after an invalidation).
        """

        def check() -> Session | None:
            session = self.gateway.session
            if not self.gateway.connected or session is None or session is replacing:
                return None
            return session

        return await self._ctx.changes.until(check, timeout, "a bot to connect to the gateway")

    def dispatched(self, event: str) -> list[dict[str, Any]]:
        """The data of each ``event`` sent to the bot's current session, oldest first."""
        return self.gateway.dispatched(event)

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send any gateway event to the bot's session."""
        await self.gateway.publish(event, data)

    async def drop_gateway(self, close_code: int | None = None, *, resumable: bool = True) -> None:
        """Cut the bot's gateway connection (a TCP reset, or a close frame with ``close_code``).

        ``resumable=False`` also loses the session: RESUME fails and the bot IDENTIFYs again.
        """
        await self.gateway.drop(close_code, resumable=resumable)

    async def request_reconnect(self) -> None:
        await self.gateway.request_reconnect()

    async def invalidate_session(self, *, resumable: bool) -> None:
        await self.gateway.invalidate_session(resumable=resumable)

    # faults

    def inject_fault(
        self,
        status: int,
        *,
        route: str | None = None,
        times: int = 1,
        retry_after: float = 0.05,
        after: int = 0,
    ) -> None:
        """The next ``times`` requests to ``route`` (any route when None) get ``status``, once
        ``after`` of them have gone through (e.g. ``after=1``: the second part of a post).

        429s carry ``retry_after`` seconds; 5xx make discord.py sleep 1 s, 3 s... between tries.
        """
        if route is not None:
            self._check_route(route)
        self._ctx.faults.add(Fault(status, route, times, retry_after, after))

    def clear_faults(self) -> None:
        self._ctx.faults.clear()

    def hold_response(
        self, route: str, *, when: Callable[[RequestRecord], bool] | None = None, after: int = 0
    ) -> HeldResponse:
        """Keep back the answer to the next request to ``route`` that ``when`` accepts (any, when
        None), once ``after`` of them have gone through: the request is carried out and recorded,
        and only its response waits until ``release()`` (or the fake stops).  ``taken(timeout)``
        waits for that request, e.g. to kill the bot while it waits for the answer."""
        self._check_route(route)
        accepts = when or (lambda _: True)
        hold = HeldResponse(
            self._ctx.changes, lambda record: record.key == route and accepts(record), after
        )
        self._ctx.holds.add(hold)
        return hold

    def _check_route(self, route: str) -> None:
        if route not in self.routes():
            known = "\n  ".join(sorted(self.routes()))
            raise ValueError(f"no route {route!r}; the fake serves:\n  {known}")
