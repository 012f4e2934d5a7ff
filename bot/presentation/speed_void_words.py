"""What ``/admin speed-void`` and ``/admin speed-restore`` say: refusals in one sentence, the
moderator's answers, the member's notice, and the autocomplete's labels."""

from __future__ import annotations

from bot.presentation.limits import truncate
from bot.presentation.safety import no_pings, safe_name
from bot.progress.speed_voids import (
    AlreadyVoid,
    NoSuchSubmission,
    NotSpeedRanked,
    NotVoid,
    OtherServer,
    RecentResult,
    VoidChange,
    VoidNotice,
    VoidRefusal,
)
from graders.base import format_ratio


def refusal_text(refusal: VoidRefusal) -> str:
    """One sentence for each refusal of ``bot.progress.speed_voids``."""
    number = f"#{refusal.submission_id}"
    match refusal:
        case NoSuchSubmission():
            return f"There is no submission {number}: pick one from the list as you type."
        case OtherServer():
            return f"Submission {number} was made in another server, not this one."
        case NotSpeedRanked():
            return f"Submission {number} has no speed result: it was never speed-ranked."
        case AlreadyVoid(reason=reason):
            return (
                f"Submission {number}'s speed result is already void (reason: "
                f"{no_pings(reason)}); `/admin speed-restore` puts it back."
            )
        case NotVoid():
            return f"Submission {number}'s speed result is not void: there is nothing to restore."
    raise AssertionError(f"unknown refusal {refusal!r}")


def _what(change: VoidChange) -> str:
    return (
        f"submission #{change.submission_id}: {safe_name(change.display_name)}'s "
        f"{format_ratio(change.board_ratio)}× on `{change.task_ref}` ({change.device})"
    )


def voided_text(change: VoidChange, reason: str, *, told: bool) -> str:
    """The moderator's answer to a void."""
    told_text = (
        "They were told by DM, with the reason."
        if told
        else "They could not be told by DM (their DMs are closed or Discord refused)."
    )
    return (
        f"Voided {_what(change)}: it is off every board. Reason: {no_pings(reason)}. "
        f"{told_text} Their XP is unchanged (use `/admin xp` for that); posts already sent "
        "stay as they were."
    )


def restored_text(change: VoidChange) -> str:
    """The moderator's answer to a restore."""
    return f"Restored {_what(change)}: it ranks again as before."


def void_notice_text(notice: VoidNotice, *, server: str) -> str:
    """The member's one message about a void of their result."""
    return (
        f"A moderator of **{safe_name(server)}** struck your speed result for "
        f"`{notice.task_ref}` (submission #{notice.submission_id}) from the speed boards. "
        f"Reason: {no_pings(notice.reason)}. Your XP is unchanged; ask a moderator if you "
        "think this is a mistake."
    )


def recent_label(result: RecentResult) -> str:
    """An autocomplete choice: member, task, ratio, date, submission id (at most 100 chars)."""
    text = (
        f"#{result.submission_id} · {result.display_name} · {result.task_ref} · "
        f"{format_ratio(result.board_ratio)}× · {result.recorded_at:%Y-%m-%d}"
    )
    return truncate(text, 100)
