"""inference-engine/speculative-accept: the acceptance rule graded for real in the sandbox,
every expected token recomputed here by the prompt's rule in exact rational arithmetic, the
uniforms' margin measured, and the statistical check's p-values checked against closed forms.

Learner code runs only inside ``sandbox``'s jobs, never in this process.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
import torch

from bot.content.schema import BuildTask
from bot.worker.grade_job import SandboxRunner
from graders.base import Plan, Verdict
from graders.comparison import Case
from graders.goodness_of_fit import chi_square, upper_gamma
from graders.registry import load_grader
from graders.tasks import speculative_accept as spec
from graders.tasks.speculative_accept import SpeculativeAccept
from graders.tensors import to_raw
from sandbox.api import CallResult, SandboxResult
from tests.graders.support import failing, grade_in_sandbox, load_quest, message

QUEST = "inference-engine"
TASK = f"{QUEST}/speculative-accept"
SOLUTIONS = Path(__file__).parent / "solutions" / QUEST
CORRECT = f"{spec.FUNCTION}: correct results"
STATISTICS = f"{spec.FUNCTION}: tokens follow the target's distributions"
MARGIN = Fraction(1, 10**6)  # the prompt's: every uniform 1e-6 from every threshold
SEEDS = (0, 1, 7, 2**62 + 5)


@pytest.fixture(autouse=True)
def _one_thread(one_thread: None) -> None:
    return None


# ---- the rule, as the prompt states it, in exact arithmetic -------------------------------


def exact(value: float) -> Fraction:
    return Fraction(value)


def inverse_cdf(weights: list[Fraction], u: Fraction) -> int:
    """The smallest token t with cumsum[t] > u * total (ascending ids)."""
    target, running = u * sum(weights), Fraction(0)
    for t, w in enumerate(weights):
        running += w
        if running > target:
            return t
    raise AssertionError("u * total is not below the total")


def by_the_rule(case: Case) -> list[list[int]]:
    """The prompt's rule on the float64 inputs taken exactly, sequence by sequence."""
    draft, q, p, u_accept, u_sample = (a.tolist() for a in case.args)
    k = len(draft[0])
    rows = []
    for b, drafted in enumerate(draft):
        row: list[int] = []
        for i, x in enumerate(drafted):
            if exact(u_accept[b][i]) * exact(q[b][i][x]) < exact(p[b][i][x]):
                row.append(x)
                continue
            residual = [
                max(Fraction(0), exact(a) - exact(c)) for a, c in zip(p[b][i], q[b][i], strict=True)
            ]
            row.append(inverse_cdf(residual, exact(u_sample[b])))
            break
        else:
            row.append(inverse_cdf([exact(a) for a in p[b][k]], exact(u_sample[b])))
        rows.append(row + [-1] * (k + 1 - len(row)))
    return rows


def by_the_rule_in_floats(case: Case) -> list[list[int]]:
    """The same rule in Python floats, for the 100,000-sequence batch (exact arithmetic
    there would take a minute; the margin makes floats agree with it)."""
    draft, q, p, u_accept, u_sample = (a.tolist() for a in case.args)
    k = len(draft[0])
    rows = []
    for d, qb, pb, ua, us in zip(draft, q, p, u_accept, u_sample, strict=True):
        row: list[int] = []
        weights = pb[k]
        for i, x in enumerate(d):
            if ua[i] * qb[i][x] < pb[i][x]:
                row.append(x)
                continue
            weights = [max(0.0, a - c) for a, c in zip(pb[i], qb[i], strict=True)]
            break
        target, running, token = us * sum(weights), 0.0, -2
        for t, w in enumerate(weights):
            running += w
            if running > target:
                token = t
                break
        rows.append([*row, token] + [-1] * (k - len(row)))
    return rows


def smallest_gap(case: Case) -> Fraction:
    """How close any uniform comes to a threshold the rule may compare it with: u_accept
    to p(x) / q(x) at every draft, u_sample to every c[t] / c[V - 1] of every residual and
    of the bonus distribution, in exact arithmetic."""
    draft, q, p, u_accept, u_sample = (a.tolist() for a in case.args)
    k = len(draft[0])
    gap = Fraction(1)
    for b, drafted in enumerate(draft):
        u = exact(u_sample[b])
        rows = [
            [max(Fraction(0), exact(a) - exact(c)) for a, c in zip(p[b][i], q[b][i], strict=True)]
            for i in range(k)
        ]
        rows.append([exact(a) for a in p[b][k]])
        for weights in rows:
            total, running = sum(weights), Fraction(0)
            for w in weights:
                running += w
                if total > 0:
                    gap = min(gap, abs(u - running / total))
        for i, x in enumerate(drafted):
            gap = min(gap, abs(exact(u_accept[b][i]) - exact(p[b][i][x]) / exact(q[b][i][x])))
    return gap


