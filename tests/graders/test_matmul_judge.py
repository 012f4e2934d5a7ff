"""judge() on constructed sandbox results: what passes, what fails, and what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from graders.base import Check, Plan, Verdict
from graders.comparison import Case
from graders.registry import load_grader
from graders.tasks.matmul_three_ways import PASSED_FEEDBACK, TOLERANCE, MatmulThreeWays
from sandbox.api import Call, CallResult, SandboxResult
from tests.graders import sandbox_results as fake
from tests.graders.support import load_quest

TASK = "go-brrrr/matmul-three-ways"
SOLUTIONS = Path(__file__).parent / "solutions"
CORRECT_SOURCE = (SOLUTIONS / "correct.py").read_text()
FUNCTIONS = ("matmul_loops", "matmul_dot", "matmul_columns")
RULE = "builds the product itself"
#: per function: 2 fixed cases (float32 square, float64 non-square) and 6 shape classes x 2 dtypes
CASES = 14
FLOAT64_CASES = 7


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


def first_case(plan: Plan, function: str, kind: str, dtype: str = "float64") -> Case:
    """The first drawn case of ``function`` in shape class ``kind`` and ``dtype``."""
    return next(
        c
        for c in plan.expected["cases"]
        if c.drawn
        and c.function == function
        and c.label.startswith(f"{kind} ")
        and c.label.endswith(dtype)
    )


def a_and_b(case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    a, b = case.args
    return a.double(), b.double()


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
    kinds = ("correct results", RULE)
    assert [c.name for c in verdict.checks] == [f"{f}: {k}" for f in FUNCTIONS for k in kinds]
    assert all(c.passed for c in verdict.checks)
    assert f"all {CASES} cases correct" in verdict.checks[0].message
    assert verdict.feedback == PASSED_FEEDBACK
    assert verdict.task == TASK and verdict.duration_s == 0.25


def test_the_prompt_states_the_dtypes_and_tolerances_the_grader_uses() -> None:
    (task,) = [t for t in load_quest("go-brrrr").tasks if t.id == "matmul-three-ways"]
    prompt = " ".join(task.prompt.split())
    assert "in the inputs' dtype" in prompt
    assert "tol × (1 + S[i, j])" in prompt and "S = |A| @ |B|" in prompt
    stated = re.search(r"`tol` is (\S+) in float32, (\S+) in float64", prompt)
    assert stated, prompt
    assert (float(stated[1]), float(stated[2].rstrip(":"))) == (
        TOLERANCE[torch.float32],
        TOLERANCE[torch.float64],
    )


def test_the_pass_feedback_times_the_size_the_prompt_names() -> None:
    (task,) = [t for t in load_quest("go-brrrr").tasks if t.id == "matmul-three-ways"]
    prompt_size = re.search(r"time the three on a (\d+)×(\d+) input", task.prompt)
    feedback_size = re.search(r"Time them on (\d+)x(\d+) inputs", PASSED_FEEDBACK)
    assert prompt_size and feedback_size
    assert prompt_size.groups() == feedback_size.groups()


def test_float32_rounding_is_within_tolerance(grader: MatmulThreeWays, plan: Plan) -> None:
    def float32_loop(case: Case) -> torch.Tensor:
        a, b = case.args
        out = torch.zeros(a.shape[0], b.shape[1], dtype=a.dtype)
        for p in reversed(range(a.shape[1])):  # another summation order than BLAS
            out += a[:, p : p + 1] * b[p : p + 1, :]
        return out

    verdict = judge(grader, plan, fake.run(plan, dict.fromkeys(FUNCTIONS, float32_loop)))
    assert verdict.status == "passed"


def test_a_small_float64_error_fails(grader: MatmulThreeWays, plan: Plan) -> None:
    def nearly(case: Case) -> torch.Tensor:
        return fake.correct(case) + 1e-6

    verdict = judge(grader, plan, fake.run(plan, {"matmul_dot": nearly}))
    message = check(verdict, "matmul_dot: correct results").message
    assert f"failed {FLOAT64_CASES} of {CASES} cases" in message  # float32 tolerates 1e-6
    assert "max abs error 1e-06" in message


def test_wrong_value_names_the_case_and_the_error(grader: MatmulThreeWays, plan: Plan) -> None:
    target = first_case(plan, "matmul_loops", "non-square")

    def one_wrong(case: Case) -> torch.Tensor:
        out = fake.correct(case)
        if case is target:
            out[0, 1] += 0.5
        return out

    verdict = judge(grader, plan, fake.run(plan, {"matmul_loops": one_wrong}))
    assert verdict.status == "failed"
    assert verdict.score == pytest.approx(4 / 6)  # its rule check is not made
    correctness = check(verdict, "matmul_loops: correct results")
    assert not correctness.passed
    assert correctness.message.startswith(f"failed 1 of {CASES} cases. {target.label}: ")
    assert "1 of" in correctness.message and "entries wrong at (0, 1)" in correctness.message
    assert "max abs error 0.5" in correctness.message
    assert "--task go-brrrr/matmul-three-ways --seed 1234" in correctness.message
    method = check(verdict, f"matmul_loops: {RULE}")
    assert not method.passed and not method.checked and method.mark == "–"
    assert "counts once results are right" in method.message
    assert verdict.feedback == (
        "4 of 6 checks passed. Start with “matmul_loops: correct results” below."
    )


def test_an_honest_wrong_solution_is_not_accused(grader: MatmulThreeWays, plan: Plan) -> None:
    """Wrong results from allowed operations: the rule checks are not made, not failed."""
    source = (SOLUTIONS / "wrong_values.py").read_text()
    wrong = dict.fromkeys(FUNCTIONS, lambda c: fake.correct(c) * 2)
    verdict = judge(grader, plan, fake.run(plan, wrong), source)
    rules = [check(verdict, f"{f}: {RULE}") for f in FUNCTIONS]
    assert [c.mark for c in rules] == ["–"] * 3
    assert verdict.score == 0.0


def test_a_small_failing_input_is_shown(grader: MatmulThreeWays, plan: Plan) -> None:
    swapped = {"matmul_loops": lambda c: fake.correct(c).T.contiguous()}
    verdict = judge(grader, plan, fake.run(plan, swapped))
    message = check(verdict, "matmul_loops: correct results").message
    assert "square 2x2 @ 2x2, float32" in message
    assert "Input: matmul_loops(torch.tensor([[1.0, 2.0], [3.0, 4.0]]" in message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([[1.0]], "returned a list; build and return a torch.Tensor instead"),
        ((1.0,), "returned a tuple"),
        (None, "returned None: is the `return` statement missing?"),
        (3.0, "returned a float, not a torch.Tensor"),
        ("x", "returned a str, not a torch.Tensor"),
    ],
)
def test_wrong_return_types_are_named(
    grader: MatmulThreeWays, plan: Plan, value: object, expected: str
) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_columns": lambda _: value}))
    message = check(verdict, "matmul_columns: correct results").message
    assert f"failed {CASES} of {CASES} cases" in message
    assert expected in message


def test_numpy_array_is_named(grader: MatmulThreeWays, plan: Plan) -> None:
    def numpy(call: Call) -> CallResult:
        return CallResult(call.function, call.label, "ok", "numpy.ndarray")

    verdict = judge(grader, plan, fake.run(plan, results={"matmul_dot": numpy}))
    message = check(verdict, "matmul_dot: correct results").message
    assert "returned a numpy array; stay in torch" in message


def test_a_transposed_result_is_named_whatever_its_shape(
    grader: MatmulThreeWays, plan: Plan
) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_loops": lambda c: fake.correct(c).T}))
    message = check(verdict, "matmul_loops: correct results").message
    # the first failure is the fixed square case, where the transpose has the right shape and
    # wrong entries; the non-square ones, of the wrong shape, fail as well
    fixed = "square 2x2 @ 2x2, float32: 2 of 4 entries wrong at (0, 1): expected 22, got 43 "
    assert message.startswith("failed ") and fixed in message, message
    assert "Also failing: non-square" in message, message
    assert "Likely cause: you computed the transpose" in message


def test_a_one_dimensional_result_gets_the_functions_hint(
    grader: MatmulThreeWays, plan: Plan
) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_dot": lambda c: fake.correct(c)[0]}))
    message = check(verdict, "matmul_dot: correct results").message
    assert "expected shape (2, 2), got (2,)" in message
    assert "C has shape (n, m)" in message and "Likely cause" not in message


def test_a_float32_result_names_the_missing_dtype(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan, {"matmul_dot": lambda c: fake.correct(c).float()}))
    message = check(verdict, "matmul_dot: correct results").message
    assert f"failed {FLOAT64_CASES} of {CASES} cases" in message  # only the float64 ones
    assert "expected dtype float64, got float32" in message
    assert "Likely cause: your result is float32" in message and "dtype=A.dtype" in message


def test_nan_gets_the_nonfinite_hint(grader: MatmulThreeWays, plan: Plan) -> None:
    def with_nan(case: Case) -> torch.Tensor:
        out = fake.correct(case)
        out[-1, -1] = float("nan")
        return out

    message = check(
        judge(grader, plan, fake.run(plan, {"matmul_loops": with_nan})),
        "matmul_loops: correct results",
    ).message
    assert "Likely cause: your result has nan or inf" in message and "torch.empty" in message


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
    assert "loop i over A.shape[0], j over B.shape[1] and p over A.shape[1]" in message


def test_torch_dot_on_matrices_gets_its_own_hint(grader: MatmulThreeWays, plan: Plan) -> None:
    error = "RuntimeError: 1D tensors expected, but got 2D and 2D tensors"
    raises = {"matmul_dot": lambda c: fake.status(c, "raised", error)}
    verdict = judge(grader, plan, fake.run(plan, results=raises))
    message = check(verdict, "matmul_dot: correct results").message
    assert "torch.dot takes two 1-D tensors, row i of A and column j of B" in message


def test_function_not_defined(grader: MatmulThreeWays, plan: Plan) -> None:
    missing = {"matmul_dot": lambda c: fake.status(c, "not_defined")}
    source = CORRECT_SOURCE.replace("def matmul_dot(", "def matmul_dott(")
    verdict = judge(grader, plan, fake.run(plan, results=missing), source)
    assert verdict.status == "failed"
    assert verdict.score == pytest.approx(4 / 6)
    assert check(verdict, "matmul_dot: correct results").message.startswith(
        "matmul_dot is not defined at the top level of your file."
    )
    assert check(verdict, f"matmul_dot: {RULE}").mark == "–"


def test_function_not_callable(grader: MatmulThreeWays, plan: Plan) -> None:
    tensor = {
        "matmul_columns": lambda c: CallResult(c.function, c.label, "not_callable", "torch.Tensor")
    }
    verdict = judge(grader, plan, fake.run(plan, results=tensor))
    message = check(verdict, "matmul_columns: correct results").message
    assert message.startswith("matmul_columns is a torch.Tensor, not a function")


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
    truncated = SandboxResult("ok", "", result.calls[:CASES])
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
    method = check(verdict, f"matmul_dot: {RULE}")
    assert method.mark == "✗"
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
    message = check(verdict, f"matmul_loops: {RULE}").message
    assert "line 7 `return A @ B`: the @ operator is a matrix product" in message
    assert "three nested loops" in message


def test_forbidden_code_fails_with_wrong_answers_too(grader: MatmulThreeWays, plan: Plan) -> None:
    source = (SOLUTIONS / "cheat_operator.py").read_text()
    wrong = dict.fromkeys(FUNCTIONS, lambda c: fake.correct(c) * 2)
    verdict = judge(grader, plan, fake.run(plan, wrong), source)
    assert [check(verdict, f"{f}: {RULE}").mark for f in FUNCTIONS] == ["✗"] * 3


def test_the_three_may_not_call_one_another(grader: MatmulThreeWays, plan: Plan) -> None:
    source = CORRECT_SOURCE + "\n\ndef matmul_dot(A, B):\n    return matmul_loops(A, B)\n"
    verdict = judge(grader, plan, fake.run(plan), source)
    assert check(verdict, f"matmul_dot: {RULE}").mark == "✗"
    assert check(verdict, f"matmul_loops: {RULE}").passed


def test_unparsable_source_fails_the_method_check(grader: MatmulThreeWays, plan: Plan) -> None:
    verdict = judge(grader, plan, fake.run(plan), "def matmul_loops(A, B)\n")
    method = check(verdict, f"matmul_loops: {RULE}")
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


def _on_square(wrong: fake.Behaviour) -> fake.Behaviour:
    """``wrong`` where the shapes allow it (square), correct elsewhere, as such code
    raises on the other shapes."""

    def behaviour(case: Case) -> object:
        a, b = case.args
        square = a.shape[0] == a.shape[1] == b.shape[1]
        return wrong(case) if square else fake.correct(case)

    return behaviour


def _rounded(output: torch.Tensor, case: Case) -> torch.Tensor:
    return output.to(case.expected.dtype)


@pytest.mark.parametrize(
    ("behaviour", "cause"),
    [
        (lambda c: torch.zeros_like(fake.correct(c)), "the result is all zeros"),
        (_on_square(lambda c: _rounded(a_and_b(c)[1] @ a_and_b(c)[0], c)), "B @ A"),
        (_on_square(lambda c: c.args[0] * c.args[1]), "elementwise product"),
        (_on_square(lambda c: _rounded(a_and_b(c)[0] @ a_and_b(c)[1].T, c)), "row j of B"),
        (lambda c: _rounded(a_and_b(c)[0][:, -1:] * a_and_b(c)[1][-1:], c), "last term"),
        (lambda c: _rounded(a_and_b(c)[0][:, :-1] @ a_and_b(c)[1][:-1], c), "misses the last"),
    ],
)
def test_common_mistakes_are_named(
    grader: MatmulThreeWays, plan: Plan, behaviour: fake.Behaviour, cause: str
) -> None:
    message = check(
        judge(grader, plan, fake.run(plan, {"matmul_loops": behaviour})),
        "matmul_loops: correct results",
    ).message
    assert "Likely cause: " in message and cause in message.split("Likely cause: ")[1]


@pytest.mark.parametrize(("index", "cause"), [(-1, "last row is zero"), (None, "last column")])
def test_an_untouched_last_row_or_column_is_named(
    grader: MatmulThreeWays, plan: Plan, index: int | None, cause: str
) -> None:
    def untouched(case: Case) -> torch.Tensor:
        out = fake.correct(case)
        if index is None:
            out[:, -1] = 0
        else:
            out[index] = 0
        return out

    message = check(
        judge(grader, plan, fake.run(plan, {"matmul_columns": untouched})),
        "matmul_columns: correct results",
    ).message
    assert f"Likely cause: the {cause}" in message


def test_two_slips_at_once_name_no_single_cause(grader: MatmulThreeWays, plan: Plan) -> None:
    def both(case: Case) -> torch.Tensor:
        return fake.correct(case).T.contiguous() * 2

    message = check(
        judge(grader, plan, fake.run(plan, {"matmul_dot": both})), "matmul_dot: correct results"
    ).message
    assert "Likely cause" not in message and "torch.dot takes two 1-D tensors" in message
