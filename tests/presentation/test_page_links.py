"""Links to a server's public pages: none unless the server opted in, the bot serves the pages
and the operator gave their public address; else the addresses ``bot.web.site`` answers, and
the replies and posts that carry them."""

from __future__ import annotations

import re

import pytest

from bot.config import Settings
from bot.content import BadTaskRef
from bot.db.models import Guild
from bot.presentation.board_embeds import (
    WEB_PAGE,
    WEEK_ON_THE_WEB,
    leaderboard_embed,
    profile_text,
    weekly_post_embed,
)
from bot.presentation.page_links import (
    WEB_PAGE_SIZE,
    PageLinks,
    links,
    missing_settings,
    page_links,
    web_page_holding,
)
from bot.presentation.speed_board_embeds import speed_board_embed
from bot.progress.highlights import WeeklyHighlights
from bot.progress.leaderboard import Entry, Page
from bot.progress.levels import progress
from bot.progress.profile import Profile
from bot.progress.speed_results import DeviceBoard, SpeedBoard
from bot.progress.streaks import Streak
from bot.web import site
from tests.presentation.discord_check import assert_sendable

BASE = "https://brrr.example.org"
GUILD = 123456789012345678
LINKS = PageLinks(BASE, GUILD)


def settings(**values: object) -> Settings:
    """Settings as the environment would give them, with no ``.env`` read."""
    return Settings(_env_file=None, **values)  # type: ignore[call-arg]


def guild(*, web_pages: bool) -> Guild:
    return Guild(id=GUILD, web_pages=web_pages)


SERVING = {"web_port": 8081, "web_base_url": BASE}


@pytest.mark.parametrize(
    ("given", "published"),
    [
        ({"web_port": 8081, "web_base_url": None}, True),  # no public address
        ({"web_port": 0, "web_base_url": BASE}, True),  # the pages are not served
        ({"web_port": 0, "web_base_url": None}, True),
        (SERVING, False),  # the server has not opted in
    ],
)
def test_no_links_unless_published_served_and_addressed(
    given: dict[str, object], published: bool
) -> None:
    assert page_links(settings(**given), guild(web_pages=published)) is None


def test_no_server_no_links() -> None:
    assert page_links(settings(**SERVING), None) is None


def test_a_published_server_links_under_the_base_url() -> None:
    found = page_links(settings(**SERVING), guild(web_pages=True))
    assert found == LINKS
    # the settings strip a trailing slash; an address given directly is stripped too
    assert page_links(settings(web_port=8081, web_base_url=BASE + "/"), guild(web_pages=True))
    assert links(base_url=BASE + "/", serving=True, guild_id=GUILD, published=True) == LINKS


def test_the_addresses_are_the_sites_routes() -> None:
    root = f"{BASE}/g/{GUILD}"
    assert LINKS.home() == f"{root}/"
    assert LINKS.board("week") == f"{root}/xp/week"
    assert LINKS.board("month", 1) == f"{root}/xp/month"  # page 1 is the board's own address
    assert LINKS.board("all", 3) == f"{root}/xp/all?page=3"
    assert LINKS.member(42) == f"{root}/members/42"
    assert LINKS.speed_board("go-brrrr/matmul-three-ways") == (
        f"{root}/speed/go-brrrr/matmul-three-ways"
    )
    assert LINKS.speed_boards() == f"{root}/speed"
    assert LINKS.map() == f"{root}/map"


def test_every_link_matches_a_route_of_the_site() -> None:
    """Each address, less the base, is one the pages' application routes (not its 404)."""
    app = site.make_site(None, None)  # type: ignore[arg-type]
    patterns = [
        re.compile(resource.get_info().get("pattern", re.escape(resource.canonical)))
        for resource in app.router.resources()
    ]
    for url in (
        LINKS.home(),
        LINKS.board("week"),
        LINKS.board("all", 2).split("?")[0],
        LINKS.member(2**63 - 1),
        LINKS.speed_board("go-brrrr/matmul-three-ways"),
        LINKS.speed_boards(),
        LINKS.map(),
    ):
        path = url.removeprefix(BASE)
        assert any(p.fullmatch(path) for p in patterns), path


