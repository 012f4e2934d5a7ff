"""The speed trial's rules, played against scripted turns instead of the sandbox: which
calls are timed and in what order, what each call must bring back, when a trial ends, and
how its samples become the figures that rank.

``tests/worker/test_speed_trial.py`` races real jobs and shows the rules hold against real
forgeries; here every time is scripted, so each figure is checked exactly against what the
test computes itself from the script (a median, an exact binomial bound, bytes over the
fastest call), and each refusal at its boundary.  Fast enough to run against every mutant of
``bot/worker/speed_trial.py`` (``bench/mutation``).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import inspect
import math
import os
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy
import pytest
import torch

import graders.speed
from bot.jobs.job_spec import SpeedSpec
from bot.worker import speed_trial
from bot.worker.speed_trial import Roof, run_trial
from graders.base import TrialOutcome
from graders.registry import registry
from sandbox.cores import job_core
from sandbox.turn_client import Timed, TurnOver
from sandbox.turns import Answer, TensorShape, TurnSpec
from tests.worker import small_softmax

SPEED = SpeedSpec("softmax", "softmax_rows")
LIMITS = registry()["stable_softmax"].limits
ROWS, COLUMNS = 256, 128  # tests/worker/small_softmax.py's float32 input, and its output
#: read x once and write softmax(x) once, in float32: the op's least traffic, by hand
MOVED = 2 * ROWS * COLUMNS * 4
FLOPS = 4 * ROWS * COLUMNS
SOFTMAX_RTOL, SOFTMAX_ATOL = 2e-4, 1e-6


@pytest.fixture(autouse=True)
def small_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """softmax_rows' rules on a small matrix (its own 2048x1024 takes longer to draw)."""
    monkeypatch.setattr(graders.speed, "load", lambda name: small_softmax)


@dataclass
class Call:
    """What one scripted call saw: its number on its side, its inputs, the CPUs the trial's
    thread could run on while it was made, and the allowance it was given."""

    number: int
    inputs: tuple[torch.Tensor, ...]
    cpus: frozenset[int]
    limit_s: float


#: (call number on this side, the right answer, limit) -> (seconds, what lands in the buffer),
#: or a Timed to hand back as it is (a late call, a raise, a stop)
Play = Callable[[int, torch.Tensor, float], "tuple[float, torch.Tensor] | Timed"]


def answered(expect: TensorShape) -> Answer:
    return Answer("nonce", "returned", 0x1000, expect)


@dataclass
class ScriptedTurn:
    spec: TurnSpec
    play: Play
    log: list[tuple[str, int]]  # (side, call number) in the order calls were made
    over: TurnOver | None = None
    calls: list[Call] = field(default_factory=list)

    def call(
        self,
        inputs: tuple[tuple[int, int], ...],
        expect: TensorShape,
        out: tuple[int, int],
        limit_s: float,
    ) -> Timed:
        tensors = tuple(
            torch.frombuffer(bytearray(ctypes.string_at(address, size)), dtype=torch.float32)
            .reshape(shape.shape)
            .clone()
            for (address, size), shape in zip(inputs, self.spec.inputs, strict=True)
        )
        number = len(self.calls)
        self.calls.append(Call(number, tensors, frozenset(os.sched_getaffinity(0)), limit_s))
        self.log.append((self.spec.function, number))
        played = self.play(number, torch.softmax(tensors[0], dim=-1), limit_s)
        if isinstance(played, Timed):
            return played
        seconds, value = played
        data = value.contiguous().numpy().tobytes()
        ctypes.memmove(out[0], data, min(out[1], len(data)))
        return Timed(seconds, answered(expect), read=True)

    def end(self) -> TurnOver:
        return TurnOver("ok", "", stdout="printed by the job\n")


