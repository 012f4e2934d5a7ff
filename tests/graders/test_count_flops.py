"""flops-accounting/count-flops: the counting grader run for real through the sandbox, its
counts held to numbers computed here (the quizzes' own answers, a GPT-2 of our own under
torch's FlopCounterMode), and the grader's own cross-check shown to hold and to bite.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from bot.content import BuildTask, Content
from bot.worker.grade_job import SandboxRunner
from graders.base import Verdict
from graders.comparison import compare_tensor
from graders.registry import load_grader
from graders.tasks import count_flops
from graders.tasks.count_flops import (
    GPT2_SMALL,
    CountDisagrees,
    CountFlops,
    DecodeCount,
    ForwardCount,
    Gpt2Shape,
)
from tests.graders.in_process import load, run_plan
from tests.graders.support import failing, grade_in_sandbox, message, passed, quiz_task

TASK = "flops-accounting/count-flops"
SOLUTIONS = Path(__file__).parent / "solutions" / "flops-accounting"
REFERENCE = (SOLUTIONS / "correct.py").read_text()
FUNCTIONS = ("forward_flops", "decode_step_bytes")
FORWARD_CHECK = "forward_flops: correct results"
DECODE_CHECK = "decode_step_bytes: correct results"

pytestmark = pytest.mark.usefixtures("one_thread")


def grade_source(zygote: SandboxRunner, tmp_path: Path, source: str) -> Verdict:
    """Grade ``source`` as a learner's file, through the sandbox."""
    path = tmp_path / "solution.py"
    path.write_text(source)
    verdict, _ = grade_in_sandbox(zygote, load_grader("count_flops"), TASK, path)
    return verdict


def with_functions(code: str) -> str:
    """The reference with ``code``'s top-level defs replacing its own."""
    return f"{REFERENCE}\n\n{code}"


# -- a GPT-2 of our own: what torch measures, independent of the grader's model ------------


class _Gpt2(nn.Module):
    """GPT-2 with a tied head, written apart from the grader's.  Attention uses ``@``, as
    GPT-2 does: ``einsum`` lowers a contraction over one key (seq 1) to a plain multiply,
    which FlopCounterMode, counting only the matmul family, does not see."""

    def __init__(self, n_layer: int, n_head: int, n_embd: int, vocab: int, n_ctx: int) -> None:
        super().__init__()
        self.n_head = n_head
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(n_ctx, n_embd)
        self.layers = nn.ModuleList(
            nn.ModuleDict(
                {
                    "ln_1": nn.LayerNorm(n_embd),
                    "qkv": nn.Linear(n_embd, 3 * n_embd),
                    "proj": nn.Linear(n_embd, n_embd),
                    "ln_2": nn.LayerNorm(n_embd),
                    "up": nn.Linear(n_embd, 4 * n_embd),
                    "down": nn.Linear(4 * n_embd, n_embd),
                }
            )
            for _ in range(n_layer)
        )
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The logits, and every key and value tensor the layers would cache."""
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t))
        cache = []
        for layer in self.layers:
            q, k, v = layer["qkv"](layer["ln_1"](x)).chunk(3, dim=-1)
            q, k, v = (z.unflatten(-1, (self.n_head, -1)).permute(0, 2, 1, 3) for z in (q, k, v))
            scores = q @ k.mT / math.sqrt(q.shape[-1])
            scores = scores + torch.full((t, t), float("-inf")).triu(1)
            y = (scores.softmax(-1) @ v).permute(0, 2, 1, 3).flatten(2)
            x = x + layer["proj"](y)
            x = x + layer["down"](F.gelu(layer["up"](layer["ln_2"](x)), approximate="tanh"))
            cache += [k, v]
        return self.head(self.ln_f(x)), cache


#: tiny shapes run for real: (n_layer, n_head, n_embd, vocab, n_ctx), batch, seq
TINY = [
    ((1, 1, 8, 11, 8), 1, 1),
    ((2, 2, 12, 17, 9), 3, 9),
    ((3, 4, 16, 29, 16), 2, 7),
    ((4, 3, 21, 5, 12), 5, 12),
]


def measured(config: tuple[int, ...], batch: int, seq: int) -> tuple[int, int, int]:
    """Torch's matmul FLOPs of our GPT-2's forward pass, its distinct parameters, and the
    elements it caches, for ``batch`` sequences of ``seq`` tokens."""
    model = _Gpt2(*config)
    ids = torch.randint(config[3], (batch, seq))
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        _, cache = model(ids)
    parameters = sum(p.numel() for p in model.parameters())
    return counter.get_total_flops(), parameters, sum(z.numel() for z in cache)


@pytest.mark.parametrize(("config", "batch", "seq"), TINY)
def test_the_rule_is_what_flop_counter_mode_counts_on_our_own_gpt2(
    config: tuple[int, ...], batch: int, seq: int
) -> None:
    flops, parameters, cached = measured(config, batch, seq)
    shape = Gpt2Shape(*config)
    assert count_flops.FORWARD(shape, batch, seq) == flops
    # a decode step at pos = seq reads every parameter and what seq positions cached
    for size in (1, 2, 4):
        assert count_flops.DECODE(shape, batch, seq, size) == (parameters + cached) * size
    # and the grader's own model, which checks the fixed cases, measures the same
    assert count_flops.measure(shape, batch, seq) == count_flops.Measured(flops, parameters, cached)


def test_the_grader_s_measure_agrees_with_the_rule_on_drawn_shapes() -> None:
    """The drawn cases are counted by the formula alone; measured here on meta tensors,
    over the draws of several seeds, the formula holds there too."""
    grader = CountFlops()
    for seed in range(4):
        for case in grader.plan(seed, "cpu").expected["cases"]:
            if not case.drawn:
                continue
            shape = Gpt2Shape(*case.args[0].tolist())
            if case.function == "forward_flops":
                batch, seq = (int(a) for a in case.args[1:])
                assert int(case.expected) == count_flops.measure(shape, batch, seq).flops
            else:
                batch, pos, size = (int(a) for a in case.args[1:])
                seen = count_flops.measure(shape, batch, max(pos, 1))
                cached = seen.cached if pos else 0
                assert int(case.expected) == (seen.parameters + cached) * size, case.label


def test_a_count_torch_disagrees_with_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cross-check bites: a grader counting attention causally, or untying the head,
    raises before it could judge anyone by the wrong count."""
    shape = Gpt2Shape(2, 2, 12, 17, 9)
    assert count_flops.checked_forward_flops(shape, 3, 5) == count_flops.FORWARD(shape, 3, 5)
    monkeypatch.setattr(count_flops, "FORWARD", ForwardCount(attention="causal"))
    with pytest.raises(CountDisagrees, match="FlopCounterMode"):
        count_flops.checked_forward_flops(shape, 3, 5)
    monkeypatch.setattr(count_flops, "DECODE", DecodeCount(weights="untied head"))
    with pytest.raises(CountDisagrees, match="parameters"):
        count_flops.checked_decode_bytes(shape, 3, 5, 2)


