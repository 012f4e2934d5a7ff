"""The public pages over real HTTP, checked against the seeded facts (tests/web/seeded.py):
what each page lists and in which order, who never appears, how a member who is not public
answers, and every bad address answered with a plain page."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

import pytest
from multidict import CIMultiDict
from sqlalchemy import select

from bot.db.engine import make_sessionmaker
from bot.db.models import Member
from bot.http.server import listening
from bot.progress.public import listed_member
from bot.web.render import markdown
from bot.web.site import make_site
from tests.support import seed_content
from tests.web.conftest import Site
from tests.web.seeded import (
    DELETED_NAME,
    HIDDEN_NAME,
    LEVEL_ROLES,
    ROLE_NAMES,
    RTL_NAME,
    SCRIPT_NAME,
    SPEED_TASK,
    Names,
    services,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


class Tables(HTMLParser):
    """Each table body row's cell texts, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
        elif tag in ("td", "th") and self._in_body:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def rows(html: str) -> list[list[str]]:
    parser = Tables()
    parser.feed(html)
    return parser.rows


async def get(site: Site, path: str, **headers: str) -> tuple[int, str, CIMultiDict[str]]:
    async with site.http.get(site.page(path), headers=headers) as response:
        return response.status, await response.text(), CIMultiDict(response.headers)


EVERY_PAGE = (
    "/",
    "/xp/week",
    "/xp/month",
    "/xp/all?page=2",
    "/speed",
    f"/speed/{SPEED_TASK}",
    "/map",
    "/members/5000",
    "/members/5059",
    "/members/5060",
)


async def test_every_page_of_a_public_server_answers(site: Site) -> None:
    for path in EVERY_PAGE:
        status, body, headers = await get(site, path)
        assert status == 200, (path, body)
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert "<h1>" in body


async def test_a_server_that_has_not_opted_in_answers_404_everywhere(site: Site) -> None:
    """The other server exists, has a member and a setup, but never opted in: every page of it
    answers exactly as a server that does not exist."""
    answers = set()
    for guild in (site.seeded.other_guild, 987654321, 99999999999999999999):
        for path in (*EVERY_PAGE, f"/members/{site.seeded.other_user}"):
            async with site.http.get(f"{site.url}/g/{guild}{path.split('?')[0]}") as response:
                assert response.status == 404, (guild, path)
                answers.add(await response.text())
    assert len(answers) == 1
    assert "There is no page at this address." in answers.pop()


async def test_the_xp_boards_list_every_listed_member_in_order_across_pages(site: Site) -> None:
    expected = site.seeded.by_xp()
    shown: list[list[str]] = []
    for page in (1, 2):
        status, body, _ = await get(site, f"/xp/all?page={page}")
        assert status == 200
        shown += rows(body)
        assert HIDDEN_NAME not in body and DELETED_NAME not in body
    assert [row[1] for row in shown] == [member.name for member in expected]
    assert [int(row[0]) for row in shown] == list(range(1, len(expected) + 1))
    assert [int(row[2].replace(",", "")) for row in shown] == [m.xp for m in expected]
    week = sorted(site.seeded.listed, key=lambda m: -m.week_xp)
    status, body, _ = await get(site, "/xp/week")
    assert [row[1] for row in rows(body)] == [m.name for m in week[:50]]
    assert "page 1 of 2" in body and 'rel="next"' in body
    status, body, _ = await get(site, "/xp/week?page=3")
    assert status == 404 and "this board has 2" in body


async def test_a_hidden_member_page_is_byte_for_byte_a_missing_one(site: Site) -> None:
    """Hidden (``/privacy hide``), deleted (anonymised), never a member, another server's
    member, an id past 64 bits: one answer, so a page is no oracle of who is a member."""
    answers = set()
    for user in (
        site.seeded.hidden_user,
        site.seeded.deleted_user,
        123456789,
        site.seeded.other_user,
        99999999999999999999,
    ):
        status, body, headers = await get(site, f"/members/{user}")
        assert status == 404
        headers.pop("Date")
        answers.add((body, tuple(sorted(headers.items()))))
    assert len(answers) == 1


