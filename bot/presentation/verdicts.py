"""A grading verdict as the learner reads it, and the "you are in the queue" reply.

The message text carries the outcome (so it shows in notifications); the embed carries the
feedback, which a grader can make arbitrarily long, so it is budgeted to stay within Discord's
limits.  An ``error`` verdict means grading failed on our side: it says so, that nothing is
lost, and how to get a verdict after all.
"""

from __future__ import annotations

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
from bot.progress.awards import Award
from graders.base import Verdict

FEEDBACK_CHARS = 1500  # the teaching paragraph; the checks get the rest of the description
CHECK_CHARS = 300  # one check line
MORE_RESERVE = 40  # room for the "… and N more checks not shown." line

_LOOK = {
    "passed": ("Passed", style.PASSED),
    "failed": ("Failed", style.FAILED),
    "error": ("Error", style.ERROR),
}


def verdict_text(verdict: Verdict, *, task_title: str, award: Award) -> tuple[str, Embed]:
    """The message for a verdict: content that starts with "Passed", "Failed" or "Error", and an
    embed with the feedback, each check and any notes.  ``award`` is what the verdict paid."""
    word, colour = _LOOK[verdict.status]
    title = truncate(no_pings(task_title), TITLE)
    lines = [_outcome(verdict, title, award)]
    if award.leveled_up:
        lines.append(f"Level up! You reached level {award.new_level}.")
    return truncate("\n".join(lines), CONTENT), _feedback_embed(verdict, word, title, colour)


def delivered_verdict(
    verdict: Verdict, *, task_title: str, award: Award, submission_id: int, task_ref: str
) -> tuple[str, Embed]:
    """The verdict as sent to its member (reply edit or DM): ``verdict_text`` plus a last line
    naming the submission, so a member (or a moderator) can refer to it."""
    content, embed = verdict_text(verdict, task_title=task_title, award=award)
    reference = f"Submission #{submission_id} · `{no_pings(task_ref)}`"
    return truncate(f"{content}\n{reference}", CONTENT), embed


def verdict_notice(
    verdict: Verdict, *, task_title: str, award: Award, submission_id: int, user_id: int
) -> str:
    """The last resort when DMs are closed, posted where others read it: the outcome line and
    a mention, never the feedback, which can quote the member's code."""
    outcome = _outcome(verdict, truncate(no_pings(task_title), TITLE), award)
    return truncate(
        f"<@{user_id}> {outcome} (submission #{submission_id}). Your DMs are closed, so the "
        "details are in `/submissions`.",
        CONTENT,
    )


def _outcome(verdict: Verdict, title: str, award: Award) -> str:
    if verdict.status == "error":
        return (
            f"Error: grading **{title}** failed on our side (an internal error). This is not "
            "your fault and nothing is lost: submit it again, or ask a moderator to regrade it."
        )
    line = f"{_LOOK[verdict.status][0]} **{title}** with a score of {verdict.score:.0%}."
    if award.xp_added:
        bonus = f" (+{award.streak_bonus} XP streak bonus)" if award.streak_bonus else ""
        return f"{line} +{award.xp_added} XP{bonus}"
    if verdict.status == "passed":
        return f"{line} No new XP: an earlier result for this task was as good."
    return f"{line} Read the feedback, fix it and submit again."


def _feedback_embed(verdict: Verdict, word: str, title: str, colour: Colour) -> Embed:
    feedback = truncate(no_pings(verdict.feedback.strip()), FEEDBACK_CHARS)
    checks = [
        truncate(no_pings(f"{c.mark} **{c.name}**: {c.message}"), CHECK_CHARS)
        for c in verdict.checks
    ]
    shown = _checks_block(checks, DESCRIPTION - len(feedback) - 2)
    description = "\n\n".join(part for part in (feedback, shown) if part)
    embed = Embed(
        title=truncate(f"{word}: {title}", TITLE), description=description or None, colour=colour
    )
    notes = [f"• {no_pings(note)}" for note in verdict.notes]
    if notes:
        embed.add_field(name="Notes", value=truncate("\n".join(notes), FIELD_VALUE), inline=False)
    footer = no_pings(verdict.task)
    if verdict.status != "error":  # an internal error graded nothing
        footer += f" · graded in {verdict.duration_s:.1f} s on {verdict.device}"
    embed.set_footer(text=footer)
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