# -- GPT-2 small, against the quizzes' own answers ---------------------------------------


def test_gpt2_small_is_the_quizzes_numbers(content: Content) -> None:
    """Per token at full context, the forward count is the flops quiz's total with the
    unembedding plus Kaplan's attention term once more (both products in full, twice his);
    the decode step's weights are the forward-pass quiz's total parameters."""
    flops_quiz = {
        q.id: q.numeric_answers()[0]
        for q in quiz_task(content, "flops-accounting/count-the-flops").questions
    }
    kaplan_attention = flops_quiz["forward-per-token"] - 2 * flops_quiz["non-embedding-params"]
    assert kaplan_attention == 2 * 12 * 1024 * 768
    per_token = flops_quiz["with-unembedding"] + kaplan_attention
    assert count_flops.FORWARD(GPT2_SMALL, 1, 1024) == 1024 * per_token == 291_648_307_200
    assert count_flops.FORWARD(GPT2_SMALL, 8, 1024) == 8 * 1024 * per_token

    forward_pass = quiz_task(content, "forward-pass/gpt2-small-numbers")
    (total,) = [q.numeric_answers()[0] for q in forward_pass.questions if q.id == "total-params"]
    assert total == 124_439_808
    assert count_flops.DECODE(GPT2_SMALL, 1, 0, 1) == total
    # bf16 at position 1000: the weights plus 1000 positions of 2 x 12 x 768 cached values
    assert count_flops.DECODE(GPT2_SMALL, 1, 1000, 2) == 2 * (total + 1000 * 2 * 12 * 768)
    assert count_flops.DECODE(GPT2_SMALL, 16, 1000, 2) == 2 * (total + 16 * 18_432_000)


def test_the_fixed_cases_include_gpt2_small_and_every_count_stays_exact() -> None:
    cases = CountFlops().fixed_cases("cpu")
    small = [c for c in cases if c.args[0].tolist() == [12, 12, 768, 50257, 1024]]
    assert [int(c.expected) for c in small] == [291_648_307_200, 285_743_616]
    # the largest sizes the prompt allows: int64, and float64 too, stay exact
    biggest = Gpt2Shape(12, 16, 1024, 60_000, 2048)
    assert count_flops.FORWARD(biggest, 32, 2048) < 2**53
    assert count_flops.DECODE(biggest, 32, 2047, 4) < 2**53


