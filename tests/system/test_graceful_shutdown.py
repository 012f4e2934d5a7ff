"""SIGTERM and SIGINT stop ``brrrbot run`` in order: a verdict in flight is delivered once, the
gateway closes without a reconnect, the local pool and its workers go with the bot, exit 0
well within Docker's 10 s."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
import time
from pathlib import Path

from tests.support import REPO
from tests.system.conftest import (
    BUILD_XP,
    System,
    all_gone,
    check_database,
    descendants,
    start_system,
    until,
)

EDIT = "PATCH /webhooks/{application_id}/{token}/messages/{message_id}"
#: the issue's bound, with no margin taken off: the bot's own deadline is 9 s
STOP_WITHIN_S = 10.0


async def _stop_with(system: System, sig: signal.Signals) -> float:
    """Send ``sig`` to the bot; seconds until it exited with code 0."""
    bot = system.bot
    assert bot is not None and bot.pid is not None
    sent = time.monotonic()
    os.kill(bot.pid, sig)
    await until(
        lambda: bot.returncode is not None, STOP_WITHIN_S + 5, f"the bot to exit on {sig.name}"
    )
    took = time.monotonic() - sent
    await system.stop_bot()  # collects its output
    assert bot.returncode == 0, bot.output[-3000:]
    assert f"shutting down ({sig.name})" in bot.output
    assert took < STOP_WITHIN_S, f"{sig.name}: exited after {took:.1f} s"
    return took


def _gateway_ended_cleanly(system: System, sessions: int) -> None:
    """Nothing connected, and every connection was a fresh IDENTIFY: the client never tried to
    resume or reconnect while closing."""
    gateway = system.fake.gateway
    assert not gateway.connected
    outcomes = [connection.outcome for connection in gateway.connections]
    assert outcomes == ["identified"] * sessions, outcomes


async def test_sigterm_with_a_verdict_in_flight_then_sigint(tmp_path: Path) -> None:
    async with start_system(tmp_path) as system:
        bot = await system.start_bot(local_workers=True)
        found = await until(
            lambda: re.search(r"local grading worker\(s\), pid (\d+)", bot.output),
            30,
            "the local pool to start",
        )
        pool = int(found.group(1))  # type: ignore[union-attr]
        await bot.wait_for_output(" ready (", 120)
        pool_tree = {pool} | descendants(pool)
        system.reap |= pool_tree
        assert len(pool_tree) >= 2, "no zygote below the pool's worker"

        # The verdict's edit fails once: discord.py retries it 1 s later, and the SIGTERM
        # lands in between, while the delivery is in flight.
        member = system.learner()
        handle = await system.submit(member)
        queued = (await handle.original(15)).content
        submission = int(re.search(r"Submission #(\d+)", queued).group(1))  # type: ignore[union-attr]
        system.fake.inject_fault(500, route=EDIT)
        await until(lambda: system.fake.calls(EDIT, status=500), 90, "the verdict's first edit")
        took_term = await _stop_with(system, signal.SIGTERM)

        # delivered before the exit, once, by the edit that was in flight
        delivered = system.query("SELECT delivered_via FROM submissions WHERE id = ?", submission)
        assert delivered == [("edit",)], delivered
        assert system.verdict_messages(submission) == 1, system.verdicts_sent(submission)
        _gateway_ended_cleanly(system, 1)
        await all_gone(pool_tree, 5, "the stopped bot's pool, its worker and zygote")

        # Started again, it sends nothing twice; Ctrl-C (SIGINT) stops it the same way.
        await system.start_bot()
        help_reply = await system.fake.invoke_slash(system.guild, system.quests, member, "help")
        await help_reply.original(15)
        took_int = await _stop_with(system, signal.SIGINT)
        _gateway_ended_cleanly(system, 2)

        assert system.verdict_messages(submission) == 1, system.verdicts_sent(submission)
        paid = system.query("SELECT amount FROM xp_ledger WHERE source = 'task'")
        assert paid == [(BUILD_XP,)], paid
        check_database(system)
        print(
            f"graceful stop: SIGTERM {took_term:.1f} s (verdict in flight), SIGINT {took_int:.1f} s"
        )


#: a program whose orderly stop hangs: it sets a step, then never finishes
HANGING_STOP = """
import asyncio, logging, sys
from bot.shutdown import Shutdown

async def main() -> None:
    # "default": the deadline ``brrrbot run`` stops under, which Shutdown() takes
    shutdown = Shutdown() if sys.argv[1] == "default" else Shutdown(deadline_s=float(sys.argv[1]))
    shutdown.on_force(lambda: print("force hook ran", flush=True))
    with shutdown.handling_signals():
        print("ready", flush=True)
        await shutdown.requested.wait()
        shutdown.step = "waiting for something that hangs"
        await asyncio.Event().wait()

logging.basicConfig(level=logging.INFO)
asyncio.run(main())
"""


async def _hanging_stop(
    deadline_s: float | str, signals: list[signal.Signals]
) -> tuple[int, str, float]:
    """Run ``HANGING_STOP``, send it ``signals`` (one after another, each once it has taken the
    one before); its exit code, output and seconds from the first signal to its exit."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        HANGING_STOP,
        str(deadline_s),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={"PYTHONPATH": str(REPO), "PATH": os.environ["PATH"]},
    )
    assert process.stdout is not None
    assert await asyncio.wait_for(process.stdout.readline(), 30) == b"ready\n"
    sent = time.monotonic()
    output = b""
    for sig in signals:
        process.send_signal(sig)
        while b"shutting down" not in output:
            output += await asyncio.wait_for(process.stdout.readline(), 10)
    rest, _ = await asyncio.wait_for(process.communicate(), 30)
    return process.returncode or 0, (output + rest).decode(), time.monotonic() - sent


async def test_a_stop_that_hangs_is_forced_at_the_deadline_naming_the_step() -> None:
    code, output, took = await _hanging_stop(1.0, [signal.SIGTERM])
    print(f"a hung stop under a 1 s deadline ended after {took:.2f} s")
    assert code == 1, output
    assert "still waiting for something that hangs 1 s after SIGTERM" in output
    assert "force hook ran" in output
    # measured: 1.00 to 1.01 s in three runs on a 2-core host at load 3 (the force is a thread
    # woken at the deadline): a second of margin, so a deadline a second late fails
    assert 1.0 <= took < 2.0, took


async def test_brrrbot_runs_deadline_ends_a_hung_stop_after_9_s_within_dockers_10() -> None:
    """Operations' "the process ends 9 s after the signal with exit code 1 and a log line
    naming the step that hung, within Docker's default 10 s": the deadline ``brrrbot run``
    stops under (``bot.runner`` makes its ``Shutdown()`` with the default)."""
    code, output, took = await _hanging_stop("default", [signal.SIGTERM])
    assert code == 1, output
    assert "still waiting for something that hangs 9 s after SIGTERM" in output
    print(f"a hung stop under the default deadline ended after {took:.2f} s")
    # measured: 9.00 s in five runs out of five (2-core host, load 1 to 2); the forced exit
    # is os._exit from a thread woken at the deadline, so the 1 s to Docker's kill is margin
    assert 9.0 <= took < STOP_WITHIN_S, took


async def test_a_second_signal_exits_at_once() -> None:
    code, output, took = await _hanging_stop(60.0, [signal.SIGTERM, signal.SIGINT])
    assert code == 1, output
    assert "exiting at once: second signal (SIGINT)" in output
    assert "force hook ran" in output
    assert took < 10.0, took
