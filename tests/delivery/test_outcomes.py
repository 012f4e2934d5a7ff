"""Settling and delivering verdicts without Discord: a fake transport stands in for it.

Each verdict is paid once and delivered once, by the best route that takes it; one that cannot
be read, paid or sent is tried again with backoff and finally set aside for moderators, and it
never holds back the verdicts behind it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.db.engine import make_sessionmaker
from bot.db.models import Guild, Member, Submission, XpEntry
from bot.delivery import outcomes
from bot.delivery.failures import RetryPolicy, failed_deliveries
from bot.delivery.transport import PendingVerdict, RouteRefused
from bot.progress.awards import NO_AWARD, Award
from graders.base import Check, Verdict
from tests import timeline

GUILD = 1
OTHER_GUILD = 2
QUEST_CHANNEL = 500
REPLY_CHANNEL = 501
TASK = "go-brrrr/matmul-three-ways"
XP = 60
DEAD = (
    "internal error: grading failed 3 times without a verdict. This is not your fault and "
    "costs you nothing: resubmit, or ask a moderator to regrade it."
)


def passed(score: float = 1.0) -> dict[str, Any]:
    return Verdict(TASK, "passed", score, (Check("loops", True, "ok"),), "well done").to_json()


@dataclass
class Clock:
    now: datetime = field(default_factory=timeline.now)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class Store:
    """What ``deliver_pending`` needs of the bot's services."""

    sessions: async_sessionmaker[AsyncSession]
    reads: async_sessionmaker[AsyncSession]
    xp: int | None = XP
    interface: tuple[str, ...] | None = None

    async def task_xp(self, guild_id: int, task_ref: str) -> int | None:
        return self.xp

    async def task_interface(self, guild_id: int, task_ref: str) -> tuple[str, ...] | None:
        return self.interface


@dataclass
class FakeTransport:
    """Records what reached whom; ``refuse`` routes per user, ``explode``/``hang`` a submission."""

    sent: list[tuple[str, int, PendingVerdict]] = field(default_factory=list)
    refuse: dict[int, set[str]] = field(default_factory=dict)  # user -> refused routes
    explode: set[int] = field(default_factory=set)  # submission ids whose send raises
    hang: set[int] = field(default_factory=set)  # submission ids whose send never returns
    tries: list[int] = field(default_factory=list)  # submission ids, one per send attempt

    async def edit_reply(self, pending: PendingVerdict) -> None:
        await self._send("edit", pending)

    async def send_dm(self, pending: PendingVerdict) -> None:
        await self._send("dm", pending)

    async def post_notice(self, pending: PendingVerdict, channel_id: int) -> None:
        await self._send(f"channel:{channel_id}", pending)

    async def _send(self, route: str, pending: PendingVerdict) -> None:
        self.tries.append(pending.submission_id)
        if pending.submission_id in self.explode:
            raise RuntimeError("the renderer choked on this verdict")
        if pending.submission_id in self.hang:
            await asyncio.Event().wait()
        if route in self.refuse.get(pending.user_id, set()):
            raise RouteRefused(f"{route} refused")
        self.sent.append((route, pending.submission_id, pending))

    def delivered(self) -> list[int]:
        return [submission_id for _, submission_id, _ in self.sent]


