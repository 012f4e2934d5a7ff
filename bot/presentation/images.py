"""PNG images: the ``/profile`` card and the weekly leaderboard chart.

Drawing is synchronous and CPU-bound: the cogs call these through ``asyncio.to_thread`` so the
event loop keeps answering interactions meanwhile.
"""

from __future__ import annotations

import io

from PIL import Image, ImageDraw

from bot.presentation.fonts import drawable, fit, fitting_size, font
from bot.presentation.wording import plural
from bot.progress.highlights import WeeklyHighlights
from bot.progress.profile import Profile

CARD_SIZE = (800, 280)
CHART_SIZE = (800, 480)
CHART_ROWS = 10

Rgb = tuple[int, int, int]
BACKGROUND: Rgb = (30, 31, 34)
TEXT: Rgb = (242, 243, 245)
MUTED: Rgb = (148, 155, 164)
TRACK: Rgb = (56, 58, 64)
ACCENT: Rgb = (88, 101, 242)
MEDAL_COLOURS: dict[int, Rgb] = {1: (241, 196, 15), 2: (192, 199, 208), 3: (205, 127, 50)}

_MARGIN = 40


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def _canvas(size: tuple[int, int]) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    """A dark canvas (it sits well in Discord's dark theme) with an accent stripe on the left."""
    image = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, 7, size[1]), fill=ACCENT)
    return image, draw


def profile_card(profile: Profile, display_name: str) -> bytes:
    """The ``/profile`` card: name, level with a progress bar to the next, and the key numbers."""
    width, _ = CARD_SIZE
    right = width - _MARGIN
    image, draw = _canvas(CARD_SIZE)
    level = profile.level
    name = fit(drawable(display_name) or "?", 40, right - _MARGIN - 200)
    draw.text((_MARGIN, 58), name, font=font(40), fill=TEXT, anchor="ls")
    number = str(level.level)
    draw.text((right, 58), number, font=font(44), fill=TEXT, anchor="rs")
    label_right = right - font(44).getlength(number) - 10
    draw.text((label_right, 58), "LEVEL", font=font(18), fill=MUTED, anchor="rs")

    bar_top, bar_bottom = 100, 128
    draw.rounded_rectangle((_MARGIN, bar_top, right, bar_bottom), radius=14, fill=TRACK)
    if level.into > 0:  # any progress shows, at least as a round dot
        share = round((right - _MARGIN) * level.into / level.span)
        filled = _MARGIN + max(share, bar_bottom - bar_top)
        draw.rounded_rectangle((_MARGIN, bar_top, filled, bar_bottom), radius=14, fill=ACCENT)
    caption = f"{level.into:,} / {level.span:,} XP into level {level.level}"
    draw.text((_MARGIN, 140), caption, font=font(18), fill=MUTED)
    draw.text(
        (right, 140),
        f"{level.to_next:,} XP to level {level.level + 1}",
        font=font(18),
        fill=MUTED,
        anchor="ra",
    )

    stats = (
        ("TOTAL XP", f"{profile.total_xp:,}"),
        ("RANK", f"#{profile.rank:,}" if profile.rank is not None else "-"),
        ("THIS WEEK", f"{profile.week_xp:,} XP"),
        ("STREAK", plural(profile.streak.current, "day")),
        ("BEST STREAK", plural(profile.streak.best, "day")),
        ("QUESTS DONE", f"{len(profile.completed_quests):,}"),
    )
    column = (right - _MARGIN) / len(stats)
    for index, (label, value) in enumerate(stats):
        x = _MARGIN + index * column
        draw.text((x, 196), label, font=font(14), fill=MUTED)
        size = fitting_size(value, column - 12, largest=28, smallest=16)
        draw.text((x, 246), fit(value, size, column - 12), font=font(size), fill=TEXT, anchor="ls")
    return _png(image)


def weekly_chart(highlights: WeeklyHighlights, *, guild_name: str) -> bytes:
    """The weekly post's chart: the week's top 10 as horizontal bars, longest on top."""
    width, height = CHART_SIZE
    right = width - _MARGIN
    image, draw = _canvas(CHART_SIZE)
    draw.text(
        (_MARGIN, 46), f"Top of week {highlights.week_key}", font=font(30), fill=TEXT, anchor="ls"
    )
    subtitle = fit(drawable(guild_name), 18, right - _MARGIN)
    draw.text((_MARGIN, 74), subtitle, font=font(18), fill=MUTED, anchor="ls")
    top = highlights.top[:CHART_ROWS]
    if not top:
        centre_x, centre_y = width / 2, height / 2 + 20
        draw.text((centre_x, centre_y), "No XP this week", font=font(26), fill=TEXT, anchor="mb")
        hint = "Complete a task to be on next week's chart."
        draw.text((centre_x, centre_y + 12), hint, font=font(18), fill=MUTED, anchor="mt")
        return _png(image)
    name_left, bars_left = _MARGIN + 36, _MARGIN + 250
    value_room = 110  # for the "12,345 XP" label after the longest bar
    most = max(entry.xp for entry in top) or 1
    row_height = (height - 100 - 24) / CHART_ROWS
    for index, entry in enumerate(top):
        middle = 100 + row_height * (index + 0.5)
        draw.text((name_left - 10, middle), str(entry.rank), font=font(18), fill=MUTED, anchor="rm")
        name = fit(drawable(entry.display_name) or "?", 18, bars_left - name_left - 12)
        draw.text((name_left, middle), name, font=font(18), fill=TEXT, anchor="lm")
        length = max(6.0, (right - value_room - bars_left) * entry.xp / most)
        colour = MEDAL_COLOURS.get(entry.rank, ACCENT)
        box = (bars_left, middle - 11, bars_left + length, middle + 11)
        draw.rounded_rectangle(box, radius=5, fill=colour)
        draw.text(
            (bars_left + length + 10, middle),
            f"{entry.xp:,} XP",
            font=font(18),
            fill=TEXT,
            anchor="lm",
        )
    return _png(image)
