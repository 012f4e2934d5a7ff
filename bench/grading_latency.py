"""Queue-to-result latency and burst drain rate of a warm worker, against baselines.

Run: .venv/bin/python bench/grading_latency.py [--jobs 30] [--burst 200]
     [--task QUEST/TASK --solution FILE]   (default: go-brrrr/matmul-three-ways, correct.py)

Measured in one run:
- queue-to-result: a correct matmul-three-ways submission inserted into the
  queue until its verdict is in the database, with one warm `brrrbot worker`;
- naive baseline: a fresh Python process per job that imports torch and runs
  the same grading (what a worker without a zygote would pay);
- compute alone: the grader's plan + the learner's functions + judge, in this
  process, no sandbox, no queue; the drain rate of a burst is compared to it.
Reports medians and ratios; it is not part of the test suite's pass/fail.
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

from sqlalchemy import func, select

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bot.content import load_content  # noqa: E402
from bot.content.schema import BuildTask  # noqa: E402
from bot.db import migrate  # noqa: E402
from bot.db.engine import make_engine, make_sessionmaker  # noqa: E402
from bot.db.models import Submission  # noqa: E402
from tests.support import add_member, queue_submission  # noqa: E402

DEFAULT_TASK = "go-brrrr/matmul-three-ways"
DEFAULT_SOLUTION = REPO / "tests" / "graders" / "solutions" / "correct.py"

BASELINE = """
import sys, time
import torch
from graders.registry import load_grader
from sandbox.api import RawTensor
grader = load_grader(sys.argv[2])
plan = grader.plan(1234, "cpu")
namespace = {}
exec(compile(open(sys.argv[1]).read(), "submission.py", "exec"), namespace)
for call in plan.calls:
    args = [torch.frombuffer(bytearray(a.data), dtype=getattr(torch, a.dtype)).reshape(a.shape)
            for a in call.args]
    namespace[call.function](*args)