@dataclass
class Scene:
    engine: AsyncEngine
    clock: Clock
    store: Store
    transport: FakeTransport = field(default_factory=FakeTransport)
    _members: dict[tuple[int, int], int] = field(default_factory=dict)

    async def finished(
        self,
        verdict: dict[str, Any],
        *,
        user_id: int = 100,
        guild_id: int = GUILD,
        status: str | None = None,
        reply_expires_in: float | None = None,
    ) -> int:
        """A submission whose job stored ``verdict`` a second after the previous one."""
        self.clock.advance(1)
        async with self.store.sessions() as session, session.begin():
            member_id = await self._member(session, guild_id, user_id)
            submission = Submission(
                guild_id=guild_id,
                member_id=member_id,
                task_ref=TASK,
                filename="s.py",
                file_kind="py",
                content=b"pass\n",
                size_bytes=5,
                sha256=hashlib.sha256(b"pass\n").hexdigest(),
                status=status or str(verdict.get("status", "passed")),
                verdict=verdict,
                finished_at=self.clock.now,
                reply_token=None if reply_expires_in is None else f"token-{user_id}",
                reply_expires_at=None
                if reply_expires_in is None
                else self.clock.now + timedelta(seconds=reply_expires_in),
                reply_channel_id=REPLY_CHANNEL,
            )
            session.add(submission)
            await session.flush()
            return submission.id

    async def _member(self, session: AsyncSession, guild_id: int, user_id: int) -> int:
        if (guild_id, user_id) not in self._members:
            if await session.get(Guild, guild_id) is None:
                session.add(Guild(id=guild_id, quest_channel_id=QUEST_CHANNEL))
                await session.flush()
            member = Member(guild_id=guild_id, user_id=user_id)
            session.add(member)
            await session.flush()
            self._members[(guild_id, user_id)] = member.id
        return self._members[(guild_id, user_id)]

    async def deliver(self, policy: RetryPolicy = outcomes.RETRIES) -> outcomes.PassResult:
        return await outcomes.deliver_pending(
            self.store, self.transport, now=self.clock, policy=policy
        )

    async def row(self, submission_id: int) -> Submission:
        async with self.store.reads() as session:
            found = await session.get(Submission, submission_id)
            assert found is not None
            return found

    async def ledger_total(self) -> int:
        async with self.store.reads() as session:
            return int(await session.scalar(select(func.coalesce(func.sum(XpEntry.amount), 0))))


@pytest.fixture
def scene(engine: AsyncEngine) -> Scene:
    store = Store(make_sessionmaker(engine), make_sessionmaker(engine, read_only=True))
    return Scene(engine, Clock(), store)


async def test_a_verdict_is_paid_once_and_delivered_once(scene: Scene) -> None:
    first = await scene.finished(passed())
    result = await scene.deliver()
    assert (result.settled, result.delivered, result.failed) == (1, 1, 0)
    ((route, submission_id, pending),) = scene.transport.sent
    assert (route, submission_id) == ("dm", first)
    assert pending.verdict == Verdict.from_json(passed())
    assert pending.award.xp_added == XP and pending.award.new_total == XP
    await scene.deliver()
    assert len(scene.transport.sent) == 1
    row = await scene.row(first)
    assert row.delivered_via == "dm" and row.delivered_at is not None
    assert Award.from_json(row.award or {}).xp_added == XP
    assert await scene.ledger_total() == XP


@pytest.mark.parametrize("poison", ["unreadable verdict", "unreadable award", "send raises"])
async def test_a_poison_verdict_first_in_line_does_not_hold_back_the_others(
    scene: Scene, poison: str
) -> None:
    if poison == "unreadable verdict":  # a hand-built verdict without a task, as before 0005
        bad = await scene.finished({"status": "error", "score": 0.0, "feedback": "?"})
    elif poison == "unreadable award":
        bad = await scene.finished(passed())
        async with scene.store.sessions() as session, session.begin():
            row = await session.get(Submission, bad)
            assert row is not None
            row.settled_at, row.award = scene.clock.now, {"xp": "lots"}
    else:
        bad = await scene.finished(passed())
        scene.transport.explode.add(bad)
    others = [await scene.finished(passed(), user_id=200 + n) for n in range(3)]

    result = await scene.deliver()

    assert scene.transport.delivered() == others
    assert result.delivered == 3 and result.failed == 1
    row = await scene.row(bad)
    assert row.delivered_at is None and row.delivery_failed_at is None
    assert row.delivery_attempts == 1
    assert row.next_delivery_at == scene.clock.now + timedelta(seconds=2)
    expected = {
        "unreadable verdict": "settle: BadVerdict",
        "unreadable award": "deliver: ValidationError",
        "send raises": "deliver: RuntimeError: the renderer choked",
    }[poison]
    assert expected in (row.delivery_error or "")


