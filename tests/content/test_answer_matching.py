"""Quiz answer matching: notation is forgiven, substance is not."""

from __future__ import annotations

import pytest

from bot.content import Question, answer_matches, normalize_answer, parse_number


def question(*answers: str, tolerance: float | None = None) -> Question:
    return Question(id="q", prompt="?", answers=answers, tolerance=tolerance)


SHAPE = question("(4, 128, 128)")


@pytest.mark.parametrize(
    "given",
    [
        "(4, 128, 128)",
        "4x128x128",
        "4 x 128 x 128",
        "4 × 128 × 128",
        "4*128*128",
        "[4,128,128]",
        "torch.Size([4, 128, 128])",
        "TORCH.SIZE([4, 128, 128])",
        "4, 128, 128",
        "  ( 4 ,128, 128 )  ",
        "`(4, 128, 128)`",
        '"4, 128, 128"',
        "(4, 128, 128).",
        "４x128x128",  # full-width digit, as some keyboards type it
    ],
)
def test_shape_notations_match(given: str) -> None:
    assert answer_matches(given, SHAPE)


@pytest.mark.parametrize(
    "given",
    ["(4, 128, 64)", "(128, 128)", "4x128", "(4, 128, 128, 1)", "(41, 28, 128)", "", "   "],
)
def test_wrong_shapes_do_not_match(given: str) -> None:
    assert not answer_matches(given, SHAPE)


MEMORY = question("memory bandwidth", "memory", "bandwidth")


@pytest.mark.parametrize(
    "given",
    [
        "memory bandwidth",
        "Memory Bandwidth",
        "memory-bandwidth",
        "memory_bandwidth",
        "memory   bandwidth",
        "memory bandwidth!",
        "'memory bandwidth'",
        "“memory bandwidth”.",
        "MEMORY",
        "bandwidth.",
    ],
)
def test_text_answers_and_synonyms_match(given: str) -> None:
    assert answer_matches(given, MEMORY)


@pytest.mark.parametrize("given", ["compute", "overhead", "memory bandwidth bound", "mem"])
def test_other_text_does_not_match(given: str) -> None:
    assert not answer_matches(given, MEMORY)


def test_minus_sign_is_kept() -> None:
    assert answer_matches("dim=-1", question("dim=-1"))
    assert not answer_matches("dim=1", question("dim=-1"))


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1e12", 1e12),
        ("1.5e3", 1500.0),
        ("1,000,000", 1_000_000.0),
        ("12,345.5", 12_345.5),
        ("2.5 TB/s", 2.5),
        ("3.35TB/s", 3.35),
        ("989 TFLOPS", 989.0),
        ("-0.5", -0.5),
        ("+7", 7.0),
        (".25", 0.25),
        ("~100", 100.0),
        ("50%", 50.0),
        ("`42`", 42.0),
        ("42.", 42.0),
    ],
)
def test_parse_number(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1,5", "1 000", "1,0000", "e12", "1e999", "1..2"])
def test_parse_number_rejects(text: str) -> None:
    assert parse_number(text) is None


def test_numeric_answers_use_relative_tolerance() -> None:
    bandwidth = question("3.35e12", tolerance=0.05)
    assert answer_matches("3.35e12", bandwidth)
    assert answer_matches("3,350,000,000,000", bandwidth)
    assert answer_matches("3.3e12 B/s", bandwidth)  # 1.5% off
    assert answer_matches("3.5e12", bandwidth)  # 4.5% off
    assert not answer_matches("3.6e12", bandwidth)  # 7.5% off
    assert not answer_matches("3.35", bandwidth)
    assert not answer_matches("lots", bandwidth)


def test_numeric_question_accepts_any_listed_value() -> None:
    either = question("1024", "1000", tolerance=0.001)
    assert answer_matches("1,024", either)
    assert answer_matches("1e3", either)
    assert not answer_matches("1012", either)


def test_normalize_answer_is_canonical() -> None:
    assert normalize_answer(" `Memory-Bandwidth`. ") == "memory bandwidth"
    assert normalize_answer("torch.Size([4, 128, 128])") == "4 128 128"


def test_question_rejects_non_numeric_answer_with_tolerance() -> None:
    with pytest.raises(ValueError, match="not a number"):
        question("four", tolerance=0.1)


def test_question_rejects_answer_that_normalizes_to_nothing() -> None:
    with pytest.raises(ValueError, match="only punctuation"):
        question("...")