async def test_an_anonymised_member_is_not_public_even_by_their_rows_own_id(site: Site) -> None:
    """``/privacy delete`` leaves a row whose user id is minus its own id: still nobody's."""
    async with make_sessionmaker(site.engine)() as session:
        row = await session.scalar(select(Member).where(Member.anonymised_at.is_not(None)))
        assert row is not None and row.user_id < 0
        assert await listed_member(session, site.seeded.guild_id, row.user_id) is None
        listed = await session.scalar(select(Member).where(Member.user_id == 5000))
        assert listed is not None
        assert await listed_member(session, site.seeded.guild_id, 5000) == listed


async def test_a_member_page_shows_their_numbers_roles_and_speed(site: Site) -> None:
    by_xp = site.seeded.by_xp()
    rank, member = next((n, m) for n, m in enumerate(by_xp, start=1) if m.user_id == 5002)
    status, body, _ = await get(site, f"/members/{member.user_id}")
    assert status == 200
    assert f"<dd>{member.xp:,}</dd>" in body
    assert f"<dd>#{rank}</dd>" in body
    assert f"<dd>{member.week_xp:,}</dd>" in body
    # the documented curve, written out: level L starts at 25 L (L - 1) XP
    level = max(n for n in range(1, 100) if 25 * n * (n - 1) <= member.xp)
    assert f"<dt>Level</dt><dd>{level}</dd>" in body
    assert level >= max(LEVEL_ROLES)  # stacked: every level role reached is held
    for level_of_role, role_id in LEVEL_ROLES.items():
        assert f"Level {level_of_role}: <bdi>{ROLE_NAMES[role_id]}</bdi>" in body
    speed_rows = rows(body)
    assert len(speed_rows) == 1
    task_title = seed_content().find_task(SPEED_TASK)[1].title
    assert speed_rows[0][:3] == [task_title, "AMD EPYC 7B13", "2.2×"]  # 2.5 * 0.9 ranks


async def test_the_speed_board_ranks_listed_results_with_their_roofline_points(
    site: Site,
) -> None:
    status, body, _ = await get(site, f"/speed/{SPEED_TASK}")
    assert status == 200
    assert HIDDEN_NAME not in body
    shown = rows(body)
    expected = site.seeded.speed
    assert [row[1] for row in shown] == [row.name for row in expected]
    assert [row[2] for row in shown] == [f"{r.board_ratio:.1f}×" for r in expected]
    charts = re.findall(r"<svg class=\"roofline\".*?</svg>", body)
    assert len(charts) == len(expected)
    for chart, result in zip(charts, expected, strict=True):
        # the learner's point sits log10(ratio) decades above the reference's, measured in the
        # picture's own decade spacing (its grid lines)
        ys = sorted(
            float(y) for y in re.findall(r'<line class="grid" x1="\d+" y1="([\d.]+)"', chart)
        )
        decade = ys[1] - ys[0]
        learner_y = float(re.search(r'class="learner" cx="[\d.]+" cy="([\d.]+)"', chart)[1])
        square = re.search(
            r'class="reference" x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)"', chart
        )
        reference_y = float(square[1]) + float(square[2]) / 2
        assert (reference_y - learner_y) / decade == pytest.approx(
            math.log10(result.ratio), abs=0.01
        )
        assert 'role="img"' in chart and "aria-label=" in chart


