"""Benchmark: what near-copy fingerprints add to a verdict's settlement, in SQLite.

1. Fingerprinting alone (``bot.similarity.fingerprints.fingerprints``) of solutions from a few
   KB up to the upload limit (``MAX_PY_BYTES``' default): the median per size and per KB, to
   show it grows linearly.
2. Settling a passing verdict (``bot.delivery.outcomes.settle``) on a server where ``--members``
   other members already passed the same task (their fingerprints indexed), with fingerprinting
   (the build task's interface given) against the baseline measured in the same run: the same
   settlement without it.  Target: the median difference for a typical solution (a few KB)
   at most 20 ms.
3. ``--catalogue``: the similarity figures per task (``tests.similarity_catalogue``).

    .venv/bin/python -m bench.similarity [--members 300] [--runs 30] [--catalogue]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select

from bot.config import Settings
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import NearCopy, Submission
from bot.delivery.outcomes import settle
from bot.progress.members import ensure_member
from bot.similarity.fingerprints import fingerprints
from graders.base import Check, Verdict
from graders.registry import load_grader, registry
from tests.graders.catalogue import catalogue_for

GUILD_ID = 1
TASK = "inference-engine/kv-cache-decode"
GRADER = "kv_cache_decode"
NOW = datetime(2027, 1, 18, 12, 0, tzinfo=UTC)
TARGET_MS = 20.0
UPLOAD_LIMIT = Settings.model_fields["max_py_bytes"].default


def every_solution() -> str:
    """The catalogue's references and styles, one after another: real code to cut sizes from."""
    parts = []
    for grader in sorted(registry()):
        catalogue = catalogue_for(grader)
        parts.append(catalogue.reference.read_text())
        parts.extend(style.code for style in catalogue.styles)
    return "\n\n".join(parts)


def solution_of(size: int, corpus: str) -> str:
    """About ``size`` bytes of real code, cut at a line (repeated when the corpus is shorter)."""
    text = corpus
    while len(text) < size:
        text += "\n\n" + corpus
    cut = text[:size]
    return cut[: cut.rfind("\ndef ") + 1]  # before a top-level def: it tokenizes


def median_ms(run: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()  # type: ignore[operator]
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def fingerprint_costs(runs: int) -> None:
    corpus = every_solution()
    interface = tuple(load_grader(GRADER).interface)
    print(f"fingerprinting alone (median of {runs}), up to the upload limit of {UPLOAD_LIMIT:,} B")
    print(f"{'bytes':>9} {'ms':>9} {'ms/KB':>7} {'fingerprints':>13}")
    for size in (2_000, 4_000, 16_000, 64_000, UPLOAD_LIMIT):
        source = solution_of(size, corpus)
        ms = median_ms(
            lambda s=source: fingerprints(s, interface), max(3, runs // (size // 4000 + 1))
        )
        count = len(fingerprints(source, interface))
        print(f"{len(source):>9,} {ms:>9.2f} {ms / (len(source) / 1024):>7.3f} {count:>13,}")


async def settlement_costs(members: int, runs: int, size: int) -> None:
    corpus = every_solution()
    interface = tuple(load_grader(GRADER).interface)
    with tempfile.TemporaryDirectory() as folder:
        engine = make_engine(f"sqlite+aiosqlite:///{Path(folder) / 'bench.sqlite3'}")
        try:
            await migrate.upgrade(engine)
            sessions = make_sessionmaker(engine)

            async def submission(user_id: int, code: str) -> int:
                data = code.encode()
                verdict = Verdict(TASK, "passed", 1.0, (Check("correct", True, "ok"),), "")
                async with sessions() as session, session.begin():
                    member = await ensure_member(session, GUILD_ID, user_id, f"user{user_id}")
                    row = Submission(
                        guild_id=GUILD_ID,
                        member_id=member.id,
                        task_ref=TASK,
                        filename="solution.py",
                        file_kind="py",
                        content=data,
                        size_bytes=len(data),
                        sha256=hashlib.sha256(data).hexdigest(),
                        status="passed",
                        score=1.0,
                        verdict=verdict.to_json(),
                        finished_at=NOW,
                    )
                    session.add(row)
                return row.id

            async def settled(submission_id: int, fingerprinting: bool) -> float:
                start = time.perf_counter()
                async with sessions() as session, session.begin():
                    await settle(
                        session,
                        submission_id,
                        None,  # no XP: the bench times what fingerprinting adds
                        NOW,
                        interface=interface if fingerprinting else None,
                    )
                return (time.perf_counter() - start) * 1000

            # the server's history: other members' passing solutions of the task, each its
            # own draw of the corpus's top-level functions, so they share fragments (imports,
            # common calls, whole helpers) as real solutions do, and rarely 85% of them
            chunks = corpus.split("\ndef ")
            rng = random.Random(20270118)

            def drawn() -> str:
                return solution_of(size, "\ndef ".join(rng.sample(chunks, len(chunks))))

            for user in range(members):
                await settled(await submission(10_000 + user, drawn()), True)
            with_prints, without = [], []
            for run in range(runs):
                without.append(await settled(await submission(1 + 2 * run, drawn()), False))
                with_prints.append(await settled(await submission(2 + 2 * run, drawn()), True))
            async with sessions() as session:
                flags = await session.scalar(select(func.count()).select_from(NearCopy))
            code = drawn()
            base, full = statistics.median(without), statistics.median(with_prints)
            print(
                f"settling a passing {len(code):,} B solution with {members} members' solutions "
                f"of the task indexed (median of {runs}):"
            )
            print(f"  baseline, no fingerprints: {base:7.2f} ms")
            print(f"  with fingerprints, flags:  {full:7.2f} ms")
            verdict = "OK" if full - base <= TARGET_MS else "OVER"
            print(f"  added: {full - base:.2f} ms (target <= {TARGET_MS:.0f} ms): {verdict}")
            print(f"  pairs flagged among them all: {flags}")
        finally:
            await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=300)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--size", type=int, default=4_000, help="the typical solution, bytes")
    parser.add_argument("--catalogue", action="store_true", help="print the similarity figures")
    args = parser.parse_args()
    if args.catalogue:
        from tests.similarity_catalogue import every_task, report

        print(report(every_task()))
        return
    fingerprint_costs(args.runs)
    asyncio.run(settlement_costs(args.members, args.runs, args.size))


if __name__ == "__main__":
    main()
