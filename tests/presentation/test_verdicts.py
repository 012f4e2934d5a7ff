"""Verdict messages say the outcome first, teach with the feedback and always fit."""

from __future__ import annotations

from typing import Any

from bot.presentation import style
from bot.presentation.verdicts import queued_text, verdict_text
from graders.base import Check, Verdict
from tests.presentation.discord_check import assert_sendable, text_of

TASK = "go-brrrr/matmul-three-ways"
TITLE = "Matrix multiply, three ways"


def verdict(status: str = "passed", score: float = 1.0, **changes: Any) -> dict[str, Any]:
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
    return Verdict(**fields).to_json()


def render(data: dict[str, Any], **award: Any) -> tuple[str, Any]:
    args = {"task_title": TITLE, "xp_added": 0, "level_up": None, "streak_bonus": 0, **award}
    content, embed = verdict_text(data, **args)
    assert_sendable(content=content, embeds=[embed])
    return content, embed


def test_passed_with_xp_streak_bonus_and_level_up() -> None:
    content, embed = render(verdict(), xp_added=60, streak_bonus=10, level_up=(3, 4))
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


def test_error_is_not_charged_to_the_learner() -> None:
    content, embed = render(verdict("error", 0.0, checks=()))
    assert content.startswith("Error: grading")
    assert "not charged to you" in content and "%" not in content
    assert embed.colour == style.ERROR


def test_notes_are_listed() -> None:
    _, embed = render(verdict(notes=("dropped 2 IPython magic lines",)))
    assert embed.fields[0].name == "Notes"
    assert embed.fields[0].value == "• dropped 2 IPython magic lines"


def test_huge_feedback_still_fits() -> None:
    checks = tuple(Check(f"check {n}", n % 2 == 0, "m" * 2000) for n in range(500))
    data = verdict("failed", 0.5, feedback="f" * 50_000, checks=checks, notes=("n" * 900,) * 50)
    content, embed = render(data, task_title="T" * 5000)
    assert content.startswith("Failed")
    assert "✓ **check 0**" in embed.description
    assert "more checks not shown." in embed.description
    assert len(embed.title) <= 256


def test_learner_text_cannot_ping() -> None:
    data = verdict(feedback="@everyone look", notes=("<@&42>",))
    content, embed = render(data, task_title="@here")
    assert "@here" not in content
    assert "@everyone" not in text_of([embed]) and "<@&42>" not in text_of([embed])


def test_queued_text_gives_the_position() -> None:
    assert queued_text(3).startswith("Queued: you are #3 in line.")
