"""A seeded study group with public pages, and the pages served from it on a free port.

The server: 61 listed members with distinct XP (two pages of 50), one whose name is an HTML
tag and one written right to left; a hidden member and an anonymised one with more XP than
anyone (on no page); three speed results of a shipped speed-ranked task, with roofline figures;
two level roles.  Every fact the tests check is kept here as it was written, not read back
through the code under test.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.db.engine import make_sessionmaker
from bot.db.models import Guild, Submission
from bot.http.server import listening
from bot.progress import privacy
from bot.progress.level_roles import add_level_role
from bot.progress.members import ensure_member
from bot.progress.speed_results import record_speed
from bot.services import Services
from bot.web.site import make_site
from graders.base import SPEED_INSTRUMENT, Check, SpeedResult, Verdict
from tests import timeline
from tests.progress.world import GUILD_ID, UTC_ZONE, World
from tests.support import seed_content

SCRIPT_NAME = '<script>alert("owned")</script>'
RTL_NAME = "مريم الحسن"
HIDDEN_NAME = "Hidden Hugo"
DELETED_NAME = "Deleted Dora"
SPEED_TASK = "transformer-internals/stable-softmax"
DEVICE = "AMD EPYC 7B13"
SERVER_NAME = "Kernel Club"
ROLE_NAMES = {7001: "Warp Novice", 7002: "Tensor Adept"}
LEVEL_ROLES = {2: 7001, 5: 7002}  # level -> role id


@dataclass
class Listed:
    user_id: int
    name: str
    xp: int  # all time
    week_xp: int


@dataclass
class SpeedRow:
    user_id: int
    name: str
    ratio: float
    board_ratio: float
    learner_s: float


@dataclass
class Seeded:
    guild_id: int
    now: datetime
    listed: list[Listed]
    hidden_user: int
    deleted_user: int
    speed: list[SpeedRow]  # best first
    other_guild: int  # a server that never opted in, with a member of its own
    other_user: int = 0
    names: dict[int, str] = field(default_factory=dict)

    def by_xp(self) -> list[Listed]:
        """The all-time order, computed here: more XP first (all XP values are distinct)."""
        return sorted(self.listed, key=lambda m: -m.xp)


class Names:
    """The fake Discord cache: a server's name and its roles'."""

    def guild_name(self, guild_id: int) -> str | None:
        return SERVER_NAME if guild_id == GUILD_ID else None

    def role_name(self, guild_id: int, role_id: int) -> str | None:
        return ROLE_NAMES.get(role_id) if guild_id == GUILD_ID else None


def speed_result(ratio: float) -> SpeedResult:
    """A trial at ``ratio`` on ``DEVICE``, its roofline figures scaled by it."""
    return SpeedResult(
        ratio=ratio,
        learner_s=0.002 / ratio,
        reference_s=0.002,
        spread=0.03,
        pairs=50,
        device=DEVICE,
        instrument=SPEED_INSTRUMENT,
        board_ratio=ratio * 0.9,
        achieved_gbs=10.0 * ratio,
        peak_gbs=29.1,
        reference_gbs=10.0,
        moved_bytes=8_388_608,
        flops=10_485_760,
        achieved_gflops=5.0 * ratio,
        reference_gflops=5.0,
        peak_gflops=97.4,
    )


async def store_speed_result(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    speed: SpeedResult,
    tag: int,
    now: datetime,
) -> None:
    """A passed submission of ``SPEED_TASK`` with ``speed``, stored as grading stores it.

    Shared with ``bench/web_pages.py``, so the bench's pages show the results these tests
    check; ``tag`` tells the code of one submission from another's.
    """
    code = f"def softmax(x): return x.softmax(-1)  # {tag}\n".encode()
    verdict = Verdict(SPEED_TASK, "passed", 1.0, (Check("correct", True, "ok"),), "", speed=speed)
    row = Submission(
        guild_id=guild_id,
        member_id=member_id,
        task_ref=SPEED_TASK,
        filename="solution.py",
        file_kind="py",
        content=code,
        size_bytes=len(code),
        sha256=hashlib.sha256(code).hexdigest(),
        status="passed",
        score=1.0,
        verdict=verdict.to_json(),
        finished_at=now,
    )
    session.add(row)
    await session.flush()
    await record_speed(
        session,
        guild_id=guild_id,
        member_id=member_id,
        submission_id=row.id,
        task_ref=SPEED_TASK,
        speed=speed,
        submitted_at=now,
        now=now,
    )


async def _speed(world: World, member_id: int, ratio: float, now: datetime) -> None:
    async with world.sessions() as session, session.begin():
        await store_speed_result(
            session,
            guild_id=GUILD_ID,
            member_id=member_id,
            speed=speed_result(ratio),
            tag=member_id,
            now=now,
        )


async def seed(sessions: async_sessionmaker[AsyncSession], *, now: datetime) -> Seeded:
    world = World(sessions, tz=UTC_ZONE)
    async with sessions() as session, session.begin():
        session.add(Guild(id=GUILD_ID, quest_channel_id=1, timezone="UTC", web_pages=True))
        session.add(Guild(id=GUILD_ID + 1, quest_channel_id=2, timezone="UTC", web_pages=False))
    listed: list[Listed] = []
    names = [f"Learner {i:02d}" for i in range(59)] + [SCRIPT_NAME, RTL_NAME]
    old = now - timedelta(days=70)  # another week and month: all time only
    for i, name in enumerate(names):
        user_id = 5000 + i
        member_id = await world.member(user_id, name)
        week = 1200 - 17 * i
        await world.grant(member_id, week, now)
        extra = 0
        if i % 7 == 3:
            extra = 40 + i
            await world.grant(member_id, extra, old)
        listed.append(Listed(user_id, name, week + extra, week))
    hidden = await world.member(9001, HIDDEN_NAME)
    await world.grant(hidden, 50_000, now)
    deleted = await world.member(9002, DELETED_NAME)
    await world.grant(deleted, 40_000, now)
    async with sessions() as session, session.begin():
        await privacy.hide(session, guild_id=GUILD_ID, user_id=9001, display_name=HIDDEN_NAME)
        await privacy.delete_member_data(session, guild_id=GUILD_ID, user_id=9002, now=now)
        for level, role_id in LEVEL_ROLES.items():
            await add_level_role(
                session, guild_id=GUILD_ID, level=level, role_id=role_id, actor_user_id=1, now=now
            )
    speed = []
    for user_id, ratio in ((5002, 2.5), (5000, 1.6), (5059, 1.2)):  # 5059: the <script> name
        name = next(m.name for m in listed if m.user_id == user_id)
        member_id = await world.member(user_id, name)
        await _speed(world, member_id, ratio, now - timedelta(hours=1))
        speed.append(SpeedRow(user_id, name, ratio, ratio * 0.9, 0.002 / ratio))
    await _speed(world, hidden, 9.0, now - timedelta(hours=1))  # hidden: on no board
    other_world_member = 6000
    async with sessions() as session, session.begin():
        await ensure_member(session, GUILD_ID + 1, other_world_member, "Elsewhere Eve")
    return Seeded(GUILD_ID, now, listed, 9001, 9002, speed, GUILD_ID + 1, other_world_member)


def services(engine: AsyncEngine) -> Services:
    return Services(
        Settings(_env_file=None),  # type: ignore[call-arg]
        seed_content(),
        engine,
        make_sessionmaker(engine),
        make_sessionmaker(engine, read_only=True),
    )


@contextlib.asynccontextmanager
async def serving(engine: AsyncEngine) -> AsyncIterator[str]:
    """The pages of the seeded database on a free port: yields the base URL."""
    async with listening(make_site(services(engine), Names()), "127.0.0.1", 0) as port:
        yield f"http://127.0.0.1:{port}"


def now() -> datetime:
    """Wednesday noon (UTC) of the week after the real now: inside one week and one month."""
    monday = timeline.monday_after(timeline.now(), days=7)
    return monday + timedelta(days=2, hours=12)