def test_bad_boards_and_tasks_are_refused_not_linked() -> None:
    with pytest.raises(ValueError):
        LINKS.board("year")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        LINKS.board("week", 0)
    for ref in ("not a ref", "quest/../../metrics", "Quest/Task", "a/b/c"):
        with pytest.raises(BadTaskRef):
            LINKS.speed_board(ref)


def test_a_discord_page_links_to_the_web_page_that_shows_its_first_row() -> None:
    assert WEB_PAGE_SIZE == site.PAGE_SIZE  # the web's board pages, as the site cuts them
    assert [web_page_holding(n) for n in (1, 2, 50, 51, 100, 101)] == [1, 1, 1, 2, 2, 3]
    assert LINKS.board_holding("week", 1) == LINKS.board("week")
    assert LINKS.board_holding("month", 41) == LINKS.board("month")  # Discord's page 5 of 10
    assert LINKS.board_holding("all", 51) == LINKS.board("all", 2)  # Discord's page 6


def test_the_settings_the_operator_must_still_give() -> None:
    assert missing_settings(settings(web_port=0)) == ("WEB_PORT", "WEB_BASE_URL")
    assert missing_settings(settings(web_port=8081)) == ("WEB_BASE_URL",)
    assert missing_settings(settings(web_port=0, web_base_url=BASE)) == ("WEB_PORT",)
    assert missing_settings(settings(**SERVING)) == ()


# --- the replies that carry them ------------------------------------------------------------


def _page() -> Page:
    top = tuple(Entry(rank, rank, 1000 + rank, f"member {rank}", 100 - rank) for rank in (1, 2))
    return Page("week", "2026-W48", 1, 1, 2, top, caller=top[0])


def test_the_leaderboard_title_links_to_its_board_only_when_given() -> None:
    plain = leaderboard_embed(_page(), period_label="this week", caller_name="member 1")
    assert plain.url is None and "url" not in plain.to_dict()
    url = LINKS.board("week")
    linked = leaderboard_embed(_page(), period_label="this week", caller_name="member 1", url=url)
    assert linked.url == url
    assert linked.description == plain.description and linked.title == plain.title
    assert_sendable(embeds=[linked])


def test_the_speed_board_title_links_to_its_page_only_when_given() -> None:
    board = SpeedBoard(1, "go-brrrr/matmul-three-ways", (DeviceBoard("NVIDIA H200", 0, ()),))
    assert "url" not in speed_board_embed(board, title="Three ways").to_dict()
    url = LINKS.speed_board(board.task_ref)
    linked = speed_board_embed(board, title="Three ways", url=url)
    assert linked.url == url
    assert_sendable(embeds=[linked])


def _profile() -> Profile:
    return Profile(7, 250, progress(250), 2, 40, Streak(3, 5), ("a/x",), ())


def test_the_profile_names_the_members_page_only_when_given() -> None:
    plain = profile_text(_profile(), "Ada")
    assert "http" not in plain and WEB_PAGE not in plain
    url = LINKS.member(42)
    linked = profile_text(_profile(), "Ada", page_url=url)
    assert linked == f"{plain}\n{WEB_PAGE}: <{url}>"  # in <>: Discord unfurls no preview


def test_the_weekly_post_ends_with_the_week_board_only_when_given() -> None:
    highlights = WeeklyHighlights("2026-W48", (), (), ())
    plain = weekly_post_embed("2026-W48", highlights, (), None)
    assert "http" not in plain.description
    url = LINKS.board("week")
    linked = weekly_post_embed("2026-W48", highlights, (), None, board_url=url)
    assert linked.description.splitlines()[-1] == f"{WEEK_ON_THE_WEB}: {url}"
    assert_sendable(embeds=[linked])