def test_draws_stay_within_what_the_prompt_states() -> None:
    grader = CountFlops()
    for seed in range(50):
        for case in grader.plan(seed, "cpu").expected["cases"]:
            n_layer, n_head, n_embd, vocab, n_ctx = case.args[0].tolist()
            assert 1 <= n_layer <= 12 and 1 <= n_ctx <= 2048 and 2 <= vocab <= 60_000
            assert n_embd % n_head == 0 and n_embd <= 1024
            assert 1 <= int(case.args[1]) <= 32
            if case.function == "forward_flops":
                assert 1 <= int(case.args[2]) <= n_ctx
            else:
                assert 0 <= int(case.args[2]) < n_ctx and int(case.args[3]) in (1, 2, 4)
            assert case.expected.dtype == torch.int64 and case.expected.shape == ()


# -- the task and its prompt -----------------------------------------------------------------


def test_the_quest_names_this_grader_and_states_the_rule(content: Content) -> None:
    task = content.find_task(TASK)[1]
    assert isinstance(task, BuildTask)
    grader = load_grader(task.grader)
    assert isinstance(grader, CountFlops)
    assert task.function_names() == grader.interface == FUNCTIONS
    prompt = " ".join(task.prompt.split())
    for fact in (
        "`[n_layer, n_head, n_embd, vocab_size, n_ctx]`",
        "one 0-d int64 tensor",
        "**exactly**",
        "`2 · m · k · n`",
        "**counted in full**",
        "`2 · t · C · vocab_size`",
        "124,439,808",
        "**once for the whole batch**",
        "`2 · n_layer · batch · pos · C`",
        "`0 ≤ pos < n_ctx`",
        "up to 12 layers, `n_embd` up to 1024, a vocabulary up to 60,000, `n_ctx` up to "
        "2048 and `batch` up to 32",
        "2^53",
        "`FlopCounterMode` (`torch.utils.flop_counter`) is not allowed in `forward_flops`",
        "/submit",
        "brrrbot grade FILE --task flops-accounting/count-flops",
    ):
        assert fact in prompt, fact
    limits = (count_flops.MAX_LAYERS, count_flops.MAX_EMBD, count_flops.MAX_CTX)
    assert limits == (12, 1024, 2048)
    assert (count_flops.MAX_VOCAB, count_flops.MAX_BATCH) == (60_000, 32)
    assert count_flops.BYTES_PER_ELEMENT == (1, 2, 4)


# -- through the sandbox ---------------------------------------------------------------------


def test_the_reference_passes(zygote: SandboxRunner, tmp_path: Path) -> None:
    verdict = grade_source(zygote, tmp_path, REFERENCE)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0
    assert set(passed(verdict)) == {
        FORWARD_CHECK,
        DECODE_CHECK,
        "forward_flops: allowed operations only",
    }


CAUSAL = """
def forward_flops(config, batch, seq):
    n_layer, n_head, c, vocab, n_ctx = config.tolist()
    b, s = int(batch), int(seq)
    t = b * s
    visible = s * (s + 1) // 2  # query i sees keys 0..i
    attention = 2 * (2 * b * visible * c)
    return torch.tensor(n_layer * (24 * t * c * c + attention) + 2 * t * c * vocab)
"""
NO_CACHE = """
def decode_step_bytes(config, batch, pos, bytes_per_element):
    n_layer, n_head, c, vocab, n_ctx = config.tolist()
    weights = vocab * c + n_ctx * c + n_layer * (12 * c * c + 13 * c) + 2 * c
    return torch.tensor(weights * int(bytes_per_element))
"""


def test_realistic_mistakes_fail_and_are_named(zygote: SandboxRunner, tmp_path: Path) -> None:
    verdict = grade_source(zygote, tmp_path, with_functions(CAUSAL + NO_CACHE))
    assert verdict.status == "failed"
    forward = failing(verdict, FORWARD_CHECK)
    assert "Likely cause: you counted the attention products causally" in forward
    # a crafted case fails first, and its input is shown in full, ready to paste
    assert "Input: forward_flops(torch.tensor([3, 5, 55, 101, 53]), torch.tensor(7)" in forward
    # the counts in full: t = 91 tokens of C = 55, 3 layers, vocab 101; 91 causal scores
    right = 3 * (24 * 91 * 55**2 + 4 * 7 * 13**2 * 55) + 2 * 91 * 55 * 101
    causal = 3 * (24 * 91 * 55**2 + 2 * 2 * 7 * 91 * 55) + 2 * 91 * 55 * 101
    assert f"expected {right}, got {causal}. " in forward
    assert (right, causal) == (21_611_590, 21_251_230)
    decode = failing(verdict, DECODE_CHECK)
    assert "Likely cause: you left out the KV cache" in decode
    assert "Input: decode_step_bytes(torch.tensor([3, 5, 55, 101, 53])," in decode
    # the allowed-operations check waits for right results
    assert "not checked" in message(verdict, "forward_flops: allowed operations only")


