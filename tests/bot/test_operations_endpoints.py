"""/healthz and /metrics of a real ``brrrbot run`` against the fake Discord, over loopback."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from tests.bot.conftest import World, start_world

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PORT = _free_port()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    env = {"HTTP_PORT": str(PORT)}
    async for started in start_world(tmp_path_factory.mktemp("ops"), workers=0, extra_env=env):
        yield started


def _get(path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{PORT}{path}", timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


async def _healthy(timeout: float = 20.0) -> dict[str, object]:
    """/healthz once it says 200 (the bot is ready about 2 s after its last GUILD_CREATE)."""
    deadline = time.monotonic() + timeout
    while True:
        status, body = await asyncio.to_thread(_get, "/healthz")
        if status == 200:
            return dict(json.loads(body))
        if time.monotonic() > deadline:
            raise AssertionError(f"/healthz still {status} after {timeout:.0f} s: {body!r}")
        await asyncio.sleep(0.1)


def _samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text.decode())
        for sample in family.samples
    }


async def test_healthz_reports_a_connected_bot(world: World) -> None:
    report = await _healthy()
    assert report == {"status": "ok", "discord": "ok", "database": "ok", "workers": 0}


async def test_metrics_count_the_commands_the_bot_answered(world: World) -> None:
    await _healthy()
    member = world.learner()
    for _ in range(2):
        await (await world.slash(member, "help")).original(timeout=15)
    status, body = await asyncio.to_thread(_get, "/metrics")
    assert status == 200
    samples = _samples(body)
    helped = [v for (name, labels), v in samples.items() if "help" in dict(labels).values()]
    assert helped and max(helped) >= 2, sorted(k for k in samples if "interaction" in k[0])
    assert samples[("brrrbot_queue_depth", ())] == 0
