"""One seeded study group per test module, its pages served on a free port, on a fixed clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncEngine

from bot import clock
from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from tests.web.seeded import Seeded, now, seed, serving


@dataclass
class Site:
    url: str
    seeded: Seeded
    http: aiohttp.ClientSession
    engine: AsyncEngine

    def page(self, path: str) -> str:
        return f"{self.url}/g/{self.seeded.guild_id}{path}"


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def site(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Site]:
    database = Path(tmp_path_factory.mktemp("web")) / "web.sqlite3"
    engine = make_engine(f"sqlite+aiosqlite:///{database}")
    moment = now()
    previous = clock.set_source(lambda: moment)
    try:
        await migrate.upgrade(engine)
        seeded = await seed(make_sessionmaker(engine), now=moment)
        async with serving(engine) as url, aiohttp.ClientSession() as http:
            yield Site(url, seeded, http, engine)
    finally:
        clock.set_source(previous)
        await engine.dispose()
