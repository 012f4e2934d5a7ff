"""A grading verdict as the learner reads it, and the "you are in the queue" reply.

The verdict arrives as the dict ``graders.base.Verdict.to_json()`` stored.  The message text
carries the outcome (so it shows in notifications); the embed carries the feedback, which a
grader can make arbitrarily long, so it is budgeted to stay within Discord's limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from discord import Colour, Embed

from bot.presentation import style
from bot.presentation.limits import (
    CONTENT,
    DESCRIPTION,
    FIELD_VALUE,
    TITLE,
    fit_embed,
    truncate,
)
from bot.presentation.safety import no_pings
from bot.presentation.wording import plural

FEEDBACK_CHARS = 1500  # the teaching paragraph; the checks get the rest of the description
CHECK_CHARS = 300  # one check line
MORE_RESERVE = 40  # room for the "… and N more checks not shown." line

_LOOK = {
    "passed": ("Passed", style.PASSED),
    "failed": ("Failed", style.FAILED),
    "error": ("Error", style.ERROR),
}


def verdict_text(
    verdict: Mapping[str, Any],
    *,
    task_title: str,
    xp_added: int,
    level_up: tuple[int, int] | None,
    streak_bonus: int,
) -> tuple[str, Embed]:
    """The message for a verdict: content that starts with "Passed", "Failed" or "Error", and an
    embed with the feedback, each check and any notes.  ``xp_added``, ``level_up`` (old, new)
    and ``streak_bonus`` come from the award the verdict made."""
    word, colour = _LOOK[verdict["status"]]
    title = truncate(no_pings(task_title), TITLE)
    lines = [_outcome(verdict, title, xp_added, streak_bonus)]
    if level_up is not None:
        lines.append(f"Level up! You reached level {level_up[1]}.")
    return truncate("\n".join(lines), CONTENT), _feedback_embed(verdict, word, title, colour)


def _outcome(verdict: Mapping[str, Any], title: str, xp_added: int, streak_bonus: int) -> str:
    status = verdict["status"]
    if status == "error":
        return (
            f"Error: grading **{title}** failed on our side, not yours. This attempt is not "
            "charged to you and costs you nothing; please submit again in a few minutes."
        )
    line = f"{_LOOK[status][0]} **{title}** with a score of {verdict['score']:.0%}."
    if xp_added:
        bonus = f" (+{streak_bonus} XP streak bonus)" if streak_bonus else ""
        return f"{line} +{xp_added} XP{bonus}"
    if status == "passed":
        return f"{line} No new XP: an earlier result for this task was as good."
    return f"{line} Read the feedback, fix it and submit again."


def _feedback_embed(verdict: Mapping[str, Any], word: str, title: str, colour: Colour) -> Embed:
    feedback = truncate(no_pings(verdict.get("feedback", "").strip()), FEEDBACK_CHARS)
    checks = [
        truncate(
            no_pings(f"{'✓' if c['passed'] else '✗'} **{c['name']}**: {c['message']}"), CHECK_CHARS
        )
        for c in verdict.get("checks", ())
    ]
    shown = _checks_block(checks, DESCRIPTION - len(feedback) - 2)
    description = "\n\n".join(part for part in (feedback, shown) if part)
    embed = Embed(
        title=truncate(f"{word}: {title}", TITLE), description=description or None, colour=colour
    )
    notes = [f"• {no_pings(note)}" for note in verdict.get("notes", ())]
    if notes:
        embed.add_field(name="Notes", value=truncate("\n".join(notes), FIELD_VALUE), inline=False)
    footer = f"{verdict['task']} · graded in {verdict.get('duration_s', 0.0):.1f} s"
    embed.set_footer(text=f"{footer} on {verdict.get('device', 'cpu')}")
    return fit_embed(embed)


def _checks_block(lines: list[str], room: int) -> str:
    """The check lines that fit in ``room``; when some do not, a last line counts them."""
    block = "\n".join(lines)
    if len(block) <= room:
        return block
    shown: list[str] = []
    used = MORE_RESERVE
    for line in lines:
        if used + len(line) + 1 > room:
            break
        shown.append(line)
        used += len(line) + 1
    hidden = plural(len(lines) - len(shown), "more check")
    return "\n".join([*shown, f"… and {hidden} not shown."])


def queued_text(position: int) -> str:
    """The reply to ``/submit`` while the submission waits for a grader (``position`` >= 1)."""
    return f"Queued: you are #{position} in line. Your result will follow once it is graded."


def no_worker_text(needed: str, recent_s: float) -> str:
    """Said at once when nothing able to grade the task has been seen lately."""
    return (
        f"Heads up: no grader with {needed} has been seen in the last {recent_s:.0f} s, so "
        "this may wait a while. It stays queued and loses nothing: the verdict arrives as "
        "soon as one is back (a moderator can check the workers)."
    )
