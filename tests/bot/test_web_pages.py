"""The public web pages through the real bot and the loopback fake: a server's pages answer
only once a moderator runs ``/admin setup web:true``, and then the replies and the weekly post
link to pages that answer; ``web:false`` takes them back; the pages' listener never serves the
operations routes or the API; and without ``WEB_BASE_URL`` nothing links anywhere.

One bot for the module (no grading workers: a learner's pass is written as a worker writes a
verdict, and the bot settles it).  ``WEB_BASE_URL`` comes from the ``.env`` file in the bot's
working directory, so a test can take it away with a restart, as an operator would.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import re
import socket
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import aiohttp
import pytest
import pytest_asyncio

from bot.presentation.board_embeds import WEB_PAGE, WEEK_ON_THE_WEB
from fakediscord import Message, User
from graders.base import SPEED_INSTRUMENT, SpeedResult
from tests.bot.conftest import CORRECT, World, start_world
from tests.bot.worker_verdicts import query, submit_and_pass
from tests.support import BUILD_TASK

pytestmark = pytest.mark.asyncio(loop_scope="module")

URL = re.compile(r"https?://[^\s<>)\"\\]+")


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Scene:
    world: World
    http: aiohttp.ClientSession
    web: str  # the pages' listener, which is also WEB_BASE_URL while it is set
    ops: str  # the HTTP_PORT listener: /metrics, /healthz, the API
    learner: User  # listed, with XP and a speed result
    hidden: User  # with XP, hidden by /privacy hide
    linking: bool = True  # WEB_BASE_URL is set in the bot's .env

    @property
    def root(self) -> str:
        return f"{self.web}/g/{self.world.guild.id}"

    def pages(self) -> list[str]:
        """Every kind of page of the server, the listed learner's included."""
        return [
            f"{self.root}/",
            f"{self.root}/xp/week",
            f"{self.root}/xp/month",
            f"{self.root}/xp/all",
            f"{self.root}/speed",
            f"{self.root}/speed/{BUILD_TASK}",
            f"{self.root}/map",
            f"{self.root}/members/{self.learner.id}",
        ]

    async def status(self, url: str, method: str = "GET") -> int:
        async with self.http.request(method, url) as response:
            await response.read()
            return response.status

    async def statuses(self, urls: list[str]) -> dict[str, int]:
        return {url: await self.status(url) for url in urls}

    async def reply(self, user: User, command: str, /, **options: object) -> Message:
        return await (await self.world.slash(user, command, **options)).original(timeout=15)

    async def web_setting(self, on: bool) -> str:
        """``/admin setup web:`` by the owner; the setup summary."""
        return (await self.reply(self.world.owner, "admin setup", web=on)).content

    async def set_linking(self, on: bool) -> None:
        """Give or take away ``WEB_BASE_URL`` (the bot's ``.env``) and restart the bot."""
        if self.linking == on:
            return
        dotenv = self.world.workdir / ".env"
        if on:
            dotenv.write_text(f"WEB_BASE_URL={self.web}\n")
        else:
            dotenv.unlink()
        old = self.world.fake.gateway.session
        await self.world.bot.stop()
        await self.world.bot.start()
        await self.world.fake.wait_until_connected(timeout=30, replacing=old)
        self.linking = on

    async def weekly_post(self) -> Message:
        """``/admin post-leaderboard`` by the owner; the post it made (its reply links to it)."""
        posted = await self.reply(self.world.owner, "admin post-leaderboard")
        jump = re.search(r"https://discord\.com/channels/\d+/\d+/(\d+)", posted.content)
        assert jump, posted.content
        return next(
            m for m in self.world.fake.messages_in(self.world.quests) if m.id == int(jump[1])
        )

    async def links_in_replies(self) -> dict[str, list[str]]:
        """The web addresses in each reply and post that may carry one: the XP and speed
        boards, the listed and the hidden member's /profile, and a weekly post."""
        asker = self.world.learner()
        board = await self.reply(asker, "leaderboard", period="all")
        speed = await self.reply(asker, "leaderboard", board="speed", task=BUILD_TASK)
        profile = await self.reply(asker, "profile", member=self.learner)
        hidden = await self.reply(self.hidden, "profile")
        weekly = await self.weekly_post()
        return {
            name: _links(message)
            for name, message in (
                ("leaderboard", board),
                ("speed", speed),
                ("profile", profile),
                ("hidden profile", hidden),
                ("weekly post", weekly),
            )
        }


