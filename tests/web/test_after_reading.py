"""A run submitted after its member read the shared solutions is marked on the public pages and
sits below every run made before.  (Its own seeded server: the mark set here touches no other
module's pages.)"""

from __future__ import annotations

import pytest
from sqlalchemy import select, update

from bot.db.engine import make_sessionmaker
from bot.db.models import Member, SpeedRecord
from tests.web.conftest import Site
from tests.web.seeded import SPEED_TASK
from tests.web.test_pages import get, rows

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOTE = "📖 after reading: submitted after its member read this task's shared solutions."


async def test_a_run_after_reading_is_marked_and_ranked_below_the_rest(site: Site) -> None:
    best = site.seeded.speed[0]  # the board's first
    _, before, _ = await get(site, f"/speed/{SPEED_TASK}")
    assert "📖" not in before and NOTE not in before
    async with make_sessionmaker(site.engine)() as session, session.begin():
        mine = select(Member.id).where(Member.user_id == best.user_id).scalar_subquery()
        await session.execute(
            update(SpeedRecord).where(SpeedRecord.member_id == mine).values(after_reading=True)
        )

    status, board, _ = await get(site, f"/speed/{SPEED_TASK}")
    assert status == 200 and NOTE in board
    names = [row[1] for row in rows(board)]
    assert names == [r.name for r in site.seeded.speed[1:]] + [best.name]
    assert [row[0] for row in rows(board)] == [str(n) for n in range(1, len(names) + 1)]
    last = rows(board)[-1]
    assert last[2].endswith("📖 after reading") and board.count("📖 after reading</span>") == 1
    _, page, _ = await get(site, f"/members/{best.user_id}")
    (result,) = rows(page)
    assert result[2].endswith("📖 after reading")
