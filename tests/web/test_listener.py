"""The pages' listener: off unless WEB_PORT is set, its own port, and a taken port named."""

from __future__ import annotations

import socket

import aiohttp
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.config import Settings
from bot.errors import ConfigError
from bot.web.site import web_pages
from tests.web.seeded import Names, services


def settings(**values: object) -> Settings:
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def test_the_public_address_is_kept_without_a_trailing_slash() -> None:
    assert settings(web_base_url=" https://brrr.example.org/ ").web_base_url == (
        "https://brrr.example.org"
    )
    assert settings(web_base_url="").web_base_url is None
    assert settings().web_port == 0  # no pages unless the operator asks for them


async def test_no_listener_without_a_port(engine: AsyncEngine) -> None:
    async with web_pages(settings(), services(engine), Names()) as port:
        assert port is None


async def test_the_pages_listen_on_their_own_port(engine: AsyncEngine) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free = probe.getsockname()[1]
    chosen = settings(web_port=free)
    async with (
        web_pages(chosen, services(engine), Names()) as port,
        aiohttp.ClientSession() as http,
        http.get(f"http://127.0.0.1:{port}/g/1/") as response,
    ):
        assert port == free
        assert response.status == 404  # no server has opted in


async def test_a_taken_port_names_the_web_settings(engine: AsyncEngine) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = settings(web_port=taken.getsockname()[1])
        with pytest.raises(ConfigError) as raised:
            async with web_pages(busy, services(engine), Names()):
                pass
    assert str(raised.value).startswith("WEB_PORT: cannot listen on 127.0.0.1:")
    assert "WEB_PORT=0 to turn this listener off" in str(raised.value)
