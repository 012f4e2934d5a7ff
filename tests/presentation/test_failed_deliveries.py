"""The moderators' list of failed deliveries names what to act on and always fits."""

from __future__ import annotations

from datetime import timedelta

from bot.delivery.failures import FailedDelivery
from bot.presentation.failed_deliveries import failed_deliveries_text
from tests import timeline
from tests.presentation.discord_check import assert_sendable

TASK = "go-brrrr/matmul-three-ways"


def failure(n: int, error: str = "[a1b2c3] deliver: RuntimeError: boom") -> FailedDelivery:
    return FailedDelivery(
        submission_id=n,
        user_id=1000 + n,
        task_ref=TASK,
        attempts=10,
        error=error,
        failed_at=timeline.now() - timedelta(minutes=n),
    )


def test_nothing_failed() -> None:
    assert failed_deliveries_text([]).startswith("No failed deliveries")


def test_a_line_names_submission_member_task_tries_and_error() -> None:
    text = failed_deliveries_text([failure(7)])
    assert_sendable(content=text)
    heading, line = text.splitlines()
    assert heading.startswith("1 verdict could not be delivered")
    assert line.startswith(f"• #7 <@1007> `{TASK}`, 10 tries, gave up <t:")
    assert line.endswith(":R>: `[a1b2c3] deliver: RuntimeError: boom`")


def test_many_long_failures_fit_one_message() -> None:
    noisy = "x" * 3000 + " @everyone `code`\nmore"
    text = failed_deliveries_text([failure(n, noisy) for n in range(25)])
    assert_sendable(content=text)
    assert text.splitlines()[-1].startswith("… and ") and text.splitlines()[-1].endswith(" more.")
    assert "@everyone" not in text and "\nmore" not in text
