"""flops-accounting: every quiz answer recomputed from the config the prompt states."""

from __future__ import annotations

import pytest

from bot.content import Content, answer_matches
from bot.content.quiz_grading import grade_quiz
from tests.graders.support import assert_quiz_passes, assert_stated_answers, quiz_task

COUNT = "flops-accounting/count-the-flops"
MFU = "flops-accounting/mfu"

# GPT-2 small's shape, as the prompt states it
N_LAYER, D_MODEL, N_CTX, VOCAB = 12, 768, 1024, 50257
A100_PEAK, H100_PEAK = 312e12, 989e12


def non_embedding_params(n_layer: int, d_model: int) -> int:
    """Kaplan et al. (2020): 2 * d_model * n_layer * (2 * d_attn + d_ff), d_attn = d_ff / 4."""
    d_attn, d_ff = d_model, 4 * d_model
    return 2 * d_model * n_layer * (2 * d_attn + d_ff)


def count_values() -> dict[str, float]:
    n = non_embedding_params(N_LAYER, D_MODEL)
    forward = 2 * n + 2 * N_LAYER * N_CTX * D_MODEL
    return {
        "non-embedding-params": n,
        "forward-per-token": forward,
        "with-unembedding": forward + 2 * D_MODEL * VOCAB,
        "attention-crossover": 2 * n / (2 * N_LAYER * D_MODEL),
        "training-per-token": 3 * forward,
    }


def mfu_values() -> dict[str, float]:
    run = 6 * 7e9 * 2e12
    cluster = 1024 * A100_PEAK * 0.40
    step_flops = 6 * 1.3e9 * 512 * 1024
    return {
        "run-flops": run,
        "run-days": run / cluster / 86400,
        "step-mfu": 100 * step_flops / 1.25 / (8 * H100_PEAK),
    }


def test_the_parameter_count_matches_gpt2_small() -> None:
    n = non_embedding_params(N_LAYER, D_MODEL)
    assert n == 12 * N_LAYER * D_MODEL**2 == 84_934_656
    embeddings = VOCAB * D_MODEL + N_CTX * D_MODEL
    assert 123e6 < n + embeddings < 125e6  # the famous "124M", less LayerNorms and biases


@pytest.mark.parametrize(("ref", "values"), [(COUNT, count_values()), (MFU, mfu_values())])
def test_every_answer_is_the_computed_value(
    content: Content, ref: str, values: dict[str, float]
) -> None:
    task = quiz_task(content, ref)
    assert_stated_answers(task, values)
    for question in task.questions:
        assert answer_matches(f"{values[question.id]:.4g}", question), question.id
    answers = {qid: f"{v:,.0f}" if v > 1e3 else f"{v:.3g}" for qid, v in values.items()}
    assert_quiz_passes(ref, task, answers)


def test_typical_mistakes_fail(content: Content) -> None:
    values = count_values()
    n = values["non-embedding-params"]
    mistakes = {
        "non-embedding-params": "124,000,000",  # counted the embeddings too
        "forward-per-token": str(n),  # one FLOP per parameter instead of two
        "with-unembedding": str(values["forward-per-token"] + D_MODEL * VOCAB),  # no factor 2
        "attention-crossover": str(D_MODEL),
        "training-per-token": str(2 * values["forward-per-token"]),  # backward = forward
    }
    verdict = grade_quiz(COUNT, quiz_task(content, COUNT), mistakes)
    assert verdict.score == 0.0
    mfu = mfu_values()
    wrong = {
        "run-flops": f"{2 * 7e9 * 2e12:.3g}",  # forward only
        "run-days": f"{mfu['run-days'] * 0.4:.3g}",  # forgot the MFU
        "step-mfu": f"{mfu['step-mfu'] * 8:.3g}",  # compared with a single GPU's peak
    }
    assert grade_quiz(MFU, quiz_task(content, MFU), wrong).score == 0.0
    # a percentage may also be written as a fraction
    (step,) = [q for q in quiz_task(content, MFU).questions if q.id == "step-mfu"]
    assert answer_matches(f"{mfu['step-mfu'] / 100:.3f}", step)
    assert answer_matches("41%", step)
