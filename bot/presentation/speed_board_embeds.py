"""The speed board embed (``/leaderboard board:speed``) and the weekly post's fastest line.

One field per device class, each ranked: place, member, ratio to the reference (the figure that
ranks: a lower confidence bound of the trial's median), and the date of that best run as a
Discord timestamp (shown in the reader's own locale).  A run submitted after its member read the
task's shared solutions carries ``READ_MARK`` and ranks below every run made before; a line of
the description says so when the board shows one.  When listed members have only results of
the previous instrument, which no longer rank, one line of the description says so.  Mentions
in an embed ping nobody.  A board never exceeds Discord's limits: a field holds whole lines up
to 1024 characters, at most 25 fields are shown, and device classes that would take the embed
past 6000 characters are left out and counted in the footer.
"""

from __future__ import annotations

from discord import Embed

from bot.presentation import style
from bot.presentation.limits import (
    DESCRIPTION,
    EMBED_TOTAL,
    FIELD_NAME,
    FIELD_VALUE,
    FIELDS,
    TITLE,
    fit_embed,
    truncate,
)
from bot.presentation.safety import no_pings, safe_name
from bot.presentation.wording import plural
from bot.progress.speed_results import DeviceBoard, FastestOfWeek, SpeedBoard, SpeedEntry
from graders.base import format_ratio

MEDALS = {1: "🥇", 2: "🥈", 3: "🥉"}
TITLE_CHARS = 100  # a task title in a heading or a line
FOOTER_ROOM = 64  # "1,234 device classes · 1,200 more not shown"

PICK_A_TASK = (
    "Pick a task for the speed board: `/leaderboard board:speed task:` and choose one of the "
    "speed-ranked tasks as you type."
)
EXPLAINED = (
    "Each member's best run, by a cautious figure: a 95% lower bound of the median ratio their "
    "verdict shows (the reference's time over theirs: 2.0× is twice as fast), which a lucky run "
    "barely raises. Times compare only on the same hardware, so each device class is ranked apart."
)


#: marks a run submitted after its member read the task's shared solutions (``/solutions``)
READ_MARK = "📖"
READ_NOTE = (
    f"{READ_MARK} submitted after reading the shared solutions: ranked below every run made before."
)


def task_label(title: str | None, task_ref: str) -> str:
    """How a task is named in a board or a post: its title, else its ref."""
    return truncate(safe_name(title) if title else task_ref, TITLE_CHARS)


def no_speed_results(title: str | None, task_ref: str, *, retired: int = 0) -> str:
    """Why a speed-ranked task has no board: nobody passed it, or (``retired``) those who did
    have only results of the previous instrument."""
    if not retired:
        return (
            f"Nobody has a speed result for **{task_label(title, task_ref)}** yet: pass it with "
            f"`/submit task:{task_ref}` to get one."
        )
    return (
        f"Nobody has a ranked speed result for **{task_label(title, task_ref)}** yet: pass it "
        f"with `/submit task:{task_ref}` to get one.\n{retired_note(retired)}"
    )


def retired_note(members: int) -> str:
    """The line for members whose results were all measured by the previous instrument."""
    whose = f"{members:,} member's" if members == 1 else f"{members:,} members'"
    return (
        f"{whose} older results were measured by the previous instrument and no longer rank: "
        "resubmit to rank."
    )


def speed_board_embed(board: SpeedBoard, *, title: str | None, url: str | None = None) -> Embed:
    """The board of one task: one ranked field per device class (see the module's rules);
    ``url``, the task's public speed board on the web (when the server has one), is the title's
    link."""
    description = f"`{board.task_ref}` · {EXPLAINED}"
    if board.shows_after_reading:
        description += f"\n{READ_NOTE}"
    if board.retired:
        description += f"\n{retired_note(board.retired)}"
    embed = Embed(
        title=truncate(f"⚡ Speed board · {task_label(title, board.task_ref)}", TITLE),
        description=truncate(description, DESCRIPTION),
        colour=style.BOARD,
        url=url,
    )
    room = EMBED_TOTAL - len(embed.title or "") - len(embed.description or "") - FOOTER_ROOM
    shown = 0
    for device in board.devices[:FIELDS]:
        name, value = device_field(device)
        if len(name) + len(value) > room:
            break
        embed.add_field(name=name, value=value, inline=False)
        room -= len(name) + len(value)
        shown += 1
    footer = plural(len(board.devices), "device class", "device classes")
    if shown < len(board.devices):
        footer += f" · {len(board.devices) - shown} more not shown"
    embed.set_footer(text=footer)
    return fit_embed(embed)


def device_field(device: DeviceBoard) -> tuple[str, str]:
    """A device class's field: its name and member count, and its ranking in whole lines."""
    name = truncate(f"{no_pings(device.device)} · {plural(device.ranked, 'member')}", FIELD_NAME)
    lines: list[str] = []
    size = 0
    for entry in device.entries:
        line = entry_line(entry)
        if size + len(line) + (1 if lines else 0) > FIELD_VALUE:
            break
        size += len(line) + (1 if lines else 0)
        lines.append(line)
    return name, "\n".join(lines)


def entry_line(entry: SpeedEntry) -> str:
    place = MEDALS.get(entry.rank, f"`#{entry.rank}`")
    when = int(entry.achieved_at.timestamp())
    mark = f" · {READ_MARK}" if entry.after_reading else ""
    return (
        f"{place} <@{entry.user_id}> · **{format_ratio(entry.board_ratio)}×** · <t:{when}:d>{mark}"
    )


def fastest_line(fastest: FastestOfWeek, *, title: str | None) -> str:
    """The weekly post's line on the week's fastest result; the mention pings nobody."""
    return (
        f"⚡ Fastest of the week: **{task_label(title, fastest.task_ref)}** — "
        f"<@{fastest.user_id}>, {format_ratio(fastest.board_ratio)}× the reference on "
        f"{safe_name(fastest.device)}"
        + (f" ({READ_MARK} after reading the shared solutions)" if fastest.after_reading else "")
    )


def fastest_picture(fastest: FastestOfWeek, *, title: str | None) -> Embed:
    """The embed that shows the week's fastest result on its roofline (the caller sets the
    attached picture as its image): where the winner's code sat under its worker's roofs,
    beside the reference's."""
    return Embed(
        title=truncate(f"⚡ {task_label(title, fastest.task_ref)} on the roofline", TITLE),
        description=truncate(
            f"<@{fastest.user_id}>'s run, {format_ratio(fastest.board_ratio)}× the reference on "
            f"{safe_name(fastest.device)}: their point and the reference's under that worker's "
            "bandwidth and compute roofs.",
            DESCRIPTION,
        ),
        colour=style.BOARD,
    )
