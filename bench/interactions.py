"""Interaction acknowledgement and /submit end to end, through the loopback fake Discord.

Run: .venv/bin/python -m bench.interactions [--concurrent 100] [--submits 20]

Starts the real bot (``brrrbot run`` with one local worker) against the
project's fake Discord, then measures:
- acknowledgement (INTERACTION_CREATE dispatched -> first callback accepted) for
  a burst of concurrent /submit and /leaderboard invocations, against the same
  measurement for one invocation at a time (the baseline, same run);
- /submit of a correct matmul-three-ways to the edited "Passed" verdict, with a
  warm worker, against a fresh process that imports torch and grades (same run);
- the bot process's resident memory, and that it never loaded torch.
Reports medians, p99 and ratios; not part of the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fakediscord import FakeDiscord, User
from fakediscord.process import BotProcess

REPO = Path(__file__).resolve().parent.parent
CORRECT = (REPO / "tests" / "graders" / "solutions" / "correct.py").read_bytes()
TASK = "go-brrrr/matmul-three-ways"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main(concurrent: int, submits: int) -> None:
    workdir = Path(tempfile.mkdtemp(prefix="brrrbot-bench-"))
    fake = FakeDiscord(heartbeat_interval=5.0)
    guild = fake.add_guild("bench")
    channel = fake.add_channel(guild, "quests")
    users: list[User] = []
    for number in range(concurrent + submits + 1):
        user = fake.add_user(f"learner{number}")
        fake.add_member(guild, user)
        users.append(user)
    env = {
        "DISCORD_TOKEN": fake.token,
        "QUESTS_DIR": str(REPO / "quests"),
        "WORKERS": "1",
        "LOG_LEVEL": "WARNING",
        "HTTP_PORT": "0",
        "SUBMISSIONS_PER_HOUR": "1000",
    }
    async with fake, BotProcess(fake.urls, ["run"], env=env, cwd=workdir) as bot:
        await fake.wait_until_connected(timeout=60)
        await asyncio.sleep(6)  # on_ready and the worker's zygote

        async def invoke(user: User, name: str) -> tuple[float, object]:
            options = {"task": TASK} if name == "submit" else {}
            files = [("solution.py", CORRECT)] if name == "submit" else []
            handle = await fake.invoke_slash(
                guild, channel, user, name, options=options, attachments=files
            )
            return await handle.acked(timeout=10), handle

        baseline = [(await invoke(users[-1], "leaderboard"))[0] for _ in range(20)]
        burst_users = users[:concurrent]
        names = ["submit" if i % 2 == 0 else "leaderboard" for i in range(concurrent)]
        results = await asyncio.gather(
            *(invoke(u, n) for u, n in zip(burst_users, names, strict=True))
        )
        acks = [ack for ack, _ in results]
        for (_, handle), name in zip(results, names, strict=True):
            if name == "submit":
                await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=120)

        end_to_end = []
        for user in users[concurrent : concurrent + submits]:
            started = time.perf_counter()
            _, handle = await invoke(user, "submit")
            await handle.wait_for(lambda m: m.content.startswith("Passed"), timeout=60)
            end_to_end.append(time.perf_counter() - started)

        status = Path(f"/proc/{bot.pid}/status").read_text()
        rss_kib = int(
            next(line for line in status.splitlines() if line.startswith("VmRSS")).split()[1]
        )
        torch_loaded = "libtorch" in Path(f"/proc/{bot.pid}/maps").read_text()

    naive = []
    for _ in range(3):
        path = workdir / "naive.py"
        path.write_bytes(CORRECT)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "bot", "grade", str(path), "--task", TASK, "--json"],
            env={**os.environ, "QUESTS_DIR": str(REPO / "quests"), "PYTHONPATH": str(REPO)},
            capture_output=True,
            check=True,
        )
        naive.append(time.perf_counter() - started)

    {
        name: [ack for ack, n in zip(acks, names, strict=True) if n == name]
        for name in ("submit", "leaderboard")
    }
    rows = [
        (
            "ack, one at a time (baseline): median / p99",
            f"{statistics.median(baseline) * 1e3:.1f} / {percentile(baseline, 0.99) * 1e3:.1f} ms",
        ),
        (
            f"ack, {concurrent} concurrent /submit + /leaderboard: median / p99",
            f"{statistics.median(acks) * 1e3:.1f} / {percentile(acks, 0.99) * 1e3:.1f} ms",
        ),
        (
            "p99 concurrent / median baseline",
            f"{percentile(acks, 0.99) / statistics.median(baseline):.1f}x",
        ),
        (
            f"/submit to edited verdict, {submits} runs: median",
            f"{statistics.median(end_to_end) * 1e3:.1f} ms",
        ),
        (
            "fresh process + import torch + grade (brrrbot grade): median",
            f"{statistics.median(naive) * 1e3:.1f} ms",
        ),
        (
            "speed-up of /submit end to end over the fresh process",
            f"{statistics.median(naive) / statistics.median(end_to_end):.1f}x",
        ),
        ("bot process RSS", f"{rss_kib / 1024:.0f} MiB"),
        ("torch loaded in the bot process", "yes" if torch_loaded else "no"),
    ]
    for label, value in rows:
        print(f"{label:<64} {value}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=100)
    parser.add_argument("--submits", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.concurrent, args.submits))