"""


def compute_alone(repeats: int, task: str, grader_name: str, solution: Path) -> float:
    """Median seconds of plan + learner functions + judge in-process (no sandbox)."""
    import torch

    from graders.registry import load_grader
    from graders.tensors import to_raw
    from sandbox.api import CallResult, SandboxResult

    grader = load_grader(grader_name)
    namespace: dict[str, object] = {}
    exec(compile(solution.read_text(), "submission.py", "exec"), namespace)  # our own solution
    source = solution.read_text()
    times = []
    for seed in range(repeats):
        started = time.perf_counter()
        plan = grader.plan(seed, "cpu")
        results = []
        for call in plan.calls:
            args = [
                torch.frombuffer(bytearray(a.data), dtype=getattr(torch, a.dtype)).reshape(a.shape)
                for a in call.args
            ]
            raw = to_raw(namespace[call.function](*args))  # type: ignore[operator]
            results.append(CallResult(call.function, call.label, "ok", "torch.Tensor", raw))
        grader.judge(task, plan, SandboxResult("ok", "", tuple(results)), source)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def naive_baseline(repeats: int, grader_name: str, solution: Path) -> float:
    times = []
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO)}
    for _ in range(repeats):
        started = time.perf_counter()
        command = [sys.executable, "-c", BASELINE, str(solution), grader_name]
        subprocess.run(command, check=True, env=env)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def _enqueue(sessions, task: str, data: bytes, count: int) -> list[int]:
    """Queue ``count`` copies in one transaction, so a burst reaches the worker at once."""
    async with sessions() as session, session.begin():
        return [
            (await queue_submission(session, data, filename="correct.py", task_ref=task))[0]
            for _ in range(count)
        ]


async def _wait_done(sessions, ids: list[int], poll_s: float = 0.005) -> None:
    """Poll with a read-only session (a snapshot: it never blocks the worker's writes)."""
    while True:
        async with sessions() as session:
            pending = await session.scalar(
                select(func.count())
                .select_from(Submission)
                .where(Submission.id.in_(ids), Submission.status.in_(("queued", "grading")))
            )
        if not pending:
            return
        await asyncio.sleep(poll_s)


async def queue_bench(
    jobs: int, burst: int, task: str, solution: Path, url: str | None = None
) -> tuple[list[float], float, list[float], str]:
    if url is None:
        workdir = Path(tempfile.mkdtemp(prefix="brrrbot-bench-"))
        url = f"sqlite+aiosqlite:///{workdir / 'bench.sqlite3'}"
    engine = make_engine(url)
    await migrate.upgrade(engine)
    sessions = make_sessionmaker(engine)
    reads = make_sessionmaker(engine, read_only=True)
    async with sessions() as session, session.begin():
        await add_member(session)
    env = {**os.environ, "DATABASE_URL": url, "QUESTS_DIR": str(REPO / "quests")}
    env["PYTHONPATH"] = str(REPO)
    env["LOG_LEVEL"] = "WARNING"
    command = [sys.executable, "-m", "bot", "worker", "--count", "1"]
    worker = subprocess.Popen(command, env=env)  # noqa: ASYNC220 - started once, before timing
    data = solution.read_bytes()
    try:
        await _wait_done(reads, await _enqueue(sessions, task, data, 3))  # warm-up
        latencies = []
        for _ in range(jobs):
            started = time.perf_counter()
            await _wait_done(reads, await _enqueue(sessions, task, data, 1))
            latencies.append(time.perf_counter() - started)
        started = time.perf_counter()
        ids = await _enqueue(sessions, task, data, burst)
        await _wait_done(reads, ids, poll_s=0.05)  # rarely: the bench must not steal CPU
        drain_s = time.perf_counter() - started
        async with reads() as session:
            verdicts = (
                await session.execute(select(Submission.verdict).where(Submission.id.in_(ids)))
            ).scalars()
            verdicts = list(verdicts)
            grading = [v["duration_s"] for v in verdicts]
            devices = sorted({v.get("device", "?") for v in verdicts})
            statuses = sorted({v["status"] for v in verdicts})
    finally:
        worker.terminate()
        worker.wait()
        await engine.dispose()
    return latencies, drain_s, grading, f"{'/'.join(statuses)} on {'/'.join(devices)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--baseline-runs", type=int, default=5)
    parser.add_argument("--task", default=DEFAULT_TASK, help="a build task, QUEST/TASK")
    parser.add_argument("--solution", type=Path, default=DEFAULT_SOLUTION)
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="queue in a throwaway PostgreSQL server (needs its binaries) instead of SQLite",
    )
    args = parser.parse_args()

    content = load_content(REPO / "quests")
    _, task = content.find_task(args.task)
    assert isinstance(task, BuildTask), f"{args.task} is not a build task"

    compute = compute_alone(20, args.task, task.grader, args.solution)
    server = None
    if args.postgres:
        from tests.postgres_server import PostgresServer

        server = PostgresServer()
        server.start()
    try:
        url = asyncio.run(server.create_database(migrated=False)) if server else None
        latencies, drain_s, grading, outcome = asyncio.run(
            queue_bench(args.jobs, args.burst, args.task, args.solution, url)
        )
    finally:
        if server is not None:
            server.stop()
    baseline = naive_baseline(args.baseline_runs, task.grader, args.solution)
    latency = statistics.median(latencies)
    in_worker = statistics.median(grading)
    drain_rate = args.burst / drain_s
    compute_rate = 1 / compute
    rows = [
        ("task, and the burst's verdicts", f"{args.task}: {outcome}"),
        ("queue database", "PostgreSQL (LISTEN/NOTIFY)" if args.postgres else "SQLite (polling)"),
        ("compute alone (plan + learner code + judge, in-process)", f"{compute * 1e3:.1f} ms"),
        ("grading in a warm worker, sandbox included", f"{in_worker * 1e3:.1f} ms"),
        ("sandbox overhead per job (worker - compute)", f"{(in_worker - compute) * 1e3:.1f} ms"),
        (f"queue-to-result, warm worker, {args.jobs} jobs", f"{latency * 1e3:.1f} ms"),
        ("naive baseline: fresh process + import torch per job", f"{baseline * 1e3:.1f} ms"),
        ("speed-up over the baseline", f"{baseline / latency:.1f}x"),
        (f"burst of {args.burst}: drain rate", f"{drain_rate:.1f} jobs/s in {drain_s:.2f} s"),
        ("rate compute alone allows (one worker)", f"{compute_rate:.1f} jobs/s"),
        ("burst drain rate / compute-alone rate", f"{drain_rate / compute_rate:.0%}"),
        ("rate in-worker grading allows (one worker)", f"{1 / in_worker:.1f} jobs/s"),
        ("burst drain rate / in-worker grading rate", f"{drain_rate * in_worker:.0%}"),
    ]
    for label, value in rows:
        print(f"{label:<56} {value}")


if __name__ == "__main__":
    main()