async def test_retries_back_off_then_give_up_and_tell_the_operator(
    scene: Scene, caplog: pytest.LogCaptureFixture
) -> None:
    policy = RetryPolicy(max_attempts=4, first_delay_s=2.0, max_delay_s=5.0)
    bad = await scene.finished(passed())
    scene.transport.explode.add(bad)
    waits = []
    with caplog.at_level(logging.WARNING, logger="bot.delivery.failures"):
        await scene.deliver(policy)
        for _ in range(policy.max_attempts - 1):
            due = (await scene.row(bad)).next_delivery_at
            assert due is not None
            waits.append((due - scene.clock.now).total_seconds())
            scene.clock.now = due - timedelta(seconds=0.5)
            await scene.deliver(policy)  # not due yet: not tried
            scene.clock.now = due
            await scene.deliver(policy)
    assert waits == [2.0, 4.0, 5.0]  # doubling, capped
    assert scene.transport.tries == [bad] * policy.max_attempts
    row = await scene.row(bad)
    assert row.delivery_attempts == policy.max_attempts
    assert row.delivery_failed_at == scene.clock.now and row.next_delivery_at is None

    scene.clock.advance(3600)
    late = await scene.finished(passed(), user_id=300)
    await scene.deliver(policy)
    assert scene.transport.tries[-1] == late  # the failed one is never tried again
    assert scene.transport.tries.count(bad) == policy.max_attempts

    (given_up,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    reference = (row.delivery_error or "").split("]")[0].lstrip("[")
    assert f"submission {bad}:" in given_up.getMessage()
    assert f"ref {reference}" in given_up.getMessage()
    retries = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(retries) == policy.max_attempts - 1

    async with scene.store.reads() as session:
        (listed,) = await failed_deliveries(session, GUILD)
        assert await failed_deliveries(session, OTHER_GUILD) == []
    assert (listed.submission_id, listed.user_id, listed.task_ref) == (bad, 100, TASK)
    assert listed.attempts == policy.max_attempts
    assert listed.error.startswith(f"[{reference}] deliver: RuntimeError")


async def test_the_bot_gives_up_after_10_tries_and_about_14_minutes(scene: Scene) -> None:
    """/admin deliveries' "after 10 tries (about 14 minutes of backoff)", with the policy the bot
    delivers under: every try is made when due and none after the tenth."""
    bad = await scene.finished(passed())
    scene.transport.explode.add(bad)
    started = scene.clock.now
    await scene.deliver()
    while (due := (await scene.row(bad)).next_delivery_at) is not None:
        scene.clock.now = due
        await scene.deliver()
    backoff_min = (scene.clock.now - started).total_seconds() / 60
    assert scene.transport.tries == [bad] * 10
    assert (await scene.row(bad)).delivery_failed_at == scene.clock.now
    assert 13 <= backoff_min <= 15, backoff_min


async def test_failed_deliveries_are_listed_per_server(scene: Scene) -> None:
    policy = RetryPolicy(max_attempts=1)
    here = await scene.finished({"status": "passed"}, user_id=101)
    there = await scene.finished({"status": "passed"}, user_id=102, guild_id=OTHER_GUILD)
    fine = await scene.finished(passed(), user_id=103)
    await scene.deliver(policy)
    async with scene.store.reads() as session:
        assert [f.submission_id for f in await failed_deliveries(session, GUILD)] == [here]
        assert [f.submission_id for f in await failed_deliveries(session, OTHER_GUILD)] == [there]
    assert scene.transport.delivered() == [fine]


async def test_a_dead_job_is_one_message_and_no_xp(scene: Scene) -> None:
    dead = await scene.finished(Verdict.internal_error(TASK, DEAD).to_json())
    failed = await scene.finished(Verdict(TASK, "failed", 0.9, (), "almost").to_json(), user_id=101)
    await scene.deliver()
    await scene.deliver()
    assert sorted(scene.transport.delivered()) == [dead, failed]
    pending = {submission_id: p for _, submission_id, p in scene.transport.sent}
    assert pending[dead].verdict.status == "error" and pending[dead].verdict.feedback == DEAD
    assert pending[dead].award == NO_AWARD and pending[failed].award == NO_AWARD
    assert await scene.ledger_total() == 0


async def test_routes_reply_while_the_token_lives_then_dm_then_channel(scene: Scene) -> None:
    live = await scene.finished(passed(), user_id=101, reply_expires_in=600)
    expiring = await scene.finished(passed(), user_id=102, reply_expires_in=20)
    no_dms = await scene.finished(passed(), user_id=103)
    scene.transport.refuse[103] = {"dm"}
    no_quest_channel = await scene.finished(passed(), user_id=104)
    scene.transport.refuse[104] = {"dm", f"channel:{QUEST_CHANNEL}"}
    nowhere = await scene.finished(passed(), user_id=105, reply_expires_in=600)
    scene.transport.refuse[105] = {"edit", "dm", f"channel:{QUEST_CHANNEL}"}
    scene.transport.refuse[105].add(f"channel:{REPLY_CHANNEL}")

    await scene.deliver()

    routes = {submission_id: route for route, submission_id, _ in scene.transport.sent}
    assert routes == {
        live: "edit",
        expiring: "dm",  # under 30 s of token left: not worth starting an edit
        no_dms: f"channel:{QUEST_CHANNEL}",
        no_quest_channel: f"channel:{REPLY_CHANNEL}",
    }
    assert [(await scene.row(i)).delivered_via for i in routes] == ["edit", "dm"] + ["channel"] * 2
    row = await scene.row(nowhere)
    assert row.delivered_at is None and row.delivery_attempts == 1
    assert "Undeliverable: no route took it" in (row.delivery_error or "")


async def test_a_send_that_hangs_is_a_failed_try(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outcomes, "SEND_TIMEOUT_S", 0.2)
    stuck = await scene.finished(passed())
    scene.transport.hang.add(stuck)
    after = await scene.finished(passed(), user_id=101)
    await asyncio.wait_for(scene.deliver(), 10)
    assert scene.transport.delivered() == [after]
    assert "deliver: TimeoutError" in ((await scene.row(stuck)).delivery_error or "")


async def test_more_than_a_batch_goes_out_in_one_pass(scene: Scene) -> None:
    ids = [await scene.finished(passed(), user_id=1000 + n) for n in range(outcomes.BATCH + 5)]
    result = await scene.deliver()
    assert result.delivered == len(ids)
    assert scene.transport.delivered() == ids  # oldest first


async def test_a_verdict_is_read_once_per_delivery(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass that settles a verdict hands the typed verdict to its delivery; a verdict
    settled in an earlier pass (its send failed) is read once more, by the pass that sends it."""
    reads: list[str] = []
    parse = Verdict.from_json

    def counted(data: Mapping[str, Any]) -> Verdict:
        reads.append(str(data.get("feedback")))
        return parse(data)

    monkeypatch.setattr(Verdict, "from_json", counted)
    at_once = await scene.finished(passed())
    retried = await scene.finished(
        Verdict(TASK, "failed", 0.5, (), "not yet").to_json(), user_id=101
    )
    scene.transport.explode.add(retried)
    await scene.deliver()
    assert scene.transport.delivered() == [at_once]
    assert sorted(reads) == ["not yet", "well done"]  # each read once, by settling
    reads.clear()
    scene.transport.explode.clear()
    scene.clock.now = (await scene.row(retried)).next_delivery_at or scene.clock.now
    await scene.deliver()
    assert scene.transport.delivered() == [at_once, retried]
    assert reads == ["not yet"]  # settled before: read by this pass's delivery alone
