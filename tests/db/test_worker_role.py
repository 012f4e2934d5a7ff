"""The remote worker's PostgreSQL role can run the queue and nothing else."""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import delete, insert, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_engine, make_sessionmaker
from bot.db.lifecycle import grant_worker_role
from bot.db.models import Member, Submission, XpEntry
from bot.errors import UserError
from bot.jobs import heartbeat, queue
from bot.jobs.capabilities import Capabilities
from bot.jobs.job_spec import JobSpec
from graders.base import Verdict
from tests.postgres_server import PostgresServer
from tests.support import add_member, queue_submission, run_cli

PASSWORD = "correct horse battery staple"


@pytest.fixture
async def owner_url(postgres_server: PostgresServer) -> str:
    return await postgres_server.create_database()


@pytest.fixture
async def worker_engine(
    postgres_server: PostgresServer, owner_url: str
) -> AsyncIterator[AsyncEngine]:
    # created by the first test that gets here, updated by the rest: roles are cluster-wide
    await grant_worker_role(owner_url, "brrrbot_worker", PASSWORD)
    database = owner_url.rsplit("/", 1)[1]
    engine = make_engine(postgres_server.url(database, "brrrbot_worker", PASSWORD))
    yield engine
    await engine.dispose()


async def _queue_one(owner_url: str) -> None:
    engine = make_engine(owner_url)
    async with make_sessionmaker(engine)() as session, session.begin():
        await add_member(session)
        await queue_submission(session)
    await engine.dispose()


async def test_the_role_runs_the_queue(owner_url: str, worker_engine: AsyncEngine) -> None:
    await _queue_one(owner_url)
    sessions = make_sessionmaker(worker_engine)
    await heartbeat.beat(sessions, "w1", Capabilities())
    job = await queue.claim(sessions, "w1")
    assert job is not None
    assert isinstance(job.spec, JobSpec) and job.spec.source == "pass\n"  # it carries the code
    async with sessions() as session:
        task_ref = await session.scalar(
            select(Submission.task_ref).where(Submission.id == job.submission_id)
        )
    assert await queue.complete(sessions, job, Verdict(task_ref, "passed", 1.0, (), "ok"))
    await heartbeat.forget(sessions, "w1")


@pytest.mark.parametrize(
    "statement",
    [
        select(XpEntry.id),
        select(Member.user_id),
        select(Submission.member_id),
        select(Submission.content),
        insert(XpEntry).values(guild_id=1, member_id=1, amount=1000, reason="x", source="admin"),
        delete(Submission),
        text("CREATE TABLE stolen (x int)"),
    ],
    ids=[
        "read-ledger",
        "read-members",
        "read-submitter",
        "read-upload",  # the job's spec carries the prepared source; the upload stays private
        "write-ledger",
        "delete",
        "create",
    ],
)
async def test_the_role_can_do_nothing_else(
    owner_url: str, worker_engine: AsyncEngine, statement: object
) -> None:
    await _queue_one(owner_url)
    async with worker_engine.connect() as connection:
        with pytest.raises(DBAPIError, match="permission denied"):
            await connection.execute(statement)


def _scram_matches(verifier: str, password: str) -> bool:
    """Whether PostgreSQL's stored SCRAM-SHA-256 verifier was made from ``password``.

    The test server trusts every login, so the stored verifier is where a password shows:
    ``SCRAM-SHA-256$iterations:salt$StoredKey:ServerKey`` (RFC 5802, RFC 7677).
    """
    method, cost, keys = verifier.split("$")
    assert method == "SCRAM-SHA-256", method
    iterations, salt = cost.split(":")
    stored_key = base64.b64decode(keys.split(":")[0])
    salted = hashlib.pbkdf2_hmac(
        "sha256", password.encode(), base64.b64decode(salt), int(iterations)
    )
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    return hashlib.sha256(client_key).digest() == stored_key


async def test_rerunning_updates_the_password(
    postgres_server: PostgresServer, owner_url: str, worker_engine: AsyncEngine
) -> None:
    new_password = PASSWORD + "!"
    assert not await grant_worker_role(owner_url, "brrrbot_worker", new_password)  # it existed
    admin = await postgres_server.admin()
    try:
        verifier = await admin.fetchval(
            "SELECT rolpassword FROM pg_authid WHERE rolname = 'brrrbot_worker'"
        )
    finally:
        await admin.close()
    assert _scram_matches(verifier, new_password)
    assert not _scram_matches(verifier, PASSWORD)
    async with worker_engine.connect() as connection:  # pooled connection: already logged in
        assert await connection.scalar(text("SELECT current_user")) == "brrrbot_worker"


async def test_bad_names_and_weak_passwords_are_refused(owner_url: str) -> None:
    with pytest.raises(UserError, match="not allowed"):
        await grant_worker_role(owner_url, "Robert'); DROP TABLE members;--", PASSWORD)
    with pytest.raises(UserError, match="at least 12"):
        await grant_worker_role(owner_url, "brrrbot_worker", "short")


def test_the_command_needs_postgresql_and_a_password(sqlite_url: str, tmp_path: Path) -> None:
    missing = run_cli("db", "worker-role", "w", cwd=tmp_path, env={"DATABASE_URL": sqlite_url})
    assert missing.returncode == 2
    assert "WORKER_DB_PASSWORD is not set" in missing.stderr
    env = {"DATABASE_URL": sqlite_url, "WORKER_DB_PASSWORD": PASSWORD}
    on_sqlite = run_cli("db", "worker-role", "w", cwd=tmp_path, env=env)
    assert on_sqlite.returncode == 2
    assert "worker roles need PostgreSQL" in on_sqlite.stderr