def exact_cases(seed: int) -> list[Case]:
    """A plan's cases but the statistical batch."""
    cases = SpeculativeAccept().plan(seed, "cpu").expected["cases"]
    return [c for c in cases if c.label != spec.STAT_LABEL]


# ---- the task and its cases ---------------------------------------------------------------


def test_the_task_names_its_grader_and_interface() -> None:
    task = load_quest(QUEST).task("speculative-accept")
    assert isinstance(task, BuildTask)
    grader = load_grader(task.grader)
    assert isinstance(grader, SpeculativeAccept)
    assert grader.interface == task.function_names() == ("speculative_accept",)
    prompt = " ".join(task.prompt.split())
    for fact in (
        "(B, k) int64",
        "(B, k, V) float64",
        "(B, k + 1, V) float64",
        "(B,) float64",
        "`u_accept[b, i] * q[b, i, x] < p[b, i, x]`",
        "`max(0, p[b, i] - q[b, i])`",
        "smallest token t with `c[t] > u * c[V - 1]`",
        "Return a (B, k + 1) int64 tensor",
        "-1 in the k - n places after them",
        "at least 1e-6 from every threshold",
        "100,000 sequences",
        "α = 1e-6",
        "/submit",
        f"brrrbot grade FILE --task {TASK}",
    ):
        assert fact in prompt, fact


def test_the_prompts_example_gives_the_stated_answer() -> None:
    """k = 1, V = 3: the draft is rejected, the residual [0.2, 0, 0.1] samples token 2."""
    args = (
        torch.tensor([[1]]),
        torch.tensor([[[0.2, 0.6, 0.2]]], dtype=torch.float64),
        torch.tensor([[[0.4, 0.3, 0.3], [0.3, 0.3, 0.4]]], dtype=torch.float64),
        torch.tensor([[0.7]], dtype=torch.float64),
        torch.tensor([0.8], dtype=torch.float64),
    )
    case = Case(spec.FUNCTION, args, torch.empty(0), "the prompt's example")
    assert by_the_rule(case) == [[2, -1]]
    assert spec.speculate(*args).tolist() == [[2, -1]]
    assert smallest_gap(case) >= MARGIN
    assert "the answer is `[[2, -1]]`" in " ".join(
        load_quest(QUEST).task("speculative-accept").prompt.split()
    )


def test_the_crafted_cases_are_worked_out_by_hand() -> None:
    crafted = spec.fixed_exact_cases()[:5]
    worked = {
        # accepted (0.9 * 0.5 < 0.6); bonus p[1]: cumsum [0.1, 0.4, 1.0] > 0.5 first at 2
        "one draft, accepted: the bonus comes from p[:, 1]": [[0, 2]],
        # rejected (0.7 * 0.6 >= 0.3); residual [0.2, 0, 0.1], 0.25 * 0.3 = 0.075 < 0.2
        "one draft, rejected: resample from max(0, p - q), normalised": [[0, -1]],
        # the same with 0.5 * 0.3 = 0.15 < 0.2 (p itself would give 1)
        "one draft, rejected: the residual, not p": [[0, -1]],
        # p(x) = 0: rejected; residual [0.2, 0.2, 0], 0.65 * 0.4 = 0.26 lies in (0.2, 0.4]
        "one draft the target rules out (p(x) = 0): always rejected": [[1, -1]],
        # q = p: ratio 1 > 0.95; bonus [0.5, 0.25, 0.25]: 0.6 lies in (0.5, 0.75]
        "one draft whose q equals p: always accepted": [[1, 1]],
    }
    assert {c.label: c.expected.tolist() for c in crafted} == worked
    for case in crafted:
        assert sum(a.numel() for a in case.args) <= 12, case.label  # shown in full
        assert by_the_rule(case) == case.expected.tolist(), case.label


