"""judge() on constructed sandbox results: what passes, what fails, and what it says."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bot.sandbox.api import Call, CallResult, SandboxResult
from graders import load_grader
from graders.base import Check, Plan, Verdict
from graders.matmul_cases import ExpectedCase
from graders.matmul_three_ways import PASSED_FEEDBACK, MatmulThreeWays
from tests.graders import sandbox_results as fake

TASK = "go-brrrr/matmul-three-ways"
SOLUTIONS = Path(__file__).parent / "solutions"
CORRECT_SOURCE = (SOLUTIONS / "correct.py").read_text()
FUNCTIONS = ("matmul_loops", "matmul_dot", "matmul_columns")


@pytest.fixture(scope="module")
def grader() -> MatmulThreeWays:
    return MatmulThreeWays()


@pytest.fixture(scope="module")
def plan(grader: MatmulThreeWays) -> Plan:
    return grader.plan(seed=1234, device="cpu")


def judge(grader: MatmulThreeWays, plan: Plan, result: SandboxResult, source: str = "") -> Verdict:
    return grader.judge(TASK, plan, result, source or CORRECT_SOURCE)


def check(verdict: Verdict, name: str) -> Check:
    (found,) = [c for c in verdict.checks if c.name == name]
    return found


def first_case(plan: Plan, function: str, kind: str, dtype: str = "float64") -> ExpectedCase:
    return next(
        c
        for c in plan.expected["cases"]
        if c.function == function and c.case.kind == kind and c.case.dtype_name == dtype
    )


def test_registry_builds_this_grader() -> None:
    grader = load_grader("matmul_three_ways")
    assert isinstance(grader, MatmulThreeWays)
    assert grader.interface == FUNCTIONS
    assert not grader.needs_cuda
    assert grader.limits.wall_s == 10.0 and grader.limits.memory_bytes == 2 << 30


def test_correct_results_pass_with_full_score(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan))
    assert verdict.status == "passed"
    assert verdict.score == 1.0
    kinds = ("correct results", "builds the product itself")
    assert [c.name for c in verdict.checks] == [f"{f}: {k}" for f in FUNCTIONS for k in kinds]
    assert all(c.passed for c in verdict.checks)
    assert "all 12 cases correct" in verdict.checks[0].message
    assert verdict.feedback == PASSED_FEEDBACK
    assert verdict.task == TASK and verdict.duration_s == 0.25


def test_float32_rounding_is_within_tolerance(grader: MatmulThreeWays, plan: Plan) -> None:
    def float32_loop(case: ExpectedCase) -> torch.Tensor:
        a, b = case.a, case.b
        out = torch.zeros(case.case.m, case.case.n, dtype=a.dtype)
        for p in range(case.case.k):  # a different summation order from BLAS
            out += a[:, p : p + 1] * b[p : p + 1, :]
        return out

    verdict = judge(grader, plan, fake.run(plan, dict.fromkeys(FUNCTIONS, float32_loop)))
    assert verdict.status == "passed"


def test_a_small_float64_error_fails(grader: MatmulThreeWays, plan: Plan) -> None:
    def nearly(case: ExpectedCase) -> torch.Tensor:
        return fake.correct(case) + 1e-6

    verdict = judge(grader, plan, fake.run(plan, {"matmul_dot": nearly}))
    message = check(verdict, "matmul_dot: correct results").message
    assert "failed 6 of 12 cases" in message  # the float32 cases tolerate 1e-6
    assert "max abs error 1e-06" in message


def test_wrong_value_names_the_case_and_the_error(grader: MatmulThreeWays, plan: Plan) -> None:
    target = first_case(plan, "matmul_loops", "non-square")

    def one_wrong(case: ExpectedCase) -> torch.Tensor:
        out = fake.correct(case)
        if case is target:
            out[0, 1] += 0.5
        return out

    verdict = judge(grader, plan, fake.run(plan, {"matmul_loops": one_wrong}))
    assert verdict.status == "failed"
    assert verdict.score == pytest.approx(4 / 6)  # its method check is withheld too
    correctness = check(verdict, "matmul_loops: correct results")
    assert not correctness.passed
    c = target.case
    assert f"non-square {c.m}x{c.k} @ {c.k}x{c.n}, float64" in correctness.message
    assert "failed 1 of 12 cases" in correctness.message
    assert "1 of" in correctness.message and "max abs error 0.5 at (0, 1)" in correctness.message
    method = check(verdict, "matmul_loops: builds the product itself")
    assert not method.passed and "counts once results are right" in method.message
    assert verdict.feedback.startswith("4 of 6 checks passed. Start with matmul_loops")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([[1.0]], "returned a list. Hint: build the result with torch.zeros(A.shape[0]"),
        ((1.0,), "returned a tuple"),
        (None, "returned None. Hint: did you forget `return C` at the end?"),
        (3.0, "returned a single float"),
        ("x", "returned a str. Hint: return a torch.Tensor"),
    ],
)
def test_wrong_return_types_are_named(
    grader: MatmulThreeWays, plan: Plan, value: object, expected: str
) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_columns": lambda _: value}))
    message = check(verdict, "matmul_columns: correct results").message
    assert "failed 12 of 12 cases" in message
    assert expected in message


def test_numpy_array_is_named(grader: MatmulThreeWays, plan: Plan) -> None:
    def numpy(call: Call) -> CallResult:
        return CallResult(call.function, call.label, "ok", "numpy.ndarray")

    verdict = judge(grader, plan, fake.run(plan, results={"matmul_dot": numpy}))
    message = check(verdict, "matmul_dot: correct results").message
    assert "returned a numpy array" in message and "without .numpy()" in message


def test_wrong_shape_states_both_shapes(grader: MatmulThreeWays, plan: Plan) -> None:
    def transposed(case: ExpectedCase) -> torch.Tensor:
        return fake.correct(case).T if case.case.kind == "non-square" else fake.correct(case)

    verdict = judge(grader, plan, fake.run(plan, {"matmul_loops": transposed}))
    message = check(verdict, "matmul_loops: correct results").message
    case = first_case(plan, "matmul_loops", "non-square", "float32").case
    assert message.startswith(
        f"failed 2 of 12 cases. {case.label}: expected shape ({case.m}, {case.n}), "
        f"got ({case.n}, {case.m}). Hint: rows and columns are swapped"
    )


def test_one_dimensional_result_is_explained(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_dot": lambda c: fake.correct(c)[0]}))
    assert "return a 2-D tensor" in check(verdict, "matmul_dot: correct results").message


def test_wrong_dtype_is_named(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_dot": lambda c: fake.correct(c).float()}))
    message = check(verdict, "matmul_dot: correct results").message
    assert "failed 6 of 12 cases" in message  # only the float64 ones
    assert "expected dtype float64, got float32" in message
    assert "dtype=A.dtype" in message


def test_nan_is_reported(grader: MatmulThreeWays, plan: Plan) -> None:
    def with_nan(case: ExpectedCase) -> torch.Tensor:
        out = fake.correct(case)
        out[-1, -1] = float("nan")
        return out

    message = check(
        judge(grader, plan, fake.run(plan, {"matmul_loops": with_nan})),
        "matmul_loops: correct results",
    ).message
    assert "contains nan at" in message and "torch.zeros, not torch.empty" in message


def test_raised_exception_is_quoted_with_a_hint(grader: MatmulThreeWays, plan: Plan) -> None:
    error = (  # as the sandbox reports it: a traceback trimmed to the learner's frames
        "Traceback (most recent call last):\n"
        '  File "submission.py", line 9, in matmul_loops\n'
        "    C[i, j] += A[i, p] * B[p, j]\n"
        "               ~^^^^^^\n"
        "IndexError: index 3 is out of bounds for dimension 0 with size 3"
    )
    raises = {"matmul_loops": lambda c: fake.status(c, "raised", error)}
    verdict = judge(grader, plan, fake.run(plan, results=raises))
    message = check(verdict, "matmul_loops: correct results").message
    assert (
        "raised IndexError: index 3 is out of bounds for dimension 0 with size 3 "
        "(line 9: `C[i, j] += A[i, p] * B[p, j]`)"
    ) in message
    assert "take the loop bounds from A.shape[0], A.shape[1] and B.shape[1]" in message


def test_torch_dot_on_matrices_gets_its_own_hint(grader: MatmulThreeWays, plan: Plan) -> None:
    error = "RuntimeError: 1D tensors expected, but got 2D and 2D tensors"
    raises = {"matmul_dot": lambda c: fake.status(c, "raised", error)}
    verdict = judge(grader, plan, fake.run(plan, results=raises))
    message = check(verdict, "matmul_dot: correct results").message
    assert "a row A[i] and a column B[:, j]" in message


def test_function_not_defined(grader: MatmulThreeWays, plan: Plan) -> None:
    missing = {"matmul_dot": lambda c: fake.status(c, "not_defined")}
    source = CORRECT_SOURCE.replace("def matmul_dot(", "def matmul_dott(")
    verdict = judge(grader, plan, fake.run(plan, results=missing), source)
    assert verdict.status == "failed"
    assert verdict.score == pytest.approx(4 / 6)
    assert check(verdict, "matmul_dot: correct results").message == (
        "matmul_dot is not defined: define matmul_dot(A, B) at the top level of your file "
        "(check spelling)"
    )
    method = check(verdict, "matmul_dot: builds the product itself")
    assert "not checked: not found" in method.message


def test_function_not_callable(grader: MatmulThreeWays, plan: Plan) -> None:
    not_callable = {"matmul_columns": lambda c: fake.status(c, "not_callable")}
    verdict = judge(grader, plan, fake.run(plan, results=not_callable))
    message = check(verdict, "matmul_columns: correct results").message
    assert message.startswith("matmul_columns is defined but is not a function")
    tensor = {
        "matmul_columns": lambda c: CallResult(c.function, c.label, "not_callable", "torch.Tensor")
    }
    verdict = judge(grader, plan, fake.run(plan, results=tensor))
    message = check(verdict, "matmul_columns: correct results").message
    assert "is not a function (it is a torch.Tensor)" in message


def test_skipped_calls_fail(grader: MatmulThreeWays, plan: Plan) -> None:
    skipped = {"matmul_loops": lambda c: fake.status(c, "skipped", "an earlier call timed out")}
    verdict = judge(grader, plan, fake.run(plan, results=skipped))
    message = check(verdict, "matmul_loops: correct results").message
    assert "was not run: an earlier call timed out" in message


def test_results_that_do_not_match_the_plan_count_as_missing(
    grader: MatmulThreeWays, plan: Plan
) -> None:
    result = fake.run(plan)
    shuffled = SandboxResult("ok", "", tuple(reversed(result.calls)))
    verdict = judge(grader, plan, shuffled)
    assert verdict.status == "failed"
    assert "no result came back for this case" in verdict.checks[0].message
    truncated = SandboxResult("ok", "", result.calls[:12])
    verdict = judge(grader, plan, truncated)
    assert check(verdict, "matmul_loops: correct results").passed
    assert not check(verdict, "matmul_dot: correct results").passed


def test_a_stub_scores_nothing(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan, dict.fromkeys(FUNCTIONS, lambda _: None)))
    assert verdict.status == "failed" and verdict.score == 0.0


def test_forbidden_op_recorded_by_the_sandbox_fails(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan, ops={"matmul_dot": ("aten::dot", "aten::mm")}))
    assert verdict.status == "failed"
    assert verdict.score == pytest.approx(5 / 6)
    method = check(verdict, "matmul_dot: builds the product itself")
    assert "while it ran, torch recorded aten::mm" in method.message
    assert "torch.dot(A[i], B[:, j])" in method.message


def test_one_d_dot_recorded_by_the_sandbox_is_fine(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan, ops={"matmul_dot": ("dot", "zeros", "select")}))
    assert verdict.status == "passed"


def test_forbidden_code_fails_even_with_right_answers(grader: MatmulThreeWays, plan: Plan) -> None:
    source = (SOLUTIONS / "cheat_operator.py").read_text()
    verdict = judge(grader, plan, fake.run(plan), source)
    assert verdict.status == "failed"
    assert verdict.score == pytest.approx(3 / 6)
    message = check(verdict, "matmul_loops: builds the product itself").message
    assert "line 7 `return A @ B`: the @ operator is a matrix product" in message
    assert "three nested loops" in message


def test_unparsable_source_fails_the_method_check(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan), "def matmul_loops(A, B)\n")
    method = check(verdict, "matmul_loops: builds the product itself")
    assert not method.passed and "could not analyse" in method.message


@pytest.mark.parametrize(
    ("status", "message", "hint"),
    [
        ("timeout", "time limit 10 s exceeded", "a loop that never ends"),
        ("memory", "memory limit 2 GiB exceeded", "grows without bound"),
        ("crashed", "crashed with SIGSEGV", "killed by the operating system"),
        ("load_error", "SyntaxError: invalid syntax (submission.py, line 3)", "imports your file"),
        ("exited", "the submission called sys.exit(0)", "Don't call sys.exit()"),
        ("output_limit", "printed more than 64 KiB", "Remove prints inside loops"),
        ("protocol_error", "the job's reply was malformed", "must not write to"),
    ],
)
def test_job_failures_fail_with_the_sandbox_message(
    grader: MatmulThreeWays, plan: Plan, status: str, message: str, hint: str
) -> None:
    verdict = judge(grader, plan, SandboxResult(status, message, wall_s=10.2))  # type: ignore[arg-type]
    assert verdict.status == "failed" and verdict.score == 0.0
    (only,) = verdict.checks
    assert only.name == "submission runs" and not only.passed
    assert only.message.startswith(message + ". ")
    assert hint in only.message
    assert message not in verdict.feedback and hint not in verdict.feedback  # said once
    assert "did not run to the end" in verdict.feedback
    assert verdict.duration_s == 10.2


@pytest.mark.parametrize(
    ("stderr", "hint"),
    [
        ("NameError: name 'get_ipython' is not defined", "only exists inside Jupyter"),
        ("ModuleNotFoundError: No module named 'numpy'", "Only torch and the Python standard"),
    ],
)
def test_load_errors_with_known_causes(
    grader: MatmulThreeWays, plan: Plan, stderr: str, hint: str
) -> None:
    verdict = judge(grader, plan, SandboxResult("load_error", "importing failed", stderr=stderr))
    assert hint in verdict.checks[0].message


def test_internal_error_is_an_error_not_a_failure(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, SandboxResult("internal_error", "zygote did not answer"))
    assert verdict.status == "error" and verdict.score == 0.0
    assert "zygote did not answer" in verdict.checks[0].message
    assert "not your fault" in verdict.feedback


@pytest.mark.parametrize(
    ("behaviour", "hint"),
    [
        (lambda c: torch.zeros_like(fake.correct(c)), "all zeros"),
        (lambda c: fake.correct(c).T.contiguous(), "you computed the transpose"),
        (lambda c: torch.matmul(c.b, c.a), "you computed B @ A"),
        (lambda c: c.a * c.b, "elementwise product A * B"),
    ],
)
def test_common_square_mistakes_are_recognised(
    grader: MatmulThreeWays, plan: Plan, behaviour: fake.Behaviour, hint: str
) -> None:
    square_only = {
        "matmul_loops": lambda c: behaviour(c) if c.case.kind == "square" else fake.correct(c)
    }
    message = check(
        judge(grader, plan, fake.run(plan, square_only)), "matmul_loops: correct results"
    ).message
    assert "failed 2 of 12 cases" in message and hint in message


def test_an_untouched_last_row_is_recognised(grader: MatmulThreeWays, plan: Plan) -> None:
    def last_row_zero(case: ExpectedCase) -> torch.Tensor:
        out = fake.correct(case)
        if case.case.m > 1:
            out[-1] = 0
        return out

    message = check(
        judge(grader, plan, fake.run(plan, {"matmul_loops": last_row_zero})),
        "matmul_loops: correct results",
    ).message
    assert "only the last row is wrong" in message