def test_the_shown_input_replays_the_failure() -> None:
    """What a failing check shows as the input, pasted into Python, is the case itself."""
    grader = CountFlops()
    plan = grader.plan_of(grader.fixed_cases("cpu"))
    module = load(with_functions(CAUSAL))
    verdict = grader.judge(TASK, plan, run_plan(module, plan), "")
    shown = failing(verdict, FORWARD_CHECK).partition("Input: ")[2].partition(". ")[0]
    assert shown.startswith("forward_flops(")
    args = eval(shown.removeprefix("forward_flops"), {"torch": torch})
    cases = plan.expected["cases"]
    (case,) = [c for c in cases if c.function == "forward_flops" and c.args[0].equal(args[0])]
    assert all(a.equal(b) for a, b in zip(args, case.args, strict=True))
    assert not compare_tensor(case, module.forward_flops(*args)).ok


CHEAT = """
from torch.utils.flop_counter import FlopCounterMode


def forward_flops(config, batch, seq):
    n_layer, n_head, c, vocab, n_ctx = config.tolist()
    b, s = int(batch), int(seq)
    with torch.device("meta"):
        x = torch.empty(b, s, c)
        w = [torch.empty(c, k) for k in (3 * c, c, 4 * c)] + [torch.empty(4 * c, c)]
        head = torch.empty(c, vocab)
        q = torch.empty(b, n_head, s, c // n_head)
    with FlopCounterMode(display=False) as counter:
        for _ in range(n_layer):
            for weight in w:
                torch.empty(b, s, weight.shape[0], device="meta") @ weight
            (q @ q.transpose(-2, -1)) @ q
        x @ head
    return torch.tensor(counter.get_total_flops())
"""


def test_torch_s_flop_counter_fails_the_allowed_operations_check(
    zygote: SandboxRunner, tmp_path: Path
) -> None:
    verdict = grade_source(zygote, tmp_path, with_functions(CHEAT))
    assert verdict.status == "failed"
    assert passed(verdict)[FORWARD_CHECK], message(verdict, FORWARD_CHECK)
    rule = failing(verdict, "forward_flops: allowed operations only")
    assert "FlopCounterMode" in rule and "torch's own FLOP counter" in rule


@pytest.mark.parametrize(
    ("code", "function", "expected"),
    [
        (
            "def forward_flops(config, batch, seq):\n    return torch.tensor([1])\n",
            FORWARD_CHECK,
            "expected shape (), got (1,)",
        ),
        (
            "def forward_flops(config, batch, seq):\n    return [1]\n",
            FORWARD_CHECK,
            "returned a list; build and return a torch.Tensor instead",
        ),
        (
            "def decode_step_bytes(config, batch, pos, bytes_per_element):\n    return 1\n",
            DECODE_CHECK,
            "returned an int, not a torch.Tensor",
        ),
        (
            "def decode_step_bytes(config, batch, pos, bytes_per_element):\n"
            "    return torch.tensor(float(pos))\n",
            DECODE_CHECK,
            "expected dtype int64, got float32",
        ),
        ("decode_step_bytes = None\n", DECODE_CHECK, "is a NoneType, not a function"),
    ],
)
def test_bad_returns_are_the_learner_s_and_say_so(
    zygote: SandboxRunner, tmp_path: Path, code: str, function: str, expected: str
) -> None:
    verdict = grade_source(zygote, tmp_path, with_functions(code))
    assert verdict.status == "failed"
    text = failing(verdict, function)
    assert expected in text
    assert "Return torch.tensor(total), a 0-d int64 tensor." in text  # the hint, no guess


def test_a_missing_function_is_named(zygote: SandboxRunner, tmp_path: Path) -> None:
    source = REFERENCE.replace("def decode_step_bytes(", "def decode_bytes(")
    verdict = grade_source(zygote, tmp_path, source)
    assert verdict.status == "failed"
    assert "decode_step_bytes is not defined at the top level of your file" in failing(
        verdict, DECODE_CHECK
    )
    assert passed(verdict)[FORWARD_CHECK]
