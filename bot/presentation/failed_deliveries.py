"""The moderators' list of verdicts the bot gave up delivering (``/admin deliveries``).

One line per verdict: the submission (to regrade it), the member (a mention that the reply
sends without pinging), the task, how many tries, and the last error with the reference that
the bot's ERROR log line also carries.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.delivery.failures import FailedDelivery
from bot.presentation.limits import CONTENT, truncate
from bot.presentation.safety import no_pings
from bot.presentation.wording import plural

ERROR_CHARS = 180  # of the last error, per line
MORE_RESERVE = 60  # room for the "… and N more" line


def failed_deliveries_text(failed: Sequence[FailedDelivery]) -> str:
    """The list, newest first, cut to one message with a count of what did not fit."""
    if not failed:
        return "No failed deliveries: every verdict so far reached its member."
    heading = (
        f"{plural(len(failed), 'verdict')} could not be delivered (newest first). "
        "`/admin regrade` sends a fresh verdict."
    )
    lines = [heading]
    used = len(heading) + MORE_RESERVE
    for item in failed:
        line = _line(item)
        if used + len(line) + 1 > CONTENT:
            lines.append(f"… and {len(failed) - (len(lines) - 1)} more.")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def _line(item: FailedDelivery) -> str:
    error = truncate(" ".join(item.error.split()), ERROR_CHARS).replace("`", "'")
    return (
        f"• #{item.submission_id} <@{item.user_id}> `{no_pings(item.task_ref)}`, "
        f"{plural(item.attempts, 'try', 'tries')}, gave up <t:{int(item.failed_at.timestamp())}:R>"
        f": `{no_pings(error)}`"
    )