@pytest.mark.parametrize("seed", SEEDS)
def test_every_expected_token_is_the_rule_in_exact_arithmetic(seed: int) -> None:
    for case in exact_cases(seed):
        assert case.expected.dtype == torch.int64
        assert case.expected.tolist() == by_the_rule(case), case.label


@pytest.mark.parametrize("seed", SEEDS)
def test_every_uniform_is_a_margin_away_from_every_threshold(seed: int) -> None:
    for case in exact_cases(seed):
        assert smallest_gap(case) >= MARGIN, case.label


@pytest.mark.parametrize("seed", SEEDS)
def test_the_inputs_are_as_the_prompt_states(seed: int) -> None:
    cases = SpeculativeAccept().plan(seed, "cpu").expected["cases"]
    assert cases[-1].label == spec.STAT_LABEL  # the statistical batch runs last
    drawn = [c for c in cases if c.drawn]
    assert len(drawn) == 4
    for case in cases:
        draft, q, p, u_accept, u_sample = case.args
        batch, k = draft.shape
        vocab = p.shape[-1]
        assert draft.dtype == torch.int64 and q.dtype == p.dtype == torch.float64
        assert q.shape == (batch, k, vocab) and p.shape == (batch, k + 1, vocab)
        assert u_accept.shape == (batch, k) and u_sample.shape == (batch,)
        assert u_accept.dtype == u_sample.dtype == torch.float64
        assert bool(
            ((u_accept >= 0) & (u_accept < 1)).all() & ((u_sample >= 0) & (u_sample < 1)).all()
        )
        assert bool((q >= 0).all() and (p >= 0).all())
        assert torch.allclose(q.sum(-1), torch.ones(()).double()), case.label
        assert torch.allclose(p.sum(-1), torch.ones(()).double()), case.label
        assert bool((q.gather(-1, draft.unsqueeze(-1)) > 0).all()), case.label
        if case.drawn:
            assert batch <= 64 and 1 <= k <= 6 and 2 <= vocab <= 12, case.label
    kinds = " ".join(c.label for c in drawn)
    assert "zeros in p and q" in kinds and "some q = p" in kinds


def test_the_statistical_batch_is_the_rule_and_keeps_the_margin() -> None:
    case = spec.statistical_case()
    draft, q, p, u_accept, u_sample = case.args
    assert draft.shape == (100_000, 3) and p.shape == (100_000, 4, 6)
    assert case.expected.tolist() == by_the_rule_in_floats(case)
    # the margin, in floats: the gaps are 1e-6 and the rounding 1e-16
    k = draft.shape[1]
    px = p[:, :k].gather(-1, draft.unsqueeze(-1)).squeeze(-1)
    qx = q.gather(-1, draft.unsqueeze(-1)).squeeze(-1)
    assert float((u_accept - px / qx).abs().min()) > 0.999e-6
    weights = torch.cat(((p[:, :k] - q).clamp(min=0), p[:, k:]), dim=1)
    c = weights.cumsum(-1)
    steps = c / c[..., -1:]
    assert float((u_sample[:, None, None] - steps).abs().min()) > 0.999e-6


# ---- the statistical check ----------------------------------------------------------------


def test_upper_gamma_matches_its_closed_forms() -> None:
    """Chi-square tails with 1, 2 and 2m degrees of freedom in closed form: erfc(sqrt(x/2)),
    exp(-x/2), and the Poisson sum exp(-y) sum_{i<m} y^i / i! with y = x/2."""
    for x in (1e-3, 0.5, 1.0, 3.0, 10.0, 40.0, 200.0):
        assert upper_gamma(0.5, x / 2) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-11)
        assert upper_gamma(1.0, x / 2) == pytest.approx(math.exp(-x / 2), rel=1e-11)
        y = x / 2
        for m in (2, 3, 5):
            poisson = math.exp(-y) * sum(y**i / math.factorial(i) for i in range(m))
            assert upper_gamma(m, y) == pytest.approx(poisson, rel=1e-10)
    assert upper_gamma(2.5, 0.0) == 1.0
    assert upper_gamma(2.5, 5000.0) == 0.0  # underflows to 0, not nan
    # a textbook quantile: 11.0705 is the 95th percentile of chi-square with 5 df
    assert upper_gamma(2.5, 11.0705 / 2) == pytest.approx(0.05, abs=1e-5)