@dataclass
class ScriptedRunner:
    """A TurnRunner whose turns play scripts: ``reference`` for the partner's, ``learner``
    for its own."""

    reference: Play
    learner: Play
    reference_over: TurnOver | None = None
    learner_over: TurnOver | None = None
    log: list[tuple[str, int]] = field(default_factory=list)
    turns: dict[str, ScriptedTurn] = field(default_factory=dict)
    as_partner: bool = False

    def partner(self) -> ScriptedRunner:
        other = ScriptedRunner(
            self.reference, self.learner, self.reference_over, self.learner_over, self.log
        )
        other.turns, other.as_partner = self.turns, True
        return other

    @contextlib.contextmanager
    def turn(self, spec: TurnSpec, load_timeout_s: float | None = None) -> Iterator[ScriptedTurn]:
        side = "reference" if self.as_partner else "learner"
        play = self.reference if self.as_partner else self.learner
        over = self.reference_over if self.as_partner else self.learner_over
        self.turns[side] = ScriptedTurn(spec, play, self.log, over)
        yield self.turns[side]


def steady(seconds: float) -> Play:
    return lambda number, right, limit: (seconds, right)


def trial(runner: ScriptedRunner, pairs: int = 6, **options: object) -> TrialOutcome:
    return run_trial(SPEED, "# scripted\n", "scripted.py", runner, LIMITS, pairs=pairs, **options)  # type: ignore[arg-type]


def failed(outcome: TrialOutcome) -> str:
    assert outcome.result is None, outcome
    return outcome.reason


# -- which calls, in what order, on what ---------------------------------------------------


def test_two_untimed_warm_ups_then_the_pairs_alternate_who_goes_first() -> None:
    runner = ScriptedRunner(steady(0.004), steady(0.002))
    outcome = trial(runner, pairs=4)
    assert outcome.result is not None and outcome.result.pairs == 4
    assert len(outcome.samples) == 4
    # 2 warm-ups + 4 timed per side; the reference first in the 1st, 3rd, 5th pair
    assert runner.log == [
        ("reference", 0), ("softmax", 0),
        ("softmax", 1), ("reference", 1),
        ("reference", 2), ("softmax", 2),
        ("softmax", 3), ("reference", 3),
        ("reference", 4), ("softmax", 4),
        ("softmax", 5), ("reference", 5),
    ]  # fmt: skip
    assert outcome.learner_output == "printed by the job\n"


def test_both_sides_of_a_pair_get_the_same_fresh_inputs_and_no_pair_repeats_one() -> None:
    runner = ScriptedRunner(steady(0.004), steady(0.002))
    trial(runner, pairs=5)
    reference, learner = runner.turns["reference"].calls, runner.turns["learner"].calls
    assert [c.inputs[0].shape for c in learner] == [torch.Size([ROWS, COLUMNS])] * 7
    for mine, theirs in zip(learner, reference, strict=True):
        assert torch.equal(mine.inputs[0], theirs.inputs[0])
    firsts = {float(c.inputs[0][0, 0]) for c in learner}
    assert len(firsts) == 7  # seven draws, none seen twice


