"""What ``/solutions`` says: a page of shared solutions (one line each, the code attached), the
notice before a speed-ranked task's first read, and each refusal in one sentence.

Authors are named as the speed boards name them, by mention (it pings nobody in an ephemeral
reply, and Discord shows each reader the name they know).  A line never exceeds what fits: a
page of ``PAGE`` lines stays under Discord's 2000 characters.  Attachment names are built from
the position and the task, never from what a member typed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.presentation.limits import CONTENT, truncate
from bot.presentation.safety import safe_name
from bot.presentation.speed_board_embeds import READ_MARK, task_label
from bot.presentation.wording import plural
from bot.progress.solutions import SharedSolution, SolutionsPage
from graders.base import format_ratio

SENTENCE_CHARS = 200  # the bound's sentence on a line
DEVICE_CHARS = 60
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")

NOT_RACING = (
    f"Reading is not racing: your speed results on this task from submissions made after you "
    f"first open these are marked {READ_MARK} on the boards and rank below every result made "
    "without reading. Your XP is not affected."
)
SHARE_HINT = "`/privacy share on` lets members who passed a task read your passing solution."
SHORT_HINT = "`/privacy share on` shares yours."


@dataclass(frozen=True)
class Attachment:
    filename: str
    data: bytes


def not_passed(title: str | None, task_ref: str) -> str:
    """The refusal to a member who has not passed the task."""
    return (
        f"Pass **{task_label(title, task_ref)}** first (`/submit task:{task_ref}`): its shared "
        "solutions open to members who passed it."
    )


def not_a_build_task(task_ref: str, kind: str) -> str:
    """The refusal to a task with no code to read."""
    return (
        f"`{truncate(task_ref, 100)}` is a {kind} task: only build tasks have solutions to "
        "read. Pick a build task from the list as you type."
    )


def nobody_shares(title: str | None, task_ref: str) -> str:
    """No other member who passed the task shares a solution (yet)."""
    return (
        f"Nobody who passed **{task_label(title, task_ref)}** shares a solution yet. {SHARE_HINT}"
    )


def before_reading(title: str | None, task_ref: str, total: int) -> str:
    """The notice before the first read of a speed-ranked task's solutions."""
    return (
        f"{plural(total, 'member')} who passed **{task_label(title, task_ref)}** "
        f"{'shares a solution' if total == 1 else 'share a solution'}.\n{NOT_RACING}"
    )


def page_text(page: SolutionsPage, *, title: str | None, speed_ranked: bool) -> str:
    """The page's message: a heading, one line per solution, and what reading means."""
    heading = (
        f"**Solutions · {task_label(title, page.task_ref)}** · page {page.page + 1} of "
        f"{page.pages} · {plural(page.total, 'member')} sharing"
    )
    footer = [SHORT_HINT]
    if speed_ranked and page.opened_at is not None:
        footer.insert(
            0,
            f"{READ_MARK} You first opened these <t:{int(page.opened_at.timestamp())}:R>: your "
            "runs of this task submitted since rank below those made without reading; XP is "
            "not affected.",
        )
    # the heading's, a line's and the footer's bounds keep a full page of the longest under
    # ``CONTENT`` (tested): nothing below is cut
    lines = [heading, *(_line(s) for s in page.solutions), *footer]
    return truncate("\n".join(lines), CONTENT)


def _line(solution: SharedSolution) -> str:
    """Position (the file's prefix), author, and the run's ratio and bound when ranked."""
    line = f"{solution.position}. <@{solution.user_id}>"
    speed = solution.speed
    if speed is None:
        return f"{line} · submitted <t:{int(solution.submitted_at.timestamp())}:d>"
    line += (
        f" · **{format_ratio(speed.board_ratio)}×** the reference on "
        f"{truncate(safe_name(speed.device), DEVICE_CHARS)}"
    )
    if speed.after_reading:
        line += f" · {READ_MARK}"
    if speed.bound_sentence:
        line += f"\n   {truncate(speed.bound_sentence, SENTENCE_CHARS)}"
    return line


def attachment_name(solution: SharedSolution, task_ref: str) -> str:
    """``<position>-<quest>-<task>.<py|ipynb>``: unique on the page, safe anywhere."""
    stem = _UNSAFE.sub("_", task_ref.replace("/", "-")).strip("._-")[:60] or "solution"
    kind = "ipynb" if solution.file_kind == "ipynb" else "py"
    return f"{solution.position}-{stem}.{kind}"


def attachments(page: SolutionsPage) -> list[Attachment]:
    """Each solution's code, as uploaded, under its attachment name."""
    return [Attachment(attachment_name(s, page.task_ref), s.code) for s in page.solutions]