def test_chi_square_counts_what_it_is_given() -> None:
    perfect = chi_square([250, 250, 500], [0.25, 0.25, 0.5])
    assert (perfect.statistic, perfect.df, perfect.p_value) == (0.0, 2, 1.0)
    off = chi_square([30, 70], [0.5, 0.5])  # (20^2 + 20^2) / 50 = 16 on 1 df
    assert off.statistic == 16.0 and off.df == 1
    assert off.p_value == pytest.approx(math.erfc(math.sqrt(8)), rel=1e-11)
    impossible = chi_square([10, 0, 1], [0.5, 0.5, 0.0])
    assert impossible.p_value == 0.0 and impossible.impossible == (2,)
    assert chi_square([10, 0, 0], [0.5, 0.5, 0.0]).df == 1  # a zero bin is no bin


def test_the_statistical_expectations_are_the_acceptance_rates() -> None:
    # alpha_i = sum(min(p_i, q_i)), worked out from the rows in the grader's docstring
    alphas = (0.70, 0.65, 0.90)
    lengths = (0.30, 0.70 * 0.35, 0.70 * 0.65 * 0.10, 0.70 * 0.65 * 0.90)
    counted, *positions = spec.stat_expectations()
    assert counted.probabilities == pytest.approx(lengths)
    assert sum(counted.probabilities) == pytest.approx(1.0)
    assert [
        sum(map(min, p, q)) for p, q in zip(spec.STAT_P, spec.STAT_Q, strict=False)
    ] == pytest.approx(alphas)
    assert [e.probabilities for e in positions] == list(spec.STAT_P)
    assert spec.STAT_TESTS == 5
    assert math.isclose(spec.STAT_LEVEL, 1e-6 / 5)


def _stat_result(tokens: torch.Tensor) -> CallResult:
    return CallResult(spec.FUNCTION, spec.STAT_LABEL, "ok", "torch.Tensor", to_raw(tokens))


def _p_values(tokens: torch.Tensor) -> list[float]:
    counts = spec.stat_counts(tokens)
    assert not isinstance(counts, str), counts
    return [
        chi_square(n, e.probabilities).p_value
        for n, e in zip(counts, spec.stat_expectations(), strict=True)
    ]


def test_the_rule_passes_the_statistical_check() -> None:
    expected = spec.statistical_case().expected
    values = _p_values(expected)
    assert min(values) > 1e-3, values  # a fixed batch: these numbers never change
    check = spec.statistical_check(_stat_result(expected))
    assert check.passed, check.message
    assert f"smallest p-value {min(values):.2g}" in check.message


def _own_randomness(seed: int) -> torch.Tensor:
    """The rule with random numbers of our own instead of the given uniforms: the right
    distribution, the wrong integers."""
    draft, q, p, _, _ = spec.statistical_case().args
    gen = torch.Generator().manual_seed(seed)
    shape = draft.shape
    u_accept = torch.rand(shape, generator=gen, dtype=torch.float64)
    u_sample = torch.rand(shape[:1], generator=gen, dtype=torch.float64)
    return spec.speculate(draft, q, p, u_accept, u_sample)


def test_the_statistical_check_tests_the_distribution_not_the_integers() -> None:
    tokens = _own_randomness(3)
    assert not torch.equal(tokens, spec.statistical_case().expected)
    check = spec.statistical_check(_stat_result(tokens))
    assert check.passed, check.message


@pytest.mark.parametrize("why", sorted(spec.MISTAKES))
def test_the_statistical_check_alone_catches_every_listed_slip(why: str) -> None:
    case = spec.statistical_case()
    for rule in spec.MISTAKES[why]:
        check = spec.statistical_check(_stat_result(spec.speculate(*case.args, rule)))
        assert not check.passed and check.checked, (why, rule)
        assert "p-value below 1e-300" in check.message or "row " in check.message


def test_a_malformed_row_is_named() -> None:
    tokens = spec.statistical_case().expected.clone()
    tokens[7] = torch.tensor([3, -1, 2, -1])
    check = spec.statistical_check(_stat_result(tokens))
    assert not check.passed
    assert check.message.startswith("row 7 of the statistical batch is [3, -1, 2, -1]")


def test_a_result_of_the_wrong_shape_is_not_checked() -> None:
    check = spec.statistical_check(_stat_result(torch.zeros(100_000, 3, dtype=torch.int64)))
    assert not check.passed and not check.checked
    assert "(100000, 4) int64 tensor" in check.message