def test_the_trials_own_thread_stays_off_the_job_core_and_gets_its_cpus_back() -> None:
    allowed = frozenset(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("one CPU: there is no other core to keep off the job core")
    runner = ScriptedRunner(steady(0.004), steady(0.002))
    trial(runner, pairs=2)
    seen = {c.cpus for c in runner.turns["learner"].calls + runner.turns["reference"].calls}
    assert seen == {allowed - {max(allowed)}}
    assert max(allowed) == job_core()
    assert frozenset(os.sched_getaffinity(0)) == allowed


# -- what each call must bring back --------------------------------------------------------


def test_a_wrong_warm_up_fails_the_trial_like_a_wrong_timed_call() -> None:
    def wrong_first(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
        return 0.002, right + 1 if number == 0 else right

    reason = failed(trial(ScriptedRunner(steady(0.004), wrong_first)))
    assert reason.startswith("a timed run returned a wrong result (largest error 1"), reason


def test_the_last_timed_call_is_checked_too() -> None:
    def wrong_last(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
        return 0.002, right * 1.01 if number == 7 else right

    reason = failed(trial(ScriptedRunner(steady(0.004), wrong_last)))
    assert reason.startswith("a timed run returned a wrong result"), reason


def test_an_error_exactly_at_the_tolerance_passes_and_a_nan_never_does() -> None:
    """The rule is allclose's: |got - want| <= atol + rtol·|want|, and NaN is never close."""

    def at_bound(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
        bound = right.abs() * torch.tensor(SOFTMAX_RTOL) + torch.tensor(SOFTMAX_ATOL)
        # the largest float32 at or under want + bound, so the error is at most the bound
        got = torch.nextafter(right + bound, torch.tensor(-math.inf))
        over = (got - right).abs() > bound
        got[over] = torch.nextafter(got[over], torch.tensor(-math.inf))
        return 0.002, got

    assert trial(ScriptedRunner(steady(0.004), at_bound)).result is not None

    def just_over(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
        got = right.clone()
        got[0, 0] = right[0, 0] + right[0, 0] * (2 * SOFTMAX_RTOL) + 2 * SOFTMAX_ATOL
        return 0.002, got

    assert "wrong result" in failed(trial(ScriptedRunner(steady(0.004), just_over)))

    def nan(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
        got = right.clone()
        got[5, 7] = math.nan
        return 0.002, got

    reason = failed(trial(ScriptedRunner(steady(0.004), nan)))
    assert reason.startswith("a timed run returned a wrong result (largest error inf)"), reason


def test_what_a_call_can_bring_back_instead_of_a_result() -> None:
    expect = TensorShape("float32", (ROWS, COLUMNS))
    cases: list[tuple[str, Timed, TurnOver | None, str, bool]] = [
        (
            "raised",
            Timed(0.001, Answer("n", "raised", error="Traceback\n  ...\nValueError: no\n\n")),
            None,
            "a timed run raised: ValueError: no",
            False,
        ),
        (  # a job that says it raised and still points at a tensor: it raised
            "raised, with a tensor",
            Timed(0.001, Answer("n", "raised", 1, expect, error="ValueError: no")),
            None,
            "a timed run raised: ValueError: no",
            False,
        ),
        (  # and one that says it returned, pointing at nothing
            "returned nothing",
            Timed(0.001, Answer("n", "returned", 0, None)),
            None,
            "a timed run raised: an error",
            False,
        ),
        (
            "stopped",
            Timed(0.001, None),
            TurnOver("crashed", "crashed with SIGSEGV"),
            "a timed run stopped: crashed with SIGSEGV",
            False,
        ),
        (
            "sandbox failed",
            Timed(0.001, None),
            TurnOver("internal_error", "the job could not be held"),
            "a timed run stopped: the job could not be held",
            True,
        ),
        (
            "ended early",
            Timed(0.001, None),
            None,
            "a timed run stopped: the turn ended early",
            False,
        ),
        (
            "shape",
            Timed(0.001, Answer("n", "returned", 1, TensorShape("float64", (ROWS, COLUMNS)))),
            None,
            f"a timed run returned float64 [{ROWS}, {COLUMNS}], not float32 [{ROWS}, {COLUMNS}]: "
            "every timed result is checked",
            False,
        ),
        (
            "unreadable",
            Timed(0.001, answered(expect), read=False, problem="EFAULT"),
            None,
            "a timed run returned a tensor that could not be read: EFAULT",
            False,
        ),
    ]
    for name, timed, over, reason, our_fault in cases:
        runner = ScriptedRunner(steady(0.004), lambda n, r, limit, timed=timed: timed)
        outcome = trial(_over_after_load(runner, over))
        assert (name, outcome.reason, outcome.our_fault) == (name, reason, our_fault)
        assert outcome.result is None


def _over_after_load(runner: ScriptedRunner, over: TurnOver | None) -> ScriptedRunner:
    """The learner's turn loads, then stops (``over`` set) at its first call."""
    original = runner.learner

    def play(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor] | Timed:
        runner.turns["learner"].over = over
        return original(number, right, limit)

    runner.learner = play
    return runner


def test_the_references_own_failures_are_ours_and_say_so() -> None:
    raised = Timed(0.001, Answer("n", "raised", error="RuntimeError: broke"))
    outcome = trial(ScriptedRunner(lambda n, r, limit: raised, steady(0.002)))
    assert (outcome.reason, outcome.our_fault) == (
        "the reference raised: RuntimeError: broke",
        True,
    )

    late = Timed(5.0, None, late=True)
    outcome = trial(ScriptedRunner(lambda n, r, limit: late, steady(0.002)))
    assert (outcome.reason, outcome.our_fault) == ("the reference took over 5.0 s", True)

    stopped = ScriptedRunner(lambda n, r, limit: Timed(0.001, None), steady(0.002))
    outcome = trial(stopped)
    assert (outcome.reason, outcome.our_fault) == (
        "the reference stopped: the turn ended early",
        True,
    )

    wide = Timed(0.001, Answer("n", "returned", 1, TensorShape("float32", (ROWS, 1))))
    outcome = trial(ScriptedRunner(lambda n, r, limit: wide, steady(0.002)))
    assert outcome.our_fault and outcome.reason.startswith(
        f"the reference returned float32 [{ROWS}, 1], not float32 [{ROWS}, {COLUMNS}]"
    )


def test_a_turn_that_did_not_start_names_whose_fault_it_is() -> None:
    crashed, internal = TurnOver("load_error", "NameError: x"), TurnOver("internal_error", "no")
    cases = [
        (None, crashed, "the timed run did not start: NameError: x", False),
        (None, internal, "the timed run did not start: no", True),
        (crashed, None, "the reference did not start: NameError: x", True),
    ]
    for reference_over, learner_over, reason, our_fault in cases:
        runner = ScriptedRunner(steady(0.004), steady(0.002), reference_over, learner_over)
        outcome = trial(runner)
        assert (outcome.reason, outcome.our_fault) == (reason, our_fault)
        assert runner.log == []  # nothing was called


# -- when a trial ends ---------------------------------------------------------------------


def limit_cut(seconds: Callable[[int], float]) -> Play:
    """A learner that takes ``seconds(number)``, or runs late past the limit it is given."""

    def play(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor] | Timed:
        taken = seconds(number)
        if taken > limit:
            return Timed(limit, None, late=True)
        return taken, right

    return play


def test_a_learner_call_may_take_twenty_times_the_references_median_so_far() -> None:
    """Reference calls of 1 and 9 ms: the allowance follows the median of those made so far
    (20 ms, then 180 ms), never their mean (up to 127 ms) or their fastest (1 ms)."""
    reference_ms = [1.0, 9.0, 9.0, 1.0, 9.0, 1.0, 9.0, 9.0]
    learner_ms = [15.0, 15.0, 150.0, 150.0, 150.0, 150.0, 150.0, 190.0]

    def reference(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
        return reference_ms[number] / 1000, right

    runner = ScriptedRunner(reference, limit_cut(lambda n: learner_ms[n] / 1000))
    outcome = trial(runner)
    limits = [round(c.limit_s * 1000, 6) for c in runner.turns["learner"].calls]
    # the reference calls made before each learner call (who goes first alternates)
    before = [1, 1, 3, 3, 5, 5, 7, 7]
    assert limits == [round(max(20.0, 20 * statistics.median(reference_ms[:n])), 6) for n in before]
    assert limits == [20.0, 20.0, 180.0, 180.0, 180.0, 180.0, 180.0, 180.0]
    assert failed(outcome) == (
        "too slow to rank: a timed run took over 180 ms, more than 20× the reference's median call"
    )


def test_the_allowance_is_never_under_twenty_milliseconds() -> None:
    runner = ScriptedRunner(steady(0.0001), limit_cut(lambda n: 0.019))
    assert trial(runner).result is not None
    assert {c.limit_s for c in runner.turns["learner"].calls} == {0.02}
    runner = ScriptedRunner(steady(0.0001), limit_cut(lambda n: 0.021))
    assert failed(trial(runner)).startswith("too slow to rank: a timed run took over 20 ms")


def test_the_reference_is_allowed_five_seconds_a_call() -> None:
    runner = ScriptedRunner(steady(0.004), steady(0.002))
    trial(runner, pairs=2)
    assert {c.limit_s for c in runner.turns["reference"].calls} == {5.0}


def test_a_trial_past_its_deadline_ends_too_slow_to_rank() -> None:
    outcome = trial(ScriptedRunner(steady(0.004), steady(0.002)), deadline_s=-1.0)
    assert failed(outcome) == "too slow to rank: the trial ran past its deadline"
    assert not outcome.our_fault


# -- the physics floor ---------------------------------------------------------------------


def floor_s(bandwidth_gbs: float | None, gflops: float | None) -> float:
    """The least time softmax on 2048x1024 can take at these roofs, with the 1.5x margin."""
    times = [0.0]
    if bandwidth_gbs is not None:
        times.append(MOVED / (bandwidth_gbs * 1e9 * 1.5))
    if gflops is not None:
        times.append(FLOPS / (gflops * 1e9 * 1.5))
    return max(times)


@pytest.mark.parametrize(
    ("bandwidth_gbs", "gflops"),
    [(20.0, None), (None, 10.0), (20.0, 10.0), (20.0, 1.0)],
    ids=["bandwidth", "compute", "both, bandwidth binds", "both, compute binds"],
)
def test_a_call_faster_than_the_roofs_allow_is_refused_and_one_at_the_floor_is_not(
    bandwidth_gbs: float | None, gflops: float | None
) -> None:
    floor = floor_s(bandwidth_gbs, gflops)
    assert Roof(bandwidth_gbs, gflops).floor_s(MOVED, FLOPS) == floor
    roof = Roof(bandwidth_gbs, gflops)
    reference = steady(floor * 4)
    # exactly at the floor is possible; a trillionth under it is not
    assert trial(ScriptedRunner(reference, steady(floor)), roof=roof).result
    under = trial(ScriptedRunner(reference, steady(floor * (1 - 1e-12))), roof=roof)
    assert failed(under).startswith("implausible: a timed run took")
    outcome = trial(ScriptedRunner(reference, steady(floor * 0.99)), roof=roof)
    assert failed(outcome).startswith(
        f"implausible: a timed run took {floor * 0.99 * 1e6:.0f} µs, but moving "
        f"{MOVED / 1e6:.1f} MB and doing {FLOPS / 1e6:.0f} MFLOP takes at least "
        f"{floor * 1e6:.0f} µs at this host's measured peaks"
    )
    assert not outcome.our_fault
    outcome = trial(ScriptedRunner(steady(floor * 0.99), steady(floor * 4)), roof=roof)
    assert failed(outcome).startswith("implausible: a reference call took") and outcome.our_fault


def test_with_no_roof_known_no_time_is_refused() -> None:
    assert Roof(None, None).floor_s(MOVED, FLOPS) == 0.0
    assert trial(ScriptedRunner(steady(1e-7), steady(1e-7))).result is not None


# -- the figures ---------------------------------------------------------------------------


def exact_median_lower_bound(values: list[float], alpha: float = 0.05) -> float:
    """The distribution-free lower bound of the median from the exact binomial: the k-th
    smallest value with k the largest such that P(Binomial(n, 1/2) < k) <= alpha / 2."""
    n = len(values)
    below = 0.0
    k = 0
    while True:
        below += math.comb(n, k) / 2**n  # P(X <= k)
        if below > alpha / 2:
            break
        k += 1
    return sorted(values)[max(k, 1) - 1]


def test_the_figures_are_the_medians_the_bound_and_the_fastest_calls() -> None:
    """50 pairs with scripted times: every figure as the test computes it from the script."""
    pairs = 50
    reference_s = [0.004 + 0.0001 * ((7 * i) % 13) for i in range(pairs + 2)]
    learner_s = [0.002 + 0.00007 * ((11 * i) % 17) for i in range(pairs + 2)]

    def scripted(times: list[float]) -> Play:
        return lambda number, right, limit: (times[number], right)

    outcome = trial(ScriptedRunner(scripted(reference_s), scripted(learner_s)), pairs=pairs)
    result = outcome.result
    assert result is not None
    timed = list(zip(reference_s[2:], learner_s[2:], strict=True))  # warm-ups are not samples
    assert outcome.samples == tuple(timed)
    ratios = [r / le for r, le in timed]
    assert result.ratio == pytest.approx(float(numpy.median(ratios)), rel=1e-12)
    assert result.learner_s == pytest.approx(float(numpy.median(learner_s[2:])), rel=1e-12)
    assert result.reference_s == pytest.approx(float(numpy.median(reference_s[2:])), rel=1e-12)
    q1, q3 = numpy.percentile(ratios, [25, 75])  # linear interpolation: "inclusive" quartiles
    assert result.spread == pytest.approx((q3 - q1) / result.ratio, rel=1e-9)
    assert result.board_ratio == exact_median_lower_bound(ratios)
    assert result.board_ratio < result.ratio
    assert result.pairs == pairs
    assert result.achieved_gbs == pytest.approx(MOVED / min(learner_s[2:]) / 1e9, rel=1e-12)
    assert result.reference_gbs == pytest.approx(MOVED / min(reference_s[2:]) / 1e9, rel=1e-12)
    assert (result.moved_bytes, result.flops) == (MOVED, FLOPS)
    assert result.achieved_gflops == pytest.approx(FLOPS / min(learner_s[2:]) / 1e9, rel=1e-12)
    assert result.reference_gflops == pytest.approx(FLOPS / min(reference_s[2:]) / 1e9, rel=1e-12)


@pytest.mark.parametrize("pairs", [3, 5, 10, 30, 51])
def test_the_board_bound_is_the_exact_binomial_order_statistic(pairs: int) -> None:
    learner = [0.001 * (1 + ((5 * i) % pairs) / pairs) for i in range(pairs + 2)]
    runner = ScriptedRunner(steady(0.004), lambda n, right, limit: (learner[n], right))
    result = trial(runner, pairs=pairs).result
    assert result is not None
    ratios = [0.004 / le for le in learner[2:]]
    assert result.board_ratio == pytest.approx(exact_median_lower_bound(ratios), rel=1e-12)


def test_the_turns_are_the_reference_module_and_the_learners_file_living_as_long_as_the_trial() -> (
    None
):
    """The reference's turn runs the reference module's own source as ``reference`` in a file
    named after it; the learner's runs the file as uploaded; both on the trial's input shapes,
    under the task's limits with time for the whole trial and 10 s more."""
    runner = ScriptedRunner(steady(0.004), steady(0.002))
    run_trial(
        SPEED,
        "# the learner's\n",
        "mine.py",
        runner,
        LIMITS,
        pairs=2,
        deadline_s=12.5,  # type: ignore[arg-type]
    )
    reference, learner = runner.turns["reference"].spec, runner.turns["learner"].spec
    shapes = (TensorShape("float32", (ROWS, COLUMNS)),)
    assert (reference.function, reference.filename, reference.inputs) == (
        "reference",
        "reference_small_softmax.py",
        shapes,
    )
    assert reference.source == inspect.getsource(small_softmax)
    assert (learner.source, learner.function, learner.filename, learner.inputs) == (
        "# the learner's\n",
        "softmax",
        "mine.py",
        shapes,
    )
    for spec in (reference, learner):
        assert spec.limits == dataclasses.replace(LIMITS, wall_s=22.5, cpu_s=22.5)
        assert spec.device == "cpu"


class FakeClock:
    """``time.perf_counter`` for the trial: each scripted call advances it by its own time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now


def test_the_deadline_counts_from_the_trials_start_and_its_length_is_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(speed_trial, "time", clock)

    def taking(seconds: float) -> Play:
        def play(number: int, right: torch.Tensor, limit: float) -> tuple[float, torch.Tensor]:
            clock.now += seconds
            return seconds, right

        return play

    # 16 calls of 0.25 s and 0.5 s: 6 s in all, inside a 10 s deadline
    finished = trial(ScriptedRunner(taking(0.5), taking(0.25)), deadline_s=10.0)
    assert finished.result is not None and finished.seconds == pytest.approx(6.0)
    # past 2 s: the first two pairs take 1.5 s, the third starts, the fourth may not
    late = trial(ScriptedRunner(taking(0.5), taking(0.25)), deadline_s=2.0)
    assert failed(late) == "too slow to rank: the trial ran past its deadline"
    assert late.seconds == pytest.approx(2.25)


def test_a_cut_off_call_is_named_in_milliseconds() -> None:
    """A reference of 0.25 s allows a learner 5 s: the message counts it in ms."""
    runner = ScriptedRunner(steady(0.25), limit_cut(lambda n: 6.0))
    assert failed(trial(runner)) == (
        "too slow to rank: a timed run took over 5000 ms, more than 20× the reference's median call"
    )


def test_a_slower_learners_spread_is_its_quartiles_over_its_ratio() -> None:
    """Ratios under 1 (slower than the reference) get their spread like any other."""
    learner = [0.008, 0.009, 0.010, 0.011, 0.012, 0.013, 0.014, 0.015]
    runner = ScriptedRunner(steady(0.004), lambda n, right, limit: (learner[n], right))
    result = trial(runner).result
    assert result is not None
    ratios = [0.004 / le for le in learner[2:]]
    q1, q3 = numpy.percentile(ratios, [25, 75])
    assert result.ratio < 1 and result.spread == pytest.approx((q3 - q1) / result.ratio)


def test_the_floors_message_counts_in_the_units_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """An op declared to move 123,456,789,012,345 bytes and do 987,654,321,098 FLOPs, at a roof
    of 20 GB/s (the bytes bind: 4115 s at least), refused at 3000 s."""
    monkeypatch.setattr(small_softmax, "moved_bytes", lambda x: 123_456_789_012_345)
    monkeypatch.setattr(small_softmax, "flops", lambda x: 987_654_321_098)
    roof = Roof(20.0, 1000.0)
    outcome = trial(ScriptedRunner(steady(5000.0), steady(3000.0)), roof=roof)
    assert failed(outcome) == (
        "implausible: a timed run took 3000000000 µs, but moving 123456789.0 MB and doing "
        "987654 MFLOP takes at least 4115226300 µs at this host's measured peaks"
    )


def test_a_trial_on_a_process_given_one_cpu_stays_on_it() -> None:
    """With only the job core allowed there is no other core to move to: the trial's thread
    stays on its one CPU, whatever other processes (PID 1 among them) may use, and keeps it
    after."""
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("one CPU already: nothing to narrow")
    only = max(allowed)  # the job core itself: the one CPU the trial's thread must leave
    os.sched_setaffinity(0, {only})
    try:
        runner = ScriptedRunner(steady(0.004), steady(0.002))
        trial(runner, pairs=2)
        seen = {c.cpus for c in runner.turns["learner"].calls}
        after = os.sched_getaffinity(0)
    finally:
        os.sched_setaffinity(0, allowed)
    assert seen == {frozenset({only})}
    assert after == {only}
