"""inference-engine: KV-cache sizes, decode ceilings and speculative decoding recomputed
from the configs the prompts state, and the what-each-trick-buys quiz."""

from __future__ import annotations

import pytest

from bot.content import Content
from bot.content.quiz_grading import grade_quiz
from tests.graders.support import assert_quiz_passes, assert_stated_answers, quiz_task

KV = "inference-engine/kv-cache-sizes"
DECODE = "inference-engine/decode-ceilings"
TRICKS = "inference-engine/what-each-buys"

BYTES = 2  # fp16 / bf16
GIB = 2**30
H100_BANDWIDTH = 3.35e12
WEIGHT_BYTES = 7e9 * BYTES


def kv_bytes_per_token(n_layer: int, n_kv_heads: int, head_dim: int) -> int:
    """K and V, for every layer and every key/value head."""
    return 2 * n_layer * n_kv_heads * head_dim * BYTES


def mla_elements_per_token(d_c: int, d_rope: int, n_layer: int) -> int:
    """DeepSeek-V2: the compressed latent plus the decoupled RoPE key, per layer."""
    return (d_c + d_rope) * n_layer


LLAMA2 = kv_bytes_per_token(32, 32, 128)


def kv_values() -> dict[str, float]:
    mha_elements = 2 * 128 * 128 * 60  # DeepSeek-V2's 128 heads of 128, as plain MHA
    return {
        "llama2-per-token": LLAMA2,
        "llama2-batch": LLAMA2 * 4096 * 8 / GIB,
        "llama3-per-token": kv_bytes_per_token(32, 8, 128),
        "mla-per-token": mla_elements_per_token(512, 64, 60) * BYTES,
        "mla-saving": mha_elements / mla_elements_per_token(512, 64, 60),
    }


def ceiling(batch: int, context: int, weight_bytes: float = WEIGHT_BYTES) -> float:
    """Total tokens/s when one step reads the weights once and every sequence's cache."""
    return batch * H100_BANDWIDTH / (weight_bytes + batch * context * LLAMA2)


def expected_tokens(alpha: float, k: int) -> float:
    """Leviathan et al. (2023): expected tokens per pass of the target model."""
    return (1 - alpha ** (k + 1)) / (1 - alpha)


def decode_values() -> dict[str, float]:
    return {
        "batch-one": ceiling(1, 0),
        "batch-one-long": ceiling(1, 4096),
        "batch-sixteen": ceiling(16, 4096),
        "int4-weights": ceiling(1, 0, weight_bytes=7e9 * 0.5),
        "speculative-tokens": expected_tokens(0.8, 4),
    }


def test_the_brief_numbers_hold() -> None:
    assert LLAMA2 == 524_288 and kv_bytes_per_token(32, 8, 128) == 131_072
    assert expected_tokens(0.8, 4) == pytest.approx(3.3616)
    assert expected_tokens(0.8, 4) == pytest.approx(sum(0.8**i for i in range(5)))
    assert mla_elements_per_token(512, 64, 60) == 4.5 * 128 * 60  # (9/2) d_h l in the paper
    assert round(ceiling(1, 0)) == 239


@pytest.mark.parametrize(("ref", "values"), [(KV, kv_values()), (DECODE, decode_values())])
def test_every_answer_is_the_computed_value(
    content: Content, ref: str, values: dict[str, float]
) -> None:
    task = quiz_task(content, ref)
    assert_stated_answers(task, values)
    assert_quiz_passes(ref, task, {qid: f"{v:.5g}" for qid, v in values.items()})


def test_typical_numeric_mistakes_fail(content: Content) -> None:
    kv = {
        "llama2-per-token": str(LLAMA2 // 2),  # only K, or only V
        "llama2-batch": str(LLAMA2 * 4096 / GIB),  # forgot the batch
        "llama3-per-token": str(LLAMA2),  # used the query heads, not the KV heads
        "mla-per-token": str(512 * 60 * BYTES),  # forgot the RoPE key
        "mla-saving": str(128 * 128 * 60 / (512 * 60)),  # counted K alone against the latent alone
    }
    assert grade_quiz(KV, quiz_task(content, KV), kv).score == 0.0
    decode = {
        "batch-one": str(H100_BANDWIDTH / 7e9),  # one byte per fp16 weight
        "batch-one-long": str(ceiling(1, 0)),  # ignored the cache
        "batch-sixteen": str(16 * ceiling(1, 0)),  # ignored the caches
        "int4-weights": str(2 * ceiling(1, 0)),  # int8, not int4
        "speculative-tokens": str(1 + 4 * 0.8),  # k * alpha + 1: a rejection ends the run
    }
    assert grade_quiz(DECODE, quiz_task(content, DECODE), decode).score == 0.0


def test_tricks_quiz_accepts_letters_and_names(content: Content) -> None:
    task = quiz_task(content, TRICKS)
    answers = {
        "batching": "A",
        "quantization": "(b)",
        "paged-kv": "c.",
        "speculative": "D",
        "changes-outputs": "Quantisation",
        "long-context-bottleneck": "the KV-cache",
    }
    verdict = grade_quiz(TRICKS, task, answers)
    assert verdict.status == "passed" and verdict.score == 1.0, verdict.checks
    swapped = {**answers, "batching": "c", "paged-kv": "a", "changes-outputs": "speculative"}
    swapped["long-context-bottleneck"] = "weights"
    wrong = grade_quiz(TRICKS, task, swapped)
    assert {c.name for c in wrong.checks if not c.passed} == {
        "batching",
        "paged-kv",
        "changes-outputs",
        "long-context-bottleneck",
    }


def test_the_long_context_answer_is_computed() -> None:
    cache = 64 * 4096 * LLAMA2
    assert cache == 128 * GIB and cache > 9 * WEIGHT_BYTES
