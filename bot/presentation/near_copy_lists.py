"""The moderators' list of near-copies of one task (``/admin similar``).

One line per pair, newest first: the later submission and its member (a mention the reply
sends without pinging, as the boards show members), the earlier one and its member, the score
as a percentage and both dates; then how many pairs were not listed.
"""

from __future__ import annotations

from bot.presentation.limits import CONTENT, truncate
from bot.presentation.wording import plural
from bot.similarity.fingerprints import MIN_TOKENS, THRESHOLD
from bot.similarity.near_copies import NearCopies, NearCopyPair

MORE_RESERVE = 60  # room for the "… and N more" line


def near_copies_text(found: NearCopies, title: str) -> str:
    """The list, cut to one message with a count of the rest."""
    task = f"`{truncate(found.task_ref, 100)}` ({truncate(title, 100)})"
    total = len(found.pairs) + found.more
    if not total:
        return (
            f"No near-copies of {task}: no passing submission is {THRESHOLD:.0%} or more alike "
            "to an earlier one by another member."
        )
    heading = (
        f"{plural(total, 'near-copy pair')} of {task}, newest first (at least "
        f"{THRESHOLD:.0%} alike; solutions under {MIN_TOKENS} tokens are never compared). "
        "Members are not told; nothing is taken from them."
    )
    lines = [heading]
    used = len(heading) + MORE_RESERVE
    shown = 0
    for pair in found.pairs:
        line = _line(pair)
        if used + len(line) + 1 > CONTENT:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    if total > shown:
        lines.append(f"… and {total - shown} more.")
    return "\n".join(lines)


def _line(pair: NearCopyPair) -> str:
    return (
        f"• **{pair.score:.0%}** #{pair.submission_id} <@{pair.user_id}> "
        f"(<t:{int(pair.submitted_at.timestamp())}:d>) ≈ #{pair.earlier_submission_id} "
        f"<@{pair.earlier_user_id}> (<t:{int(pair.earlier_submitted_at.timestamp())}:d>)"
    )
