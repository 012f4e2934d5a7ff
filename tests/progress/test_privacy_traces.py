"""After ``/privacy delete`` and the role sync that takes back the member's roles, the member's
Discord user id (and name) is nowhere in the database: not in any column on PostgreSQL, not in
the bytes of the SQLite file or its write-ahead log, in any encoding SQLite could store it in."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Text, cast, column, func, or_, select, table
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.db.engine import sqlite_path
from bot.db.models import AuditEntry, RoleGrant, RoleSync, SpeedRecord, WeeklyChampion
from bot.progress import privacy
from bot.progress.grants import grant
from bot.progress.level_roles import add_level_role
from bot.progress.periods import week_key
from bot.progress.role_sync import DrainResult, drain
from bot.rest_api import tokens
from graders.base import SPEED_INSTRUMENT
from tests.progress.test_privacy import NOW, delete, submit
from tests.progress.world import BERLIN, GUILD_ID, World

NAME = "Ada Lovelace-Byron"


def snowflake() -> int:
    """A random id shaped like a real Discord one (19 digits, below 2**63): it matches nothing
    else by chance."""
    return 2**60 + secrets.randbelow(2**62)


@dataclass
class Discord:
    """The role writes Discord accepts: who holds which role."""

    roles: dict[int, set[int]] = field(default_factory=dict)

    async def add(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
        self.roles.setdefault(user_id, set()).add(role_id)

    async def remove(self, guild_id: int, user_id: int, role_id: int, reason: str) -> None:
        self.roles[user_id].discard(role_id)


@dataclass
class Store:
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]


def sqlite_encodings(number: int) -> dict[str, bytes]:
    """``number`` as decimal text and as the integers SQLite stores: big-endian two's
    complement in the fewest of 1, 2, 3, 4, 6 or 8 bytes; and little-endian, for good measure."""
    size = next(n for n in (1, 2, 3, 4, 6, 8) if -(2 ** (8 * n - 1)) <= number < 2 ** (8 * n - 1))
    return {
        "decimal": str(number).encode(),
        "8-byte big-endian": number.to_bytes(8, "big", signed=True),
        "8-byte little-endian": number.to_bytes(8, "little", signed=True),
        f"{size}-byte big-endian (SQLite's)": number.to_bytes(size, "big", signed=True),
    }


def file_hits(engine: AsyncEngine, needles: dict[str, bytes]) -> dict[str, int]:
    """How often each needle occurs in the SQLite file and its WAL (those found only)."""
    database = sqlite_path(engine.url)
    assert database is not None
    wal = Path(f"{database}-wal")
    stored = database.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    counts = {name: stored.count(needle) for name, needle in needles.items()}
    return {name: count for name, count in counts.items() if count}


async def column_hits(engine: AsyncEngine, needles: list[str]) -> set[tuple[str, str]]:
    """Every (table, column) of the schema with a value that, cast to text, holds a needle."""
    columns = table(
        "columns",
        column("table_schema"),
        column("table_name"),
        column("column_name"),
        schema="information_schema",
    )
    hits: set[tuple[str, str]] = set()
    async with engine.connect() as connection:
        names = await connection.execute(
            select(columns.c.table_name, columns.c.column_name).where(
                columns.c.table_schema == func.current_schema()
            )
        )
        for table_name, column_name in names.all():
            value = cast(column(column_name), Text)
            found = await connection.scalar(
                select(func.count())
                .select_from(table(table_name, column(column_name)))
                .where(or_(*(value.contains(needle) for needle in needles)))
            )
            if found:
                hits.add((table_name, column_name))
    return hits


async def traces(engine: AsyncEngine, number: int, *texts: str) -> object:
    """Where ``number`` (or one of ``texts``) is stored: the encodings found in the SQLite
    file's bytes, or the PostgreSQL columns holding it as text, or (``bytea`` casts to hex) as
    the hex of its text or of its 8 bytes."""
    if engine.dialect.name == "sqlite":
        needles = {**sqlite_encodings(number), **{text: text.encode() for text in texts}}
        return file_hits(engine, needles)
    words = [str(number), *texts]
    raw = [number.to_bytes(8, "big"), number.to_bytes(8, "little")]
    return await column_hits(
        engine, [*words, *(word.encode().hex() for word in words), *(b.hex() for b in raw)]
    )


async def test_no_trace_of_a_deleted_member_once_the_role_sync_ran(
    engine: AsyncEngine, world: World
) -> None:
    user, moderator, role = snowflake(), snowflake(), snowflake()
    print(f"user id {user}, moderator {moderator}, role {role} ({engine.dialect.name})")
    async with world.sessions() as session, session.begin():
        await add_level_role(
            session, guild_id=GUILD_ID, level=2, role_id=role, actor_user_id=moderator, now=NOW
        )
    member = await world.member(user, NAME)
    async with world.sessions() as session, session.begin():  # a moderator's grant, audited
        await grant(
            session,
            guild_id=GUILD_ID,
            member_id=member,
            amount=120,
            reason="helping in #help",
            actor_user_id=moderator,
            request_id=snowflake(),
            tz=BERLIN,
            now=NOW,
        )
        await tokens.issue(session, GUILD_ID, user, NAME, NOW)
        assert await tokens.revoke_for_moderator(
            session, GUILD_ID, user, actor_user_id=moderator, now=NOW
        )
        # how /admin token-revoke named its target before it wrote ``user:``
        session.add(
            AuditEntry(
                guild_id=GUILD_ID, actor_user_id=moderator, action="token-revoke", target=str(user)
            )
        )
        last_week = week_key((NOW - timedelta(days=7)).astimezone(BERLIN).date())
        session.add(WeeklyChampion(guild_id=GUILD_ID, period=last_week, user_id=user))
    code = f"# {user}'s own matmul\ndef matmul(a, b):\n    return a @ b\n".encode()
    submission = await submit(world, member, code)
    async with world.sessions() as session, session.begin():
        session.add(_speed_record(member, submission))
    discord = Discord()
    store = Store(engine, world.sessions)
    assert (await drain(store, discord, now=lambda: NOW)).added == 1
    assert discord.roles[user] == {role}
    async with world.sessions() as session:
        assert (await session.execute(select(RoleGrant.user_id))).scalars().all() == [user]

    before = await traces(engine, user, NAME)
    print("before the deletion:", before)
    assert before  # the search sees the id while it is kept, so an empty result means gone

    print("ATTACK: search the whole database for the deleted member's user id")
    await delete(world, user)
    async with world.sessions() as session:  # the role sync still needs the id to take back
        assert (await session.execute(select(RoleSync.user_id))).scalars().all() == [user]
    if engine.dialect.name != "sqlite":
        kept = await traces(engine, user, NAME)
        print("after the deletion, before the role sync:", kept)
        assert kept == {("role_grants", "user_id"), ("role_sync_queue", "user_id")}

    later = NOW + timedelta(seconds=1)
    result = await drain(store, discord, now=lambda: later)
    assert result == DrainResult(synced=1, removed=1, forgotten=1)
    assert discord.roles[user] == set()  # the role went back, in Discord

    after = await traces(engine, user, NAME)
    print("after the role sync:", after)
    assert not after
    # the moderator's own id stays, as the actor of what they did (and the search finds it)
    assert await traces(engine, moderator)
    async with world.sessions() as session:
        audited = (await session.execute(select(AuditEntry.action, AuditEntry.target))).all()
    assert sorted(audited) == sorted(
        [
            ("level_role.add", f"role:{role}"),
            ("xp.grant", f"member:{member}"),
            ("token-revoke", f"member:{member}"),
            ("token-revoke", f"member:{member}"),  # the one that named a bare id
            ("privacy-delete", "member data"),
        ]
    )


async def test_a_deletion_names_the_anonymised_row_in_the_audit_rows_about_the_member(
    world: World,
) -> None:
    user, other = snowflake(), snowflake()
    ada, bob = await world.member(user, "Ada"), await world.member(other, "Bob")
    for member in (ada, bob):
        await world.grant(member, 50, NOW)
    await delete(world, user)
    async with world.sessions() as session:
        rows = (
            await session.execute(
                select(AuditEntry.action, AuditEntry.target, AuditEntry.details).order_by(
                    AuditEntry.id
                )
            )
        ).all()
    grants = [(target, info["member_id"]) for action, target, info in rows if action == "xp.grant"]
    # ada's names her anonymised row; bob's still names bob
    assert grants == [(f"member:{ada}", ada), (f"user:{other}", bob)]


def _speed_record(member_id: int, submission_id: int) -> SpeedRecord:
    return SpeedRecord(
        guild_id=GUILD_ID,
        member_id=member_id,
        submission_id=submission_id,
        task_ref="q1/build",
        device="cpu",
        ratio=1.5,
        learner_s=0.2,
        reference_s=0.3,
        spread=0.05,
        pairs=21,
        instrument=SPEED_INSTRUMENT,
        board_ratio=1.4,
    )


async def test_a_deletion_takes_only_the_members_speed_records(world: World) -> None:
    ada_user = snowflake()
    ada, bob = await world.member(ada_user, NAME), await world.member(snowflake(), "Bob")
    ada_submission = await submit(world, ada, b"print('ada')\n")
    bob_submission = await submit(world, bob, b"print('bob')\n")
    async with world.sessions() as session, session.begin():
        session.add_all([_speed_record(ada, ada_submission), _speed_record(bob, bob_submission)])
    await delete(world, ada_user)
    async with world.sessions() as session:
        kept = (await session.execute(select(SpeedRecord.member_id))).scalars().all()
    assert kept == [bob]


async def test_a_deletion_of_a_member_with_nothing_kept_counts_zeros(world: World) -> None:
    """Found, but no submission, job or ledger row: each count is 0, not a default."""
    user = snowflake()
    await world.member(user, NAME)
    assert await delete(world, user) == privacy.Deletion(
        found=True, submissions=0, grading_jobs=0, ledger_rows_anonymised=0
    )