async def test_every_name_a_member_chose_is_text_not_markup(site: Site) -> None:
    """A display name that is an HTML tag shows as those characters on every page that names
    it; a right-to-left name is isolated so it cannot reorder the text around it."""
    escaped = SCRIPT_NAME.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for path in ("/xp/all?page=2", "/xp/week?page=2", f"/speed/{SPEED_TASK}", "/members/5059"):
        status, body, _ = await get(site, path)
        assert status == 200
        assert "<script" not in body, path
        assert escaped.replace('"', "&#34;") in body, path
    status, body, _ = await get(site, "/members/5060")
    assert f"<h1><bdi>{RTL_NAME}</bdi></h1>" in body
    status, body, _ = await get(site, "/xp/all?page=2")
    assert f"<bdi>{RTL_NAME}</bdi>" in body


async def test_the_map_shows_every_phase_quest_reading_and_task_and_today(site: Site) -> None:
    content = seed_content()
    status, body, _ = await get(site, "/map")
    assert status == 200
    quests = [content.quest(quest_id) for phase in content.phases for quest_id in phase.quests]
    for phase in content.phases:
        assert html_text(phase.title) in body
    for quest in quests:
        assert f'<article id="{quest.id}"' in body
        for reading in quest.readings:
            assert f'href="{html_text(content.library[reading.ref].url)}"' in body
        for task in quest.tasks:
            assert html_text(task.title) in body
    # a server whose schedule starts today shows the map's first quest as today's
    today = re.search(r'<article id="([a-z0-9-]+)" class="quest is-today">', body)
    assert today is not None and today[1] == quests[0].id
    assert body.count("is-today") == 1


def html_text(text: str) -> str:
    """How Jinja's autoescape writes ``text``."""
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
    )


BAD_ADDRESSES = (
    ("/xp/week?page=0", 400),
    ("/xp/week?page=-1", 400),
    ("/xp/week?page=abc", 400),
    ("/xp/week?page=1e3", 400),
    ("/xp/week?page=99999999", 400),
    ("/xp/week?page=999999999999999999999999", 400),
    ("/xp/week?page=%00", 400),
    ("/xp/week?page=3", 404),
    ("/xp/year", 404),
    ("/speed/no-such-quest/no-such-task", 404),
    ("/speed/tensor-puzzles/no-such-task", 404),
    ("/speed/go-brrrr", 404),
    ("/speed/transformer-internals/Stable-Softmax", 404),
    ("/members/-1", 404),
    ("/members/abc", 404),
    ("/members/%3Cscript%3E", 404),
    ("/members/5000%00", 404),
    ("/%E2%80%AE", 404),
    ("/\u0645\u0631\u064a\u0645", 404),
    ("/static/../../etc/passwd", 404),
)


@pytest.mark.parametrize(("path", "status"), BAD_ADDRESSES)
async def test_a_bad_address_gets_a_plain_page_never_a_traceback(
    site: Site, path: str, status: int
) -> None:
    async with site.http.get(site.page(path)) as response:
        body = await response.text()
        assert response.status == status, body
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert "Traceback" not in body and "File " not in body
        assert f"<h1>{status}</h1>" in body


async def test_only_get_is_answered(site: Site) -> None:
    async with site.http.post(site.page("/xp/week"), data=b"x") as response:
        assert response.status == 405
        assert "only answers GET" in await response.text()


async def test_pages_carry_a_strict_csp_and_an_etag(site: Site) -> None:
    status, body, headers = await get(site, "/xp/week")
    csp = dict(part.strip().split(" ", 1) for part in headers["Content-Security-Policy"].split(";"))
    assert csp["default-src"] == "'none'" and csp["style-src"] == "'self'"
    assert "script-src" not in csp  # falls back to 'none': no script runs, inline or not
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "public, max-age=60"
    tag = headers["ETag"]
    status, again, _ = await get(site, "/xp/week", **{"If-None-Match": tag})
    assert status == 304 and again == ""
    status, again, _ = await get(site, "/xp/week", **{"If-None-Match": '"stale"'})
    assert status == 200 and again == body
    async with site.http.get(f"{site.url}/static/site.css") as response:
        assert response.status == 200
        assert response.headers["Content-Type"] == "text/css; charset=utf-8"
        assert "prefers-color-scheme: dark" in await response.text()
    # nothing on a page loads from anywhere but this server
    for path in EVERY_PAGE:
        _, body, _ = await get(site, path)
        for url in re.findall(r'(?:src|href)="([^"#]+)"', body):
            if "/map" in path and url.startswith("https://"):
                continue  # the readings: links a reader follows, never loaded by the page
            assert url.startswith("/"), (path, url)
        assert "<script" not in body and "<img" not in body and "@import" not in body


