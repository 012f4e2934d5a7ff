"""A level role backfilled to 10,000 members, through the loopback fake Discord's role bucket.

Run: .venv/bin/python -m bench.role_backfill [--members 10000] [--limit 10] [--window 0.25]

Seeds a database with ``--members`` members at level 2 (60 XP each, ledger and totals
consistent), starts the real bot (``brrrbot run --no-workers``) against the project's fake
Discord, whose per-server bucket for member role writes allows ``--limit`` requests per
``--window`` seconds (answering 429 beyond it, with Discord's headers), then runs
``/admin roles add level:2`` and measures until every member holds the role on the fake.

Reports the time, the requests, the 429s (a 429 is a request made beyond the bucket), the
achieved rate against the bucket's, and the time the same backfill takes at Discord's own
pace (``--real-limit`` per ``--real-window``), extrapolated from the bucket-bound rate.
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from sqlalchemy import insert

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Guild, Member, XpEntry
from bot.progress.totals import rebuild_totals
from fakediscord import FakeDiscord, Permission
from fakediscord import Guild as FakeGuild
from fakediscord.process import BotProcess
from fakediscord.ratelimits import MEMBER_ROLE, RateLimitPolicy

REPO = Path(__file__).resolve().parent.parent
XP_EACH = 60  # level 2 starts at 50
PROGRESS_EVERY_S = 30.0


async def seed(database_url: str, guild_id: int, user_ids: list[int]) -> None:
    """Members with ``XP_EACH`` XP each, as the ledger and the derived totals hold them."""
    engine = make_engine(database_url)
    await migrate.upgrade(engine)
    sessions = make_sessionmaker(engine)
    earned = datetime.now(UTC) - timedelta(days=1)
    async with sessions() as session, session.begin():
        await session.execute(insert(Guild).values(id=guild_id))
        await session.execute(
            insert(Member),
            [{"guild_id": guild_id, "user_id": u, "display_name": f"m{u}"} for u in user_ids],
        )
        await session.execute(
            insert(XpEntry),
            [
                {
                    "guild_id": guild_id,
                    "member_id": number,
                    "amount": XP_EACH,
                    "reason": "bench",
                    "source": "admin",
                    "reference": None,
                    "idempotency_key": f"bench:{number}",
                    "created_at": earned,
                }
                for number in range(1, len(user_ids) + 1)
            ],
        )
        await rebuild_totals(session, guild_id=guild_id, tz=ZoneInfo("UTC"))
    await engine.dispose()


async def main(members: int, bucket: RateLimitPolicy, real: RateLimitPolicy) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="brrrbot-bench-roles-"))
    database_url = f"sqlite+aiosqlite:///{workdir / 'brrrbot.sqlite3'}"
    fake = FakeDiscord(heartbeat_interval=5.0, role_write_limit=bucket)
    guild = fake.add_guild("bench")
    channel = fake.add_channel(guild, "quests")
    owner = fake.add_user("owner")
    admins = fake.add_role(guild, "admins", permissions=Permission.MANAGE_GUILD)
    fake.add_member(guild, owner, roles=[admins])
    mine = fake.bot_role(guild)  # dragged above the level role, with Manage Roles
    mine.position, mine.permissions = 10, mine.permissions | Permission.MANAGE_ROLES
    level_role = fake.add_role(guild, "level 2", position=2)
    users = [fake.add_user(f"learner{n}") for n in range(members)]
    for user in users:
        fake.add_member(guild, user)
    started = time.monotonic()
    await seed(database_url, guild.id, [u.id for u in users])
    print(f"seeded {members:,} members at level 2 in {time.monotonic() - started:.1f} s")
    env = {
        "DISCORD_TOKEN": fake.token,
        "DATABASE_URL": database_url,
        "QUESTS_DIR": str(REPO / "quests"),
        "LOG_LEVEL": "WARNING",
        "HTTP_PORT": "0",
    }
    async with fake, BotProcess(fake.urls, ["run", "--no-workers"], env=env, cwd=workdir):
        await fake.wait_until_connected(timeout=60)
        await asyncio.sleep(4)  # on_ready follows the last GUILD_CREATE by about 2 s
        holders = level_role_holders(guild, level_role.id)
        t0 = time.monotonic()
        handle = await fake.invoke_slash(
            guild, channel, owner, "admin roles add", options={"level": 2, "role": level_role}
        )
        reply = await handle.original(timeout=30)
        print(f"reply after {time.monotonic() - t0:.2f} s: {reply.content}")
        next_report = t0 + PROGRESS_EVERY_S
        while (done := holders()) < members:
            await asyncio.sleep(1.0)
            if time.monotonic() >= next_report:
                elapsed = time.monotonic() - t0
                print(f"  {elapsed:6.0f} s: {done:,} of {members:,} hold the role")
                next_report += PROGRESS_EVERY_S
        elapsed = time.monotonic() - t0
    report(fake, members, elapsed, bucket, real)


def level_role_holders(guild: FakeGuild, role_id: int) -> Callable[[], int]:
    def count() -> int:
        return sum(role_id in member.role_ids for member in guild.members.values())

    return count


def report(
    fake: FakeDiscord,
    members: int,
    elapsed: float,
    bucket: RateLimitPolicy,
    real: RateLimitPolicy,
) -> None:
    writes = [r for r in fake.requests if r.route == MEMBER_ROLE]
    statuses = Counter(r.status for r in writes)
    first, last = min(r.at for r in writes), max(r.at for r in writes)
    bucket_rate = bucket.limit / bucket.window
    achieved = statuses[204] / (last - first) if last > first else float("inf")
    real_rate = real.limit / real.window
    print()
    print(f"members holding the role: {members:,}, all of them")
    print(f"time from /admin roles add to the last role: {elapsed:.1f} s")
    print(f"role write requests: {len(writes):,} ({dict(sorted(statuses.items()))})")
    print(f"429s (requests beyond the bucket): {statuses[429]}")
    print(
        f"bucket: {bucket.limit} per {bucket.window} s = {bucket_rate:.0f}/s; "
        f"achieved {achieved:.1f}/s ({achieved / bucket_rate:.0%} of the bucket)"
    )
    extrapolated = members / real_rate / (achieved / bucket_rate)
    print(
        f"at Discord's pace ({real.limit} per {real.window:.0f} s = {real_rate:.1f}/s) the same "
        f"backfill takes about {extrapolated / 3600:.1f} h ({extrapolated:,.0f} s)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10_000)
    parser.add_argument("--limit", type=int, default=10, help="role writes per window")
    parser.add_argument("--window", type=float, default=0.25, help="seconds")
    parser.add_argument("--real-limit", type=int, default=10)
    parser.add_argument("--real-window", type=float, default=10.0)
    options = parser.parse_args()
    asyncio.run(
        main(
            options.members,
            RateLimitPolicy(options.limit, options.window),
            RateLimitPolicy(options.real_limit, options.real_window),
        )
    )
