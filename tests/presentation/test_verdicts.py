"""Verdict messages say the outcome first, teach with the feedback and always fit."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bot.presentation import style
from bot.presentation.verdicts import (
    delivered_verdict,
    queued_text,
    verdict_notice,
    verdict_text,
)
from bot.progress.awards import NO_AWARD, Award
from graders.base import Check, Verdict
from tests.presentation.discord_check import assert_sendable, text_of

TASK = "go-brrrr/matmul-three-ways"
TITLE = "Matrix multiply, three ways"


def verdict(status: str = "passed", score: float = 1.0, **changes: Any) -> Verdict:
    fields: dict[str, Any] = {
        "task": TASK,
        "status": status,
        "score": score,
        "checks": (
            Check("matmul_loops", True, "matches torch.matmul on 6 shapes"),
            Check("no forbidden ops", status == "passed", "uses `@` on line 12"),
        ),
        "feedback": "Loops are slow because every multiply-add pays Python overhead.",
        "duration_s": 2.5,
        "device": "cuda",
        **changes,
    }
    return Verdict(**fields)


def render(data: Verdict, task_title: str = TITLE, **award: int) -> tuple[str, Any]:
    content, embed = verdict_text(data, task_title=task_title, award=replace(NO_AWARD, **award))
    assert_sendable(content=content, embeds=[embed])
    return content, embed


def test_passed_with_xp_streak_bonus_and_level_up() -> None:
    award = {"xp_added": 60, "streak_bonus": 10, "old_level": 3, "new_level": 4}
    content, embed = render(verdict(), **award)
    first, second = content.splitlines()
    assert first == f"Passed **{TITLE}** with a score of 100%. +60 XP (+10 XP streak bonus)"
    assert second == "Level up! You reached level 4."
    assert embed.title == f"Passed: {TITLE}"
    assert embed.colour == style.PASSED
    assert "✓ **matmul_loops**: matches torch.matmul on 6 shapes" in embed.description
    assert "Python overhead" in embed.description
    assert embed.footer.text == f"{TASK} · graded in 2.5 s on cuda"


def test_passed_again_earns_nothing_new() -> None:
    content, _ = render(verdict())
    assert content.startswith("Passed")
    assert "No new XP" in content and "+" not in content


def test_failed_shows_the_failing_check() -> None:
    content, embed = render(verdict("failed", 0.5))
    assert content == (
        f"Failed **{TITLE}** with a score of 50%. Read the feedback, fix it and submit again."
    )
    assert "✗ **no forbidden ops**: uses `@` on line 12" in embed.description
    assert embed.colour == style.FAILED


def test_a_rule_not_yet_checked_is_not_shown_as_broken() -> None:
    checks = (
        Check("matmul_loops: correct results", False, "failed 2 of 12 cases"),
        Check("matmul_loops: builds the product itself", False, "not checked: later", False),
    )
    _, embed = render(verdict("failed", 0.0, checks=checks))
    assert "✗ **matmul_loops: correct results**" in embed.description
    assert "– **matmul_loops: builds the product itself**: not checked" in embed.description
    stored = Verdict.from_json(verdict("failed", 0.0, checks=checks).to_json())
    assert [c.mark for c in stored.checks] == ["✗", "–"]
    older = verdict("failed", 0.0, checks=checks).to_json()  # stored before checks had `checked`
    for check in older["checks"]:
        del check["checked"]
    assert [c.mark for c in Verdict.from_json(older).checks] == ["✗", "✗"]


def test_error_is_not_charged_to_the_learner() -> None:
    content, embed = render(verdict("error", 0.0, checks=()))
    assert content.startswith("Error: grading")
    assert "not your fault" in content and "%" not in content
    assert embed.colour == style.ERROR


def test_a_dead_job_is_one_message_that_is_not_the_members_fault() -> None:
    """What ``queue`` stores when a job exhausted its attempts, as the member receives it."""
    dead = Verdict.internal_error(
        TASK,
        "internal error: grading failed 3 times without a verdict. This is not your fault and "
        "costs you nothing: resubmit, or ask a moderator to regrade it.",
    )
    content, embed = delivered_verdict(
        dead, task_title=TITLE, award=NO_AWARD, submission_id=7, task_ref=TASK
    )
    assert_sendable(content=content, embeds=[embed])
    outcome, reference = content.splitlines()
    assert outcome == (
        f"Error: grading **{TITLE}** failed on our side (an internal error). This is not your "
        "fault and nothing is lost: submit it again, or ask a moderator to regrade it."
    )
    assert reference == f"Submission #7 · `{TASK}`"
    assert "XP" not in content
    assert "grading failed 3 times" in embed.description
    assert embed.footer.text == TASK  # nothing was graded: no time, no device


def test_notice_in_a_channel_keeps_the_feedback_private() -> None:
    secret = verdict("failed", 0.5, feedback="your line `password = 'hunter2'` is wrong")
    notice = verdict_notice(secret, task_title=TITLE, award=NO_AWARD, submission_id=9, user_id=42)
    assert_sendable(content=notice)
    assert notice.startswith(f"<@42> Failed **{TITLE}** with a score of 50%.")
    assert "(submission #9)" in notice and "`/submissions`" in notice
    assert "hunter2" not in notice and "no forbidden ops" not in notice


def test_award_comes_from_the_typed_award() -> None:
    award = Award(old_level=1, new_level=1, xp_added=30, streak_bonus=0, new_total=90, streak=1)
    content, _ = verdict_text(verdict(score=0.5), task_title=TITLE, award=award)
    assert content == f"Passed **{TITLE}** with a score of 50%. +30 XP"


def test_notes_are_listed() -> None:
    _, embed = render(verdict(notes=("dropped 2 IPython magic lines",)))
    assert embed.fields[0].name == "Notes"
    assert embed.fields[0].value == "• dropped 2 IPython magic lines"


def test_huge_feedback_still_fits() -> None:
    checks = tuple(Check(f"check {n}", n % 2 == 0, "m" * 2000) for n in range(500))
    data = verdict("failed", 0.5, feedback="f" * 50_000, checks=checks, notes=("n" * 900,) * 50)
    content, embed = render(data, "T" * 5000)
    assert content.startswith("Failed")
    assert "✓ **check 0**" in embed.description
    assert "more checks not shown." in embed.description
    assert len(embed.title) <= 256


def test_learner_text_cannot_ping() -> None:
    data = verdict(feedback="@everyone look", notes=("<@&42>",))
    content, embed = render(data, "@here")
    assert "@here" not in content
    assert "@everyone" not in text_of([embed]) and "<@&42>" not in text_of([embed])


def test_queued_text_gives_the_position() -> None:
    assert queued_text(3).startswith("Queued: you are #3 in line.")
