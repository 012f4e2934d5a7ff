"""``brrrbot db backfill-fingerprints`` (``bot.similarity.backfill``): passes settled before
near-copy checks get the fingerprints their settlement would have recorded, with the interface
read from their own grading job, and their near-copies are flagged; short passes, passes whose
job has no spec and failing submissions are left; a second run does nothing new."""

from __future__ import annotations

from sqlalchemy import delete, select

from bot.db.models import GradingJob, SolutionFingerprint
from bot.db.states import JobStatus
from bot.similarity.backfill import Backfilled, backfill
from bot.similarity.fingerprints import fingerprints
from tests.progress.test_near_copies import (
    COPY,
    HONEST,
    INTERFACE,
    NOW,
    ORIGINAL,
    SHORT,
    TASK,
    fingerprinted,
    flags,
    submit,
)
from tests.progress.world import World
from tests.support import seed_spec


async def old_pass(world: World, member_id: int, code: str, *, spec: bool = True, **kw: str) -> int:
    """A submission settled as before migration 0013: no fingerprints; its grading job carries
    the spec the bot built for it (or none, as jobs queued before revision 0005)."""
    submission_id = await submit(world, member_id, code, **kw)
    stored = seed_spec(TASK, "solution.py", code.encode()).to_json() if spec else None
    async with world.sessions() as session, session.begin():
        await session.execute(
            delete(SolutionFingerprint).where(SolutionFingerprint.submission_id == submission_id)
        )
        session.add(GradingJob(submission_id=submission_id, status=JobStatus.DONE, spec=stored))
    return submission_id


async def test_old_passes_are_fingerprinted_flagged_once_and_the_rest_left(world: World) -> None:
    ada, bob, cy, dee, eve = [await world.member(n, name) for n, name in enumerate("ABCDE", 1)]
    assert seed_spec(TASK, "solution.py", ORIGINAL.encode()).interface == INTERFACE
    first = await old_pass(world, ada, ORIGINAL)
    copy = await old_pass(world, bob, COPY)
    await old_pass(world, cy, SHORT)
    await old_pass(world, dee, COPY, spec=False)
    await old_pass(world, eve, COPY, status="failed")
    settled_since = await submit(world, eve, HONEST)  # fingerprinted at its settlement
    assert set(await fingerprinted(world)) == {settled_since}
    assert await flags(world) == []

    print("BACKFILL: fingerprinting the old passes", flush=True)
    done = await backfill(world.sessions, now=NOW)

    assert done == Backfilled(fingerprinted=2, short=1, no_spec=1, flagged=1)
    assert done.examined == 4
    assert set(await fingerprinted(world)) == {first, copy, settled_since}
    assert await flags(world) == [(copy, bob, first, ada, 1.0)]
    async with world.sessions() as session:
        stored = set(
            await session.scalars(
                select(SolutionFingerprint.hash).where(SolutionFingerprint.submission_id == first)
            )
        )
    assert stored == set(fingerprints(ORIGINAL, INTERFACE))  # its signatures left out

    again = await backfill(world.sessions, now=NOW)
    assert again == Backfilled(fingerprinted=0, short=1, no_spec=1, flagged=0)
    assert len(await flags(world)) == 1
