"""The leaderboard embed, the weekly post's embed and the text form of ``/profile``."""

from __future__ import annotations

from collections.abc import Sequence

from discord import Embed

from bot.presentation import style
from bot.presentation.limits import CONTENT, fit_embed, truncate
from bot.presentation.safety import safe_name
from bot.presentation.speed_board_embeds import fastest_line
from bot.presentation.wording import plural
from bot.progress.champions import Champion
from bot.progress.highlights import WeeklyHighlights
from bot.progress.leaderboard import Entry, Page
from bot.progress.profile import Profile

MEDALS = {1: "🥇", 2: "🥈", 3: "🥉"}
NAME_CHARS = 64  # a display name is at most 32 characters; escaping can double it
HIDDEN = "hidden from the boards"
#: tied first places named in the weekly post (all of them get the champion role)
CHAMPIONS_NAMED = 20
#: the words before a link to a public web page
WEB_PAGE = "Public page"
WEEK_ON_THE_WEB = "The new week's board on the web"


def leaderboard_embed(
    page: Page, *, period_label: str, caller_name: str, url: str | None = None
) -> Embed:
    """One page of a board: medals for the top three, the caller's own place below, and the
    page number in the footer.  ``period_label`` reads as "this week", "this month", "all time";
    ``url``, the board's public web page (when the server has one), is the title's link.
    """
    caller_id = page.caller.member_id if page.caller else None
    lines = [_entry_line(entry, entry.member_id == caller_id) for entry in page.entries]
    if not lines:
        lines = [f"Nobody has XP {_yet(page, period_label)}: complete a task to lead the board."]
    name = truncate(safe_name(caller_name), NAME_CHARS)
    if page.caller is None:
        lines += ["", f"{name}, you have no XP {_yet(page, period_label)}."]
    elif not page.caller.listed:  # the board is public: a hidden member's place stays private
        lines += ["", f"{name}, you are {HIDDEN}: `/profile` shows your rank."]
    else:
        lines += ["", f"{name}, you are #{page.caller.rank} with {page.caller.xp:,} XP."]
    embed = Embed(
        title=f"🏆 Leaderboard · {period_label[:1].upper()}{period_label[1:]}",
        description="\n".join(lines),
        colour=style.BOARD,
        url=url,
    )
    embed.set_footer(text=f"Page {page.page}/{page.pages} · {plural(page.ranked, 'member')} ranked")
    return fit_embed(embed)


def _yet(page: Page, period_label: str) -> str:
    """What follows "no XP": the period then "yet", but only "yet" for all time."""
    return "yet" if page.period == "all" else f"{period_label} yet"


def _entry_line(entry: Entry, is_caller: bool) -> str:
    place = MEDALS.get(entry.rank, f"`#{entry.rank}`")
    line = f"{place} **{truncate(safe_name(entry.display_name), NAME_CHARS)}** · {entry.xp:,} XP"
    return f"{line} ← you" if is_caller else line


def profile_text(profile: Profile, display_name: str, *, page_url: str | None = None) -> str:
    """``/profile`` as text: level and progress, XP, rank, streaks, completions; a hidden
    member's rank is the place they would have, marked hidden.  ``page_url``: the member's
    public web page, on a line of its own (in ``<>``: Discord shows no preview of it)."""
    level = profile.level
    rank = f"rank #{profile.rank}" if profile.rank is not None else "not ranked yet"
    if profile.hidden:
        rank += f" ({HIDDEN}; `/privacy show` to appear)"
    lines = [
        f"**{truncate(safe_name(display_name), NAME_CHARS)}** · level {level.level}",
        f"{level.into:,}/{level.span:,} XP into level {level.level}: "
        f"{level.to_next:,} XP to level {level.level + 1}",
        f"{profile.total_xp:,} XP in total · {rank} · {profile.week_xp:,} XP this week",
        f"Streak: {plural(profile.streak.current, 'day')} (best {profile.streak.best})",
        f"Completed: {plural(len(profile.completed_quests), 'quest')}, "
        f"{plural(len(profile.completed_tasks), 'task')}",
    ]
    if page_url is not None:
        lines.append(f"{WEB_PAGE}: <{page_url}>")
    return truncate("\n".join(lines), CONTENT)


def weekly_post_embed(
    week_key: str,
    highlights: WeeklyHighlights,
    champions: Sequence[Champion],
    fastest_title: str | None,
    *,
    board_url: str | None = None,
) -> Embed:
    """The weekly post: the week's top, its champions, its fastest result (``fastest_title``:
    its task's title, None when the map no longer has it), level-ups and longest streaks; with
    ``board_url`` (the server's public week board), a last line that links to it."""
    lines = [
        f"{entry.rank}. **{safe_name(entry.display_name)}** · {entry.xp:,} XP"
        for entry in highlights.top
    ] or ["Nobody earned XP this week. A new week, a new chance!"]
    if champions:
        lines = [champion_line(champions), "", *lines]
    if highlights.fastest is not None:
        lines += ["", fastest_line(highlights.fastest, title=fastest_title)]
    if highlights.level_ups:
        lines += ["", "**Level-ups**"] + [
            f"{safe_name(u.display_name)} reached level {u.new_level}"
            for u in highlights.level_ups[:10]
        ]
    if highlights.streaks:
        lines += ["", "**Longest streaks**"] + [
            f"{safe_name(s.display_name)}: {s.days} days" for s in highlights.streaks[:5]
        ]
    if board_url is not None:
        lines += ["", f"{WEEK_ON_THE_WEB}: {board_url}"]
    embed = Embed(
        title=truncate(f"🏆 Week {week_key}: the leaderboard", 256),
        description="\n".join(lines),
    )
    return fit_embed(embed)


def champion_line(champions: Sequence[Champion]) -> str:
    """Names the week's first place(s); mentions in an embed ping nobody."""
    named = ", ".join(f"<@{c.user_id}>" for c in champions[:CHAMPIONS_NAMED])
    more = len(champions) - CHAMPIONS_NAMED
    if more > 0:
        named += f" and {more} more"
    title = "Champion" if len(champions) == 1 else "Champions"
    return f"🏆 {title} of the week: {named}"
