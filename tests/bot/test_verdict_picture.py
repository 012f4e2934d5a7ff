"""A verdict placed on the roofline goes out with its picture as the embed's image, and the
week's post with its fastest result's; a picture that cannot be drawn never holds either back."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from PIL import Image

import bot.exts.delivery as delivery
import bot.exts.schedule as schedule_module
from bot.config import Settings
from bot.delivery.transport import PendingVerdict
from bot.exts.schedule import DiscordPosts
from bot.posting.post_transport import WeeklyPost
from bot.progress.awards import Award
from bot.progress.highlights import WeeklyHighlights
from bot.progress.periods import week_of
from bot.progress.speed_results import FastestOfWeek
from graders.base import Check, SpeedResult, Verdict
from graders.bottleneck import RooflineFigures
from tests import timeline

PLACED = SpeedResult(
    ratio=1.2,
    learner_s=0.002,
    reference_s=0.0024,
    spread=0.05,
    pairs=50,
    device="AMD EPYC 7B13",
    achieved_gbs=4.2,
    peak_gbs=17.0,
    moved_bytes=8_392_704,
    flops=6_291_456,
    achieved_gflops=3.1,
    reference_gflops=2.6,
    peak_gflops=150.0,
)


class _Map:
    def find_task(self, ref: str) -> Any:
        raise KeyError(ref)  # a task since taken off the map: its ref stands for its title


def _transport() -> delivery.DiscordTransport:
    async def guild_map(guild_id: int) -> _Map:
        return _Map()

    bot = SimpleNamespace(services=SimpleNamespace(guild_map=guild_map))
    return delivery.DiscordTransport(bot)  # type: ignore[arg-type]


def _pending(speed: SpeedResult | None) -> PendingVerdict:
    verdict = Verdict("q/task", "passed", 1.0, (Check("right", True, "ok"),), "", speed=speed)
    award = Award(old_level=1, new_level=1, xp_added=0, streak_bonus=0, new_total=0, streak=0)
    return PendingVerdict(7, 1, 2, "q/task", verdict, award, None, None, None, None)


async def test_a_placed_verdict_carries_its_picture_as_the_embeds_image() -> None:
    content, embed, files = await _transport()._message(_pending(PLACED))
    assert content.startswith("Passed **q/task**")
    assert embed.to_dict()["image"]["url"] == "attachment://roofline.png"
    (picture,) = files
    assert picture.filename == "roofline.png"
    assert Image.open(io.BytesIO(picture.fp.read())).size == (800, 500)


async def test_a_verdict_without_figures_has_no_picture() -> None:
    _, embed, files = await _transport()._message(_pending(None))
    assert files == [] and "image" not in embed.to_dict()


async def test_a_picture_that_cannot_be_drawn_leaves_the_verdict_without_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(chart: object) -> bytes:
        raise OSError("the font file is gone")

    monkeypatch.setattr(delivery, "roofline_png", broken)
    with caplog.at_level(logging.ERROR, logger="bot.exts.delivery"):
        content, embed, files = await _transport()._message(_pending(PLACED))
    assert content.startswith("Passed **q/task**")
    assert files == [] and "image" not in embed.to_dict()
    assert "submission 7: the roofline picture failed" in caplog.text


def _week(figures: RooflineFigures | None) -> WeeklyPost:
    week = week_of(timeline.now().date(), ZoneInfo("UTC"))
    fastest = FastestOfWeek(
        week.key, "q/task", 3, 1, 42, "ada", 1.1, 1.2, "AMD EPYC 7B13", timeline.now(), figures
    )
    highlights = WeeklyHighlights(week.key, (), (), (), fastest)
    return WeeklyPost(1, week, highlights, (), "A task")


async def _no_server(guild_id: int) -> None:
    return None  # no row: the post links to no web page


def _schedule() -> DiscordPosts:
    services = SimpleNamespace(guild=_no_server, settings=Settings(_env_file=None))  # type: ignore[call-arg]
    bot = SimpleNamespace(get_guild=lambda guild_id: None, services=services)
    return DiscordPosts(bot)  # type: ignore[arg-type]


FIGURES = RooflineFigures(8_392_704, 6_291_456, 3.1, 2.6, 17.0, 150.0, None)


async def test_the_weeks_post_shows_the_fastests_picture_and_goes_out_without_a_broken_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (part,) = await _schedule().weekly_parts(_week(FIGURES))
    assert [name for name, _ in part.images] == ["week.png", "roofline.png"]
    assert part.embeds[1].to_dict()["image"]["url"] == "attachment://roofline.png"
    (part,) = await _schedule().weekly_parts(_week(None))  # never placed: no picture
    assert [name for name, _ in part.images] == ["week.png"] and len(part.embeds) == 1

    def broken(chart: object) -> bytes:
        raise OSError("the font file is gone")

    monkeypatch.setattr(schedule_module, "roofline_png", broken)
    with caplog.at_level(logging.ERROR, logger="bot.exts.schedule"):
        (part,) = await _schedule().weekly_parts(_week(FIGURES))
    assert [name for name, _ in part.images] == ["week.png"] and len(part.embeds) == 1
    assert "the fastest result's roofline picture failed" in caplog.text
