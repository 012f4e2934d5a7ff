"""``system.query`` reads the same rows on SQLite and PostgreSQL, so a system test's assertions
hold on both backends (tests/system/database.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import Guild
from tests.system.database import SQLITE_TIMESTAMP, SystemDatabase


async def test_rows_come_back_in_sqlite_shapes(engine: AsyncEngine, database_url: str) -> None:
    moment = datetime.now(UTC).replace(microsecond=123456)
    async with make_sessionmaker(engine)() as session, session.begin():
        session.add(Guild(id=7, timezone="Asia/Tokyo", schedule_start=moment.date()))
        session.add(Guild(id=8, timezone="Asia/Tokyo", created_at=moment))
    db = SystemDatabase(database_url)
    try:
        rows = db.query(
            "SELECT created_at, schedule_start, schedule_start IS NULL, 'who? \"me?\"' "
            "FROM guilds WHERE timezone = ? AND id = ?",
            "Asia/Tokyo",
            8,
        )
        (total,) = db.query("SELECT SUM(id) FROM guilds WHERE timezone = ?", "Asia/Tokyo")
        (day,) = db.query("SELECT schedule_start FROM guilds WHERE id = ?", 7)
    finally:
        db.close()
    naive_utc = moment.replace(tzinfo=None).strftime(SQLITE_TIMESTAMP)
    assert rows == [(naive_utc, None, 1, 'who? "me?"')]
    assert type(rows[0][2]) is int  # a boolean, as SQLite has it
    assert total == (15,) and type(total[0]) is int  # SUM of a BIGINT: numeric on PostgreSQL
    assert day == (moment.date().isoformat(),)
