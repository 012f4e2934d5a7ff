"""The websocket gateway: HELLO, IDENTIFY/READY, heartbeats, RESUME with replay, dispatch.

Frames are plain JSON text: discord.py asks for ``compress=zlib-stream`` but
reads text frames as they are. Every dispatch is kept in the session's backlog
so a client that RESUMEs after a drop gets what it missed, as with Discord.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from fakediscord.changes import Changes
from fakediscord.entities import Guild
from fakediscord.fake_time import FakeClock
from fakediscord.world import World

DISPATCH = 0
HEARTBEAT = 1
IDENTIFY = 2
PRESENCE_UPDATE = 3
VOICE_STATE_UPDATE = 4
RESUME = 6
RECONNECT = 7
REQUEST_GUILD_MEMBERS = 8
INVALID_SESSION = 9
HELLO = 10
HEARTBEAT_ACK = 11

GUILDS = 1 << 0
GUILD_MEMBERS = 1 << 1
GUILD_PRESENCES = 1 << 8
GUILD_MESSAGES = 1 << 9
DIRECT_MESSAGES = 1 << 12
MESSAGE_CONTENT = 1 << 15
PRIVILEGED = GUILD_MEMBERS | GUILD_PRESENCES | MESSAGE_CONTENT

UNKNOWN_OPCODE = 4001
DECODE_ERROR = 4002
NOT_AUTHENTICATED = 4003
AUTHENTICATION_FAILED = 4004
ALREADY_AUTHENTICATED = 4005
INVALID_API_VERSION = 4012
DISALLOWED_INTENTS = 4014


@dataclass
class Session:
    id: str
    intents: int
    #: the IDENTIFY payload, token removed
    identify: dict[str, Any]
    seq: int = 0
    backlog: list[tuple[int, str]] = field(default_factory=list)
    socket: web.WebSocketResponse | None = None
    #: False once invalidated: RESUME is refused and the client must IDENTIFY again
    resumable: bool = True


@dataclass(frozen=True)
class Connection:
    """One websocket connection and how it ended up: identified, resumed, refused..."""

    path: str
    outcome: str


class Gateway:
    def __init__(
        self,
        world: World,
        clock: FakeClock,
        changes: Changes,
        *,
        token: str,
        heartbeat_interval: float,
        allowed_privileged: int,
        crashes: list[Exception],
    ) -> None:
        self._world = world
        self._clock = clock
        self._changes = changes
        self._token = token
        self._heartbeat_ms = int(heartbeat_interval * 1000)
        self._allowed_privileged = allowed_privileged
        self._crashes = crashes
        self._lock = asyncio.Lock()
        self._transports: dict[web.WebSocketResponse, asyncio.BaseTransport] = {}
        self.session: Session | None = None
        self.connections: list[Connection] = []
        self.heartbeats = 0
        #: set by the server once it knows its port
        self.connect_url = ""
        self.resume_url = ""

    @property
    def connected(self) -> bool:
        return self.session is not None and self.session.socket is not None

    @property
    def bot_id(self) -> int:
        return self._world.bot.id

    def content_reader(self, intents: int) -> int | None:
        """Who reads message content with ``intents``: None (everything) with the Message
        Content intent, else the bot's id, so others' messages arrive emptied."""
        return None if intents & MESSAGE_CONTENT else self._world.bot.id

    @property
    def rest_reader(self) -> int | None:
        """REST follows the app's portal switch, not what a session asked for."""
        return self.content_reader(self._allowed_privileged)

    @property
    def live_reader(self) -> int | None:
        """The current session's view of message content (REST's when there is none)."""
        session = self.session
        return self.rest_reader if session is None else self.content_reader(session.intents)

    def dispatched(self, event: str) -> list[dict[str, Any]]:
        """The data of every ``event`` sent to the current session, oldest first."""
        if self.session is None:
            return []
        frames = (json.loads(frame) for _, frame in self.session.backlog)
        return [f["d"] for f in frames if f["t"] == event]

    # the socket

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse(max_msg_size=0)
        await socket.prepare(request)
        if request.transport is not None:
            self._transports[socket] = request.transport
        try:
            await self._converse(socket, request)
        except Exception as error:
            self._crashes.append(error)
            raise
        finally:
            self._transports.pop(socket, None)
            if self.session is not None and self.session.socket is socket:
                self.session.socket = None
                self._changes.bump()
        return socket

    async def _converse(self, socket: web.WebSocketResponse, request: web.Request) -> None:
        if request.query.get("v") != "10":
            await self._refuse(socket, request, INVALID_API_VERSION, "Invalid API version.")
            return
        if request.query.get("encoding", "json") != "json":
            await self._refuse(socket, request, DECODE_ERROR, "Only encoding=json is served.")
            return
        await _send(socket, {"op": HELLO, "d": {"heartbeat_interval": self._heartbeat_ms}})
        session: Session | None = None
        async for message in socket:
            if message.type is not WSMsgType.TEXT:
                break
            try:
                frame = json.loads(message.data)
                op, data = frame["op"], frame.get("d")
            except (ValueError, KeyError, TypeError):
                await self._refuse(socket, request, DECODE_ERROR, "Error while decoding payload.")
                return
            if op == HEARTBEAT:
                self.heartbeats += 1
                await _send(socket, {"op": HEARTBEAT_ACK, "d": None})
            elif op == IDENTIFY and session is None:
                session = await self._identify(socket, request, data)
            elif op == RESUME and session is None:
                session = await self._resume(socket, request, data)
            elif op in (IDENTIFY, RESUME):
                await self._refuse(socket, request, ALREADY_AUTHENTICATED, "Already authenticated.")
            elif session is None:
                await self._refuse(socket, request, NOT_AUTHENTICATED, "Not authenticated.")
            elif op == REQUEST_GUILD_MEMBERS:
                await self._send_member_chunk(session, data)
            elif op not in (PRESENCE_UPDATE, VOICE_STATE_UPDATE):
                await self._refuse(socket, request, UNKNOWN_OPCODE, "Unknown opcode.")

    async def _refuse(
        self, socket: web.WebSocketResponse, request: web.Request, code: int, reason: str
    ) -> None:
        self.connections.append(Connection(request.path, f"closed {code}"))
        await socket.close(code=code, message=reason.encode())

    async def _identify(
        self, socket: web.WebSocketResponse, request: web.Request, data: Any
    ) -> Session | None:
        if not isinstance(data, dict) or data.get("token") != self._token:
            await self._refuse(socket, request, AUTHENTICATION_FAILED, "Authentication failed.")
            return None
        intents = int(data.get("intents", 0))
        if intents & PRIVILEGED & ~self._allowed_privileged:
            await self._refuse(socket, request, DISALLOWED_INTENTS, "Disallowed intent(s).")
            return None
        identify = {k: v for k, v in data.items() if k != "token"}
        session = Session(id=secrets.token_hex(16), intents=intents, identify=identify)
        async with self._lock:
            if self.session is not None:
                self.session.resumable = False
            self.session = session
            session.socket = socket
            await self._emit(session, "READY", self._ready_payload(session))
            for guild in self._guilds_of(session):
                payload = guild.create_payload(
                    self._clock.iso(),
                    all_members=bool(intents & GUILD_MEMBERS),
                    bot_id=self._world.bot.id,
                )
                await self._emit(session, "GUILD_CREATE", payload)
        self.connections.append(Connection(request.path, "identified"))
        self._changes.bump()
        return session

    def _guilds_of(self, session: Session) -> list[Guild]:
        """The guilds on this session's shard: ``(guild_id >> 22) % shard_count``."""
        shard_id, shard_count = session.identify.get("shard") or (0, 1)
        return [g for g in self._world.guilds.values() if (g.id >> 22) % shard_count == shard_id]

    def _ready_payload(self, session: Session) -> dict[str, Any]:
        application = self._world.application
        user = {**self._world.bot.payload(), "verified": True, "mfa_enabled": False}
        guilds = [{"id": str(g.id), "unavailable": True} for g in self._guilds_of(session)]
        ready: dict[str, Any] = {
            "v": 10,
            "user": user,
            "guilds": guilds,
            "session_id": session.id,
            "session_type": "normal",
            "resume_gateway_url": self.resume_url,
            "application": {"id": str(application.id), "flags": application.flags},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "auth": {},
            "user_settings": {},
        }
        if "shard" in session.identify:
            ready["shard"] = session.identify["shard"]
        return ready

    async def _resume(
        self, socket: web.WebSocketResponse, request: web.Request, data: Any
    ) -> Session | None:
        session = self.session
        fits = (
            isinstance(data, dict)
            and session is not None
            and session.resumable
            and data.get("session_id") == session.id
            and data.get("token") == self._token
        )
        if not fits or session is None:
            # The client closes and IDENTIFYs afresh, as Discord expects.
            self.connections.append(Connection(request.path, "invalid session"))
            await _send(socket, {"op": INVALID_SESSION, "d": False})
            return None
        last_seen = int(data.get("seq") or 0)
        async with self._lock:
            session.socket = socket
            for seq, frame in session.backlog:
                if seq > last_seen:
                    await socket.send_str(frame)
            await self._emit(session, "RESUMED", {})
        self.connections.append(Connection(request.path, "resumed"))
        self._changes.bump()
        return session

    async def _send_member_chunk(self, session: Session, data: Any) -> None:
        guild = self._world.guilds.get(int(data.get("guild_id", 0)))
        if guild is None:
            return
        query = str(data.get("query") or "").lower()
        wanted = {int(u) for u in data.get("user_ids") or []}
        limit = int(data.get("limit") or 0)
        members = [
            m
            for m in guild.members.values()
            if m.user.username.lower().startswith(query) and (not wanted or m.user.id in wanted)
        ]
        if limit:
            members = members[:limit]
        found = {m.user.id for m in members}
        chunk = {
            "guild_id": str(guild.id),
            "members": [m.payload() for m in members],
            "chunk_index": 0,
            "chunk_count": 1,
            "not_found": [str(u) for u in wanted - found],
        }
        if data.get("nonce"):
            chunk["nonce"] = data["nonce"]
        async with self._lock:
            await self._emit(session, "GUILD_MEMBERS_CHUNK", chunk)

    # dispatching

    async def publish(self, event: str, data: dict[str, Any], intent: int | None = None) -> None:
        """Dispatch to the current session (kept for replay while it is disconnected).

        Events that need an intent the bot did not ask for are not sent, as on Discord.
        """
        session = self.session
        if session is None or not session.resumable:
            return
        if intent is not None and not session.intents & intent:
            return
        async with self._lock:
            await self._emit(session, event, data)

    async def _emit(self, session: Session, event: str, data: dict[str, Any]) -> None:
        """Send one dispatch; the caller holds the lock so sequence numbers go out in order."""
        session.seq += 1
        frame = json.dumps({"op": DISPATCH, "t": event, "s": session.seq, "d": data})
        session.backlog.append((session.seq, frame))
        socket = session.socket
        if socket is None or socket.closed:
            return
        try:
            await socket.send_str(frame)
        except ConnectionError:
            session.socket = None

    # faults a test can cause

    async def drop(self, close_code: int | None = None, *, resumable: bool = True) -> None:
        """Cut the connection: a TCP reset by default, or a close frame with ``close_code``.

        With ``resumable=False`` the session is lost too, so the client's RESUME gets op 9.
        """
        async with self._lock:
            socket = self._current_socket()
            if not resumable and self.session is not None:
                self.session.resumable = False
            if close_code is None:
                self._transports[socket].abort()
            else:
                await socket.close(code=close_code, message=b"dropped by test")

    async def request_reconnect(self) -> None:
        """Op 7: Discord asks the client to reconnect and RESUME."""
        async with self._lock:
            await _send(self._current_socket(), {"op": RECONNECT, "d": None})

    async def invalidate_session(self, *, resumable: bool) -> None:
        """Op 9; with ``resumable=False`` the client must IDENTIFY again and gets a new READY."""
        async with self._lock:
            socket = self._current_socket()
            if not resumable and self.session is not None:
                self.session.resumable = False
            await _send(socket, {"op": INVALID_SESSION, "d": resumable})

    def _current_socket(self) -> web.WebSocketResponse:
        if self.session is None or self.session.socket is None:
            raise RuntimeError("no client is connected to the gateway")
        return self.session.socket

    async def close_all(self) -> None:
        for socket in list(self._transports):
            await socket.close(code=1001, message=b"server stopping")


async def _send(socket: web.WebSocketResponse, frame: dict[str, Any]) -> None:
    await socket.send_str(json.dumps(frame))
