"""What /admin speed-void and speed-restore say: each refusal in one sentence, the member's
notice with the reason and no ping."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.presentation.speed_void_words import recent_label, refusal_text, void_notice_text
from bot.progress.speed_voids import (
    AlreadyVoid,
    NoSuchSubmission,
    NotSpeedRanked,
    NotVoid,
    OtherServer,
    RecentResult,
    VoidNotice,
    VoidRefusal,
)


@pytest.mark.parametrize(
    ("refusal", "words"),
    [
        (NoSuchSubmission(42), "There is no submission #42"),
        (OtherServer(42), "made in another server"),
        (NotSpeedRanked(42), "never speed-ranked"),
        (AlreadyVoid(42, "copied @everyone"), "already void"),
        (NotVoid(42), "is not void"),
    ],
)
def test_each_refusal_is_one_sentence(refusal: VoidRefusal, words: str) -> None:
    text = refusal_text(refusal)
    assert words in text and "#42" in text
    assert "\n" not in text and text.endswith(".") and text.count(". ") == 0
    assert "@everyone" not in text  # a reason is shown without its pings


def test_the_notice_names_the_result_and_the_reason_without_pings() -> None:
    notice = VoidNotice(7, 1, 2, "go-brrrr/matmul-three-ways", "timed a cache @here")
    text = void_notice_text(notice, server="Kernel Club")
    assert "`go-brrrr/matmul-three-ways` (submission #7)" in text
    assert "Reason: timed a cache @\u200bhere" in text and "**Kernel Club**" in text


def test_an_autocomplete_label_fits_discord_and_leads_with_the_number() -> None:
    result = RecentResult(
        9, "x" * 200, "q/t", 2.345, "GPU", datetime(2027, 1, 2, tzinfo=UTC), voided=False
    )
    label = recent_label(result)
    assert len(label) <= 100 and label.startswith("#9 · xxx")
    short = recent_label(RecentResult(9, "ada", "q/t", 2.345, "GPU", result.recorded_at, False))
    assert short == "#9 · ada · q/t · 2.3× · 2027-01-02"
