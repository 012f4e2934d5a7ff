"""Speed trials cannot be forged: each trick a kernel-competition entry has used either fails
the trial or ranks no better than the honest file it is built on, and honest files rank the
same way every time.

Every forgery prints a marker just before its trick, and the tests read it from the learner
turns' output, so a passing test shows the attack ran.  All are entries for
transformer-internals/stable-softmax, raced against ``graders/speed/softmax_rows.py``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.grading.job_spec import SpeedSpec
from bot.grading.speed_trial import PAIRS, TrialOutcome, run_trial
from bot.sandbox import Zygote
from graders import REGISTRY

FORGERIES = Path(__file__).parent / "speed_forgeries"
SPEED = SpeedSpec("softmax", "softmax_rows")
LIMITS = REGISTRY["stable_softmax"].limits
#: a forgery "gains rank" only beyond this factor over the honest median: the ratio's own
#: noise on a busy 2-core machine stays well inside it, and every working forgery of this
#: kind is worth several times over
NOISE = 1.3


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as running:
        yield running


def trial(zygote: Zygote, name: str) -> TrialOutcome:
    source = (FORGERIES / f"{name}.py").read_text()
    return run_trial(SPEED, source, f"{name}.py", zygote, LIMITS)


@pytest.fixture(scope="module")
def honest(zygote: Zygote) -> list[TrialOutcome]:
    """The honest file graded five times: the fairness runs and the forgeries' yardstick."""
    return [trial(zygote, "honest") for _ in range(5)]


def ratio(outcome: TrialOutcome) -> float:
    assert outcome.result is not None, outcome.reason
    return outcome.result.ratio


def honest_median(honest: list[TrialOutcome]) -> float:
    return statistics.median(ratio(o) for o in honest)


def test_a_trial_times_at_least_15_pairs_and_reports_its_figures(
    honest: list[TrialOutcome],
) -> None:
    result = honest[0].result
    assert result is not None and PAIRS >= 15 and result.pairs == PAIRS
    assert len(honest[0].samples) == PAIRS
    assert result.learner_s > 0 and result.reference_s > 0 and result.spread >= 0
    assert result.ratio == pytest.approx(statistics.median(r / le for r, le in honest[0].samples))
    assert result.device and result.device != "cpu"  # the CPU's model, the board's class


#: how far five trials of one honest file may stray from their median.  Measured on this 2-core
#: machine at 41 pairs: within 8% run alone (ten sets of five), but up to 17% when the trials
#: run after the rest of the grading tests; sharper timing is the speed-trial instrument's own
#: issue.  Still inside the forgeries' NOISE.
FAIRNESS = 0.25


def test_the_same_honest_file_ranks_within_a_quarter_every_time(
    honest: list[TrialOutcome],
) -> None:
    ratios = [ratio(o) for o in honest]
    middle = statistics.median(ratios)
    assert all(abs(r - middle) <= FAIRNESS * middle for r in ratios), ratios


def test_a_python_loop_ranks_below_the_vectorised_file_every_time(
    zygote: Zygote, honest: list[TrialOutcome]
) -> None:
    loops = [ratio(trial(zygote, "python_loop")) for _ in range(3)]
    assert max(loops) < min(ratio(o) for o in honest), (loops, [ratio(o) for o in honest])


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        ("patched_clocks", "FORGERY patched clocks"),
        ("cached_outputs", "FORGERY output cache"),
        ("work_ahead", "FORGERY work ahead"),
        ("reference_turn_burner", "FORGERY reference-turn burner"),
    ],
)
def test_tricks_that_leave_the_answer_right_gain_no_rank(
    zygote: Zygote, honest: list[TrialOutcome], name: str, marker: str
) -> None:
    """Clocks inside the job are not the clock; a cache never sees the same fresh input
    twice nor outlives its process; work started at import shares the one core with the call;
    a process left behind dies with the turn, before the reference's turn begins."""
    outcome = trial(zygote, name)
    assert marker in outcome.learner_output
    assert ratio(outcome) <= honest_median(honest) * NOISE, (ratio(outcome), honest_median(honest))


def test_a_wider_cpu_set_is_refused_and_more_threads_gain_nothing(
    zygote: Zygote, honest: list[TrialOutcome]
) -> None:
    outcome = trial(zygote, "wider_cpu")
    assert "FORGERY widen affinity from [" in outcome.learner_output
    assert "affinity refused: PermissionError errno 1" in outcome.learner_output
    assert "affinity widened" not in outcome.learner_output
    assert "torch threads 16" in outcome.learner_output  # granted, but on one core
    assert ratio(outcome) <= honest_median(honest) * NOISE


@pytest.mark.parametrize(
    ("name", "marker", "reason"),
    [
        ("precomputed", "FORGERY precomputed answer", "returned a wrong result"),
        ("lazy_result", "FORGERY lazy result", "returned a wrong result"),
        ("counts_calls", "FORGERY call counter", "returned a wrong result"),
        ("detects_shape", "FORGERY shape detector", "returned a wrong result"),
    ],
)
def test_tricks_that_skip_work_in_the_timed_call_fail_the_trial(
    zygote: Zygote, name: str, marker: str, reason: str
) -> None:
    """Every timed result is checked against the reference on that run's fresh inputs, and
    the bytes are read by the worker before its clock stops."""
    outcome = trial(zygote, name)
    assert marker in outcome.learner_output
    assert outcome.result is None and not outcome.our_fault
    assert reason in outcome.reason and "every timed result is checked" in outcome.reason