def assert_security_headers(headers: Mapping[str, str]) -> None:
    """What every page carries, an error page too: no script, nothing from elsewhere, no
    framing, no sniffing, no referrer."""
    csp = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
    assert csp["default-src"] == "'none'" and "script-src" not in csp
    assert csp["frame-ancestors"] == "'none'"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Frame-Options"] == "DENY"


def _links(message: Message) -> list[str]:
    """Every web address a message carries (its text, its embeds' text and links), less the
    Discord jump links and picture attachments."""
    text = json.dumps([message.content, message.embeds])
    return [
        url
        for url in URL.findall(text)
        if not url.startswith(("https://discord.com/", "attachment://"))
    ]


async def _passes_with_a_speed_result(world: World, user: User) -> None:
    """``user`` submits; it passes with a speed trial, written as a worker writes a verdict;
    until the bot has recorded the result."""
    trial = SpeedResult(
        ratio=2.5,
        learner_s=0.008,
        reference_s=0.02,
        spread=0.05,
        pairs=11,
        device="NVIDIA H200",
        instrument=SPEED_INSTRUMENT,
        board_ratio=2.3,
    )
    await submit_and_pass(world, user, finished_at=datetime.now(UTC), speed=trial)
    deadline = time.monotonic() + 30
    while query(world, "SELECT COUNT(*) FROM speed_results") != [(1,)]:
        assert time.monotonic() < deadline, "the bot never recorded the speed result"
        await asyncio.sleep(0.05)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def scene(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Scene]:
    tmp = tmp_path_factory.mktemp("web")
    web, ops = f"http://127.0.0.1:{_free_port()}", f"http://127.0.0.1:{_free_port()}"
    (tmp / ".env").write_text(f"WEB_BASE_URL={web}\n")
    env = {"WEB_PORT": web.rsplit(":", 1)[1], "HTTP_PORT": ops.rsplit(":", 1)[1]}
    async for world in start_world(tmp, workers=0, extra_env=env):
        async with aiohttp.ClientSession() as http:
            setup = await world.slash(world.owner, "admin setup", channel=world.quests)
            assert "The daily quest goes to" in (await setup.original(timeout=15)).content
            learner, hidden = world.learner(), world.learner()
            await _passes_with_a_speed_result(world, learner)
            grant = await world.slash(world.owner, "admin xp", member=hidden, amount=30, reason="t")
            assert "+30 XP" in (await grant.original(timeout=15)).content
            hide = await (await world.slash(hidden, "privacy hide")).original(timeout=15)
            assert hide.ephemeral
            yield Scene(world, http, web, ops, learner, hidden)


async def test_before_opting_in_every_page_answers_404_and_nothing_links(scene: Scene) -> None:
    await scene.set_linking(True)
    summary = await scene.web_setting(False)
    assert "The boards, map and member pages are not on the web." in summary
    answered = await scene.statuses(scene.pages())
    assert set(answered.values()) == {404}, answered
    async with scene.http.get(f"{scene.root}/") as response:
        assert response.headers["Cache-Control"] == "no-store"  # an error page is never reused
        assert_security_headers(response.headers)
    found = await scene.links_in_replies()
    assert list(found) == ["leaderboard", "speed", "profile", "hidden profile", "weekly post"]
    assert not any(found.values()), found