async def test_the_pages_listener_serves_no_operations_routes(site: Site) -> None:
    for path in ("/metrics", "/healthz", "/api/v1/submissions", "/api/v1/openapi.json", "/"):
        async with site.http.get(f"{site.url}{path}") as response:
            assert response.status == 404, path


class BrokenNames(Names):
    def guild_name(self, guild_id: int) -> str | None:
        raise RuntimeError("secret detail: /etc/brrrbot/.env")


async def test_an_unexpected_failure_is_a_plain_500_that_says_nothing_of_why(
    site: Site, caplog: pytest.LogCaptureFixture
) -> None:
    app = make_site(services(site.engine), BrokenNames())
    async with listening(app, "127.0.0.1", 0) as port:
        url = f"http://127.0.0.1:{port}/g/{site.seeded.guild_id}/xp/week"
        async with site.http.get(url) as response:
            body = await response.text()
    assert response.status == 500
    assert "<h1>500</h1>" in body and "Something went wrong on our side" in body
    assert "secret detail" not in body and "Traceback" not in body
    assert "secret detail" in caplog.text  # the operator's log has it


async def test_quest_markdown_becomes_markup_but_never_raw_html() -> None:
    """A moderator's quest text is Markdown: emphasis, code and lists become markup, while a
    tag in it stays text and a script link or an image is not made."""
    html = str(
        markdown(
            "**Compute** and `torch.mm`\n\n- one\n- two\n\n<script>alert(1)</script> "
            "[click](javascript:alert(1)) ![pixel](https://tracker.example/p.png)"
        )
    )
    assert "<strong>Compute</strong>" in html and "<code>torch.mm</code>" in html
    assert "<li>one</li>" in html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert 'href="javascript' not in html and "<img" not in html


async def test_the_map_shows_quest_text_as_markup(site: Site) -> None:
    _, body, _ = await get(site, "/map")
    quest = seed_content().quest(seed_content().phases[0].quests[0])
    bold = re.search(r"\*\*([^*]+)\*\*", quest.summary)
    assert bold is not None, "the first quest's summary has bold text"
    assert f"<strong>{html_text(bold[1])}</strong>" in body
    assert f"**{bold[1]}**" not in body


async def test_the_icon_and_stylesheet_are_the_only_static_files(site: Site) -> None:
    for name, kind in (("site.css", "text/css"), ("favicon.svg", "image/svg+xml")):
        async with site.http.get(f"{site.url}/static/{name}") as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith(kind)
    for name in ("other.css", "site.js", "seeded.py"):
        async with site.http.get(f"{site.url}/static/{name}") as response:
            assert response.status == 404


async def test_the_speed_index_lists_the_maps_speed_ranked_tasks_in_map_order(
    site: Site,
) -> None:
    content = seed_content()
    expected = [
        f"{quest_id}/{task.id}"
        for phase in content.phases
        for quest_id in phase.quests
        for task in content.quest(quest_id).tasks
        if getattr(task, "speed", None) is not None
    ]
    _, body, _ = await get(site, "/speed")
    listed = re.findall(r'<li><a href="/g/\d+/speed/([a-z0-9-]+/[a-z0-9-]+)">', body)
    assert listed == expected and SPEED_TASK in listed
    for ref in expected:
        line = re.search(rf'speed/{ref}">.*?</li>', body)
        assert line is not None
        assert ("no results yet" in line[0]) == (ref != SPEED_TASK)