# ---- through the sandbox ------------------------------------------------------------------


def grade(zygote: SandboxRunner, name: str) -> Verdict:
    verdict, _ = grade_in_sandbox(zygote, SpeculativeAccept(), TASK, SOLUTIONS / name)
    return verdict


@pytest.mark.parametrize("name", ["speculative_correct.py", "speculative_correct_lists.py"])
def test_correct_solutions_pass(zygote: SandboxRunner, name: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "passed", [c.message for c in verdict.checks if not c.passed]
    assert verdict.score == 1.0
    assert "smallest p-value" in message(verdict, STATISTICS)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "speculative_wrong_float.py",
            "one draft, accepted: the bonus comes from p[:, 1]: expected dtype int64, got float64",
        ),
        (
            "speculative_wrong_shape.py",
            "one draft, accepted: the bonus comes from p[:, 1]: expected shape (1, 2), got (1, 1)",
        ),
        ("speculative_wrong_list.py", "returned a list; build and return a torch.Tensor instead"),
        ("speculative_wrong_missing.py", "is not defined at the top level of your file"),
    ],
)
def test_bad_results_are_the_learners_and_said_so(
    zygote: SandboxRunner, name: str, expected: str
) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed" and verdict.score == 0.0
    assert expected in failing(verdict, CORRECT)
    statistics = [c for c in verdict.checks if c.name == STATISTICS]
    assert [(c.passed, c.checked) for c in statistics] == [(False, False)]
    assert "not checked" in statistics[0].message


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "speculative_wrong_resample_p.py",
            "Input: speculative_accept(torch.tensor([[1]]), torch.tensor([[[0.2, 0.6, 0.2]]], "
            "dtype=torch.float64), torch.tensor([[[0.4, 0.3, 0.3], [0.3, 0.3, 0.4]]], "
            "dtype=torch.float64), torch.tensor([[0.7]], dtype=torch.float64), "
            "torch.tensor([0.5], dtype=torch.float64)).",
        ),
        ("speculative_wrong_resample_p.py", "Likely cause: at a rejection you sampled from"),
        ("speculative_wrong_no_bonus.py", "expected 2, got -1"),
        ("speculative_wrong_no_bonus.py", "Likely cause: when all k drafts are accepted"),
    ],
)
def test_mistakes_are_named(zygote: SandboxRunner, name: str, expected: str) -> None:
    verdict = grade(zygote, name)
    assert verdict.status == "failed"
    assert expected in failing(verdict, CORRECT)
    assert "p-value below 1e-300" in failing(verdict, STATISTICS)


def test_a_job_out_of_time_is_told_about_the_big_batch() -> None:
    grader = SpeculativeAccept()
    plan: Plan = grader.plan(0, "cpu")
    result = SandboxResult("timeout", "time limit 10 s exceeded", wall_s=10.2)
    verdict = grader.judge(TASK, plan, result, "")
    (check,) = verdict.checks
    assert verdict.status == "failed" and not check.passed
    assert check.message.startswith("time limit 10 s exceeded. The last call holds 100,000")
    assert "a loop that never ends" not in check.message


def test_a_slip_seen_only_in_the_statistical_batch_is_still_named() -> None:
    """Its slips are worked out only for a wrong result, and then name the cause."""
    grader = SpeculativeAccept()
    plan = grader.plan(5, "cpu")
    cases = plan.expected["cases"]
    assert cases[-1] is spec.statistical_case() and not cases[-1].mistakes
    no_bonus = spec.speculate(*cases[-1].args, spec.Rule(bonus="none"))
    outputs = [c.expected for c in cases[:-1]] + [no_bonus]
    calls = tuple(
        CallResult(call.function, call.label, "ok", "torch.Tensor", to_raw(out))
        for call, out in zip(plan.calls, outputs, strict=True)
    )
    verdict = grader.judge(TASK, plan, SandboxResult("ok", "", calls), "")
    wrong = failing(verdict, CORRECT)
    assert wrong.startswith(f"failed 1 of {len(cases)} cases. {spec.STAT_LABEL}: ")
    assert "Likely cause: when all k drafts are accepted, emit one more token" in wrong
    assert "p-value below 1e-300" in failing(verdict, STATISTICS)
