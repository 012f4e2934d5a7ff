"""``LOG_FORMAT``: text lines as they always were, or one JSON object per line with the ids
(submission, job, guild, reference) of what a line is about."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.config import load_settings
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Submission
from bot.errors import ConfigError
from bot.exts.error_replies import name_the_guild
from bot.logs import LogFormat, log_context, make_handler
from tests.support import REPO, SOLUTIONS, add_member, queue_submission, start_worker

KEYS = {"time", "level", "logger", "message"}
Written = tuple[logging.Logger, io.StringIO]


@pytest.fixture
def written(request: pytest.FixtureRequest) -> Iterator[Written]:
    """A logger of its own whose records go through the json handler into a buffer."""
    yield from _logger(request.node.name, "json")


def _logger(name: str, log_format: LogFormat) -> Iterator[Written]:
    buffer = io.StringIO()
    # a logger outside the hierarchy: no parent to propagate to, and pytest's capture (which
    # joins every registered logger) stays out of what it writes
    logger = logging.Logger(f"tests.logs.{name}", logging.DEBUG)
    logger.addHandler(make_handler(log_format, buffer))
    yield logger, buffer


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    text = buffer.getvalue()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_each_record_is_one_json_object_with_the_keys(written: Written) -> None:
    logger, buffer = written
    before = datetime.now(UTC)
    logger.info("job %d done", 7)
    logger.warning("lease lost")
    first, second = _lines(buffer)
    assert KEYS == first.keys() == second.keys()  # no ids where none are known
    assert (first["level"], first["logger"], first["message"]) == (
        "INFO",
        logger.name,
        "job 7 done",
    )
    assert (second["level"], second["message"]) == ("WARNING", "lease lost")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["time"]), first["time"]
    stamp = datetime.fromisoformat(first["time"])
    assert stamp.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= stamp <= datetime.now(UTC)


def test_ids_appear_inside_their_context_only_and_nested_contexts_restore(written: Written) -> None:
    logger, buffer = written
    logger.info("before")
    with log_context(submission_id=11, guild_id=3):
        logger.info("outer")
        with log_context(job_id=5, guild_id=4):
            logger.info("inner")
        logger.info("outer again")
    logger.info("after")
    ids = [{k: v for k, v in line.items() if k not in KEYS} for line in _lines(buffer)]
    assert ids == [
        {},
        {"submission_id": 11, "guild_id": 3},
        {"submission_id": 11, "job_id": 5, "guild_id": 4},
        {"submission_id": 11, "guild_id": 3},
        {},
    ]


def test_extra_at_the_call_site_names_ids_and_wins_over_the_context(written: Written) -> None:
    logger, buffer = written
    with log_context(submission_id=11, guild_id=3):
        logger.error("failed (ref %s)", "A1B2C3", extra={"ref": "A1B2C3", "guild_id": 9})
    (line,) = _lines(buffer)
    assert (line["ref"], line["guild_id"], line["submission_id"]) == ("A1B2C3", 9, 11)


async def test_threads_and_tasks_started_in_a_context_carry_its_ids(written: Written) -> None:
    logger, buffer = written
    with log_context(job_id=5):
        await asyncio.to_thread(logger.info, "in a thread")
        await asyncio.create_task(asyncio.to_thread(logger.info, "in a task's thread"))
    assert [line.get("job_id") for line in _lines(buffer)] == [5, 5]


async def test_the_command_trees_check_names_the_guild_for_its_task_only(written: Written) -> None:
    logger, buffer = written

    async def handle_interaction() -> None:  # as discord.py runs each one: in a task
        assert await name_the_guild(SimpleNamespace(guild_id=42))  # type: ignore[arg-type]
        logger.info("command ran")

    await asyncio.create_task(handle_interaction())
    logger.info("gateway")
    ran, gateway = _lines(buffer)
    assert ran["guild_id"] == 42
    assert "guild_id" not in gateway


def test_an_exception_record_stays_one_line_with_its_traceback(written: Written) -> None:
    logger, buffer = written
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        logger.exception("grading failed")
    assert buffer.getvalue().count("\n") == 1
    (line,) = _lines(buffer)
    assert line["message"] == "grading failed"
    assert line["exc_info"].startswith("Traceback (most recent call last):\n")
    assert line["exc_info"].endswith("ValueError: boom\nsecond line")


def test_newlines_and_non_ascii_round_trip_on_one_line(written: Written) -> None:
    logger, buffer = written
    message = 'first\nsecond\r\tthird "quoted" \\ é ✓ 日本 \U0001f525'
    logger.info(message)
    assert buffer.getvalue().count("\n") == 1
    assert buffer.getvalue().isascii()  # whatever encoding stderr has
    assert _lines(buffer)[0]["message"] == message


def test_a_record_that_cannot_be_formatted_still_gives_a_line(written: Written) -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

        __repr__ = __str__

    logger, buffer = written
    logger.info("%d items", "many")
    logger.info("%s", Unprintable())
    logger.info("id", extra={"job_id": Unprintable()})
    wrong, unprintable, odd_id = _lines(buffer)
    assert wrong["message"].startswith("%d items % ('many',)")
    assert unprintable["message"].startswith("%s % <unprintable tuple>")
    assert odd_id["message"] == "id" and odd_id["job_id"] == "<unprintable Unprintable>"


def test_text_format_is_unchanged(request: pytest.FixtureRequest) -> None:
    for logger, buffer in _logger(request.node.name, "text"):
        with log_context(job_id=5):
            logger.info("job %d\ndone", 5)
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO    tests\.logs\.\S+: job 5\ndone\n",
            buffer.getvalue(),
        ), buffer.getvalue()


def test_log_format_is_text_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOG_FORMAT", raising=False)
    assert load_settings(None).log_format == "text"
    monkeypatch.setenv("LOG_FORMAT", " JSON ")
    assert load_settings(None).log_format == "json"
    monkeypatch.setenv("LOG_FORMAT", "bogus")
    with pytest.raises(ConfigError) as refused:
        load_settings(None)
    message = str(refused.value)
    assert "LOG_FORMAT" in message and "'bogus'" in message
    assert "use text (lines for people) or json" in message


def test_json_turns_warnings_and_an_uncaught_exception_into_lines_too() -> None:
    script = (
        "import warnings\n"
        "from bot.logs import configure\n"
        "configure('INFO', 'json')\n"
        "warnings.warn('old API')\n"
        "raise RuntimeError('first\\nsecond')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    warned, crashed = (json.loads(line) for line in result.stderr.splitlines())
    assert (warned["logger"], warned["level"]) == ("py.warnings", "WARNING")
    assert "UserWarning: old API" in warned["message"]
    assert (crashed["level"], crashed["message"]) == ("CRITICAL", "uncaught exception")
    assert crashed["exc_info"].endswith("RuntimeError: first\nsecond")


async def test_a_worker_with_log_format_json_writes_json_lines_naming_the_job(
    sqlite_url: str, tmp_path: Path
) -> None:
    engine = make_engine(sqlite_url)
    try:
        await migrate.upgrade(engine)
        async with make_sessionmaker(engine)() as session, session.begin():
            await add_member(session)
            submission_id, job_id = await queue_submission(
                session, (SOLUTIONS / "correct.py").read_bytes(), filename="correct.py"
            )
        worker = start_worker(sqlite_url, tmp_path, LOG_FORMAT="json")
        try:
            deadline = time.monotonic() + 90
            while await _status(engine, submission_id) not in ("passed", "failed", "error"):
                assert time.monotonic() < deadline and worker.poll() is None, "no verdict"
                await asyncio.sleep(0.05)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=30) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
            _, stderr = worker.communicate(timeout=30)
    finally:
        await engine.dispose()
    lines = [json.loads(line) for line in stderr.splitlines()]  # JSON, every one
    assert lines and all(line.keys() >= KEYS for line in lines), stderr[-3000:]
    graded = [line for line in lines if line.get("job_id") == job_id]
    assert graded, stderr[-3000:]
    assert all(line["submission_id"] == submission_id for line in graded)
    assert any(re.match(rf"job {job_id} \S+ passed", line["message"]) for line in graded)


async def _status(engine: AsyncEngine, submission_id: int) -> str:
    async with make_sessionmaker(engine)() as session:
        submission = await session.get(Submission, submission_id)
        assert submission is not None
        return submission.status