async def test_web_true_publishes_the_pages_and_every_reply_links_to_one_that_answers(
    scene: Scene,
) -> None:
    await scene.set_linking(True)
    summary = await scene.web_setting(True)
    assert f"The boards, map and member pages are public at <{scene.root}/>." in summary
    answered = await scene.statuses(scene.pages())
    assert {url for url, status in answered.items() if status != 200} == set()
    async with scene.http.get(f"{scene.root}/") as response:
        assert response.headers["Cache-Control"] == "public, max-age=60"
        assert_security_headers(response.headers)

    found = await scene.links_in_replies()
    assert found == {
        "leaderboard": [f"{scene.root}/xp/all"],
        "speed": [f"{scene.root}/speed/{BUILD_TASK}"],
        "profile": [f"{scene.root}/members/{scene.learner.id}"],
        "hidden profile": [],  # their page answers 404: no link to it
        "weekly post": [f"{scene.root}/xp/week"],
    }
    linked = [url for urls in found.values() for url in urls]
    assert await scene.statuses(linked) == dict.fromkeys(linked, 200)
    # the page a link to the hidden member would name is not there
    assert await scene.status(f"{scene.root}/members/{scene.hidden.id}") == 404


async def test_no_page_shows_the_code_a_member_submitted(scene: Scene) -> None:
    """The listed learner passed with ``CORRECT``: no line of it is on any page, theirs
    included."""
    await scene.set_linking(True)
    await scene.web_setting(True)
    code = [line.strip() for line in CORRECT.decode().splitlines() if len(line.strip()) > 20]
    assert len(code) > 5
    for url in scene.pages():
        async with scene.http.get(url) as response:
            assert response.status == 200, url
            body = html.unescape(await response.text())
        shown = [line for line in code if line in body]
        assert not shown, (url, shown)


async def test_the_replies_say_where_in_their_own_words(scene: Scene) -> None:
    """The /profile line and the weekly post's last line read as they are written."""
    await scene.set_linking(True)
    await scene.web_setting(True)
    profile = await scene.reply(scene.learner, "profile")
    member = f"{scene.root}/members/{scene.learner.id}"
    assert profile.content.splitlines()[-1] == f"{WEB_PAGE}: <{member}>"
    weekly = await scene.weekly_post()
    last = weekly.embeds[0]["description"].splitlines()[-1]
    assert last == f"{WEEK_ON_THE_WEB}: {scene.root}/xp/week"


async def test_the_pages_listener_serves_no_operations_routes_and_no_api(scene: Scene) -> None:
    await scene.set_linking(True)
    await scene.web_setting(True)
    for path in ("/metrics", "/healthz", "/api/v1/submissions", "/api/v1/submissions/1"):
        assert await scene.status(scene.web + path) == 404, path
    assert await scene.status(scene.web + "/api/v1/submissions", "POST") == 404
    # still served where they belong
    assert await scene.status(scene.ops + "/metrics") == 200
    assert await scene.status(scene.ops + "/healthz") in (200, 503)  # 503 until ready
    assert await scene.status(scene.ops + "/api/v1/submissions", "POST") == 401  # no token


async def test_web_false_takes_every_page_and_link_back(scene: Scene) -> None:
    await scene.set_linking(True)
    assert "public at" in await scene.web_setting(True)
    assert await scene.status(f"{scene.root}/") == 200
    summary = await scene.web_setting(False)
    assert "The boards, map and member pages are not on the web." in summary
    answered = await scene.statuses(scene.pages())
    assert set(answered.values()) == {404}, answered
    found = await scene.links_in_replies()
    assert not any(found.values()), found


async def test_without_web_base_url_nothing_links_and_setup_says_what_to_set(
    scene: Scene,
) -> None:
    await scene.set_linking(False)
    summary = await scene.web_setting(True)
    assert (
        "The boards, map and member pages are public, but the bot's operator must set "
        "WEB_BASE_URL for anyone to reach them." in summary
    )
    # the pages are served (WEB_PORT is set) but no reply knows their public address
    assert await scene.status(f"{scene.root}/members/{scene.learner.id}") == 200
    found = await scene.links_in_replies()
    assert not any(found.values()), found
    await scene.web_setting(False)
