"""A voided speed result is on no public page: the task's speed board, the member's page, the
speed index; a restore puts it back.  (Its own seeded server: this module's voids touch no
other module's pages.)"""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.db.engine import make_sessionmaker
from bot.db.models import Member, SpeedRecord, Submission
from bot.progress.speed_results import record_speed
from bot.progress.speed_voids import restore, void
from graders.base import SPEED_INSTRUMENT, SpeedResult
from tests.web.conftest import Site
from tests.web.seeded import DEVICE, SPEED_TASK
from tests.web.test_pages import get, rows

pytestmark = pytest.mark.asyncio(loop_scope="module")

GONE_TASK = "retired-quest/gone-task"  # not on the map: listed on the index only by its results


async def _submission_of(site: Site, user_id: int) -> int:
    async with make_sessionmaker(site.engine)() as session:
        found = await session.scalar(
            select(SpeedRecord.submission_id)
            .join(Member, Member.id == SpeedRecord.member_id)
            .where(Member.user_id == user_id, SpeedRecord.task_ref == SPEED_TASK)
        )
    assert found is not None
    return found


async def _void(site: Site, submission_id: int) -> None:
    async with make_sessionmaker(site.engine)() as session, session.begin():
        await void(
            session,
            guild_id=site.seeded.guild_id,
            submission_id=submission_id,
            reason="timed a cached result",
            actor_user_id=1,
            now=site.seeded.now,
        )


async def _restore(site: Site, submission_id: int) -> None:
    async with make_sessionmaker(site.engine)() as session, session.begin():
        await restore(
            session,
            guild_id=site.seeded.guild_id,
            submission_id=submission_id,
            actor_user_id=1,
            now=site.seeded.now,
        )


async def test_a_void_leaves_the_speed_board_and_the_members_page(site: Site) -> None:
    best = site.seeded.speed[0]  # 5002, the board's first
    submission_id = await _submission_of(site, best.user_id)
    _, before, _ = await get(site, f"/speed/{SPEED_TASK}")
    _, page_before, _ = await get(site, f"/members/{best.user_id}")
    assert [row[1] for row in rows(before)] == [r.name for r in site.seeded.speed]
    assert len(rows(page_before)) == 1

    await _void(site, submission_id)
    status, board, _ = await get(site, f"/speed/{SPEED_TASK}")
    assert status == 200
    assert [row[1] for row in rows(board)] == [r.name for r in site.seeded.speed[1:]]
    assert f"/members/{best.user_id}" not in board
    status, page, _ = await get(site, f"/members/{best.user_id}")
    assert status == 200 and rows(page) == []  # their numbers stay; no best run to show

    await _restore(site, submission_id)
    _, again, _ = await get(site, f"/speed/{SPEED_TASK}")
    _, page_again, _ = await get(site, f"/members/{best.user_id}")
    assert rows(again) == rows(before) and rows(page_again) == rows(page_before)


async def _gone_result(site: Site, user_id: int) -> int:
    """A speed result of ``user_id`` on ``GONE_TASK``; its submission id."""
    code = b"def softmax(x): return x  # gone\n"
    async with make_sessionmaker(site.engine)() as session, session.begin():
        member = await session.scalar(select(Member).where(Member.user_id == user_id))
        assert member is not None
        submission = Submission(
            guild_id=site.seeded.guild_id,
            member_id=member.id,
            task_ref=GONE_TASK,
            filename="solution.py",
            file_kind="py",
            content=code,
            size_bytes=len(code),
            sha256=hashlib.sha256(code).hexdigest(),
            status="passed",
            score=1.0,
            finished_at=site.seeded.now,
        )
        session.add(submission)
        await session.flush()
        await record_speed(
            session,
            guild_id=site.seeded.guild_id,
            member_id=member.id,
            submission_id=submission.id,
            task_ref=GONE_TASK,
            speed=SpeedResult(
                ratio=2.0,
                learner_s=0.001,
                reference_s=0.002,
                spread=0.03,
                pairs=50,
                device=DEVICE,
                instrument=SPEED_INSTRUMENT,
                board_ratio=1.8,
            ),
            submitted_at=site.seeded.now - timedelta(hours=2),
            now=site.seeded.now - timedelta(hours=2),
        )
    return submission.id


async def test_a_task_whose_only_results_are_void_leaves_the_speed_index(site: Site) -> None:
    gone = await _gone_result(site, 5000)
    _, index, _ = await get(site, "/speed")
    assert f"/speed/{GONE_TASK}" in index
    status, _, _ = await get(site, f"/speed/{GONE_TASK}")
    assert status == 200
    await _void(site, gone)
    _, index, _ = await get(site, "/speed")
    assert f"/speed/{GONE_TASK}" not in index
    status, _, _ = await get(site, f"/speed/{GONE_TASK}")
    assert status == 404  # not on the map, and no result that counts: no board
