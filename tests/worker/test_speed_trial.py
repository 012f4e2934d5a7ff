"""Speed trials cannot be forged, and they measure the learner's work sharply: each trick a
kernel-competition entry has used either fails the trial or ranks no better than the honest
file it is built on, a file made K times slower ranks about K times lower, and honest files
rank the same way every time.

Every forgery prints a marker just before its trick, and the tests read it from the learner
job's output, so a passing test shows the attack ran.  All are entries for
transformer-internals/stable-softmax, raced against ``graders/speed/softmax_rows.py``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

import graders.speed
from bot.jobs.job_spec import SpeedSpec
from bot.worker import speed_trial
from bot.worker.speed_trial import PAIRS, Roof, TrialOutcome, run_trial
from graders.base import SPEED_INSTRUMENT
from graders.registry import registry
from sandbox import Zygote

FORGERIES = Path(__file__).parent / "speed_forgeries"
SPEED = SpeedSpec("softmax", "softmax_rows")
LIMITS = registry()["stable_softmax"].limits
#: a forgery "gains rank" only beyond this factor over its honest twin's median: five honest
#: trials stay well inside it on a busy 2-core machine, and every working forgery of this
#: kind is worth more (the feed takeover of the old instrument was worth 1.28x)
NOISE = 1.15
HONEST = "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n"


def slower(k: int) -> str:
    """The honest file made exactly ``k`` times slower: the call repeated, the last kept."""
    return (
        "import torch\n\n\ndef softmax(x):\n"
        f"    for _ in range({k - 1}):\n        torch.softmax(x, dim=-1)\n"
        "    return torch.softmax(x, dim=-1)\n"
    )


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as running:
        running.partner().start()
        yield running


def trial(zygote: Zygote, name: str, **options: object) -> TrialOutcome:
    source = (FORGERIES / f"{name}.py").read_text()
    return run_trial(SPEED, source, f"{name}.py", zygote, LIMITS, **options)  # type: ignore[arg-type]


def ratio(outcome: TrialOutcome) -> float:
    assert outcome.result is not None, outcome.reason
    return outcome.result.ratio


@pytest.fixture(scope="module")
def honest(zygote: Zygote) -> list[TrialOutcome]:
    """The honest file graded five times: the fairness runs and the forgeries' yardstick."""
    return [trial(zygote, "honest") for _ in range(5)]


def honest_median(honest: list[TrialOutcome]) -> float:
    return statistics.median(ratio(o) for o in honest)


def test_a_trial_times_its_pairs_and_reports_its_figures(honest: list[TrialOutcome]) -> None:
    outcome = honest[0]
    result = outcome.result
    assert result is not None and result.pairs == PAIRS == len(outcome.samples) >= 30
    ratios = sorted(r / le for r, le in outcome.samples)
    assert result.ratio == pytest.approx(statistics.median(ratios))
    # the boards' figure: the k-th smallest ratio, k = floor(n/2 - 1.96·√n/2)
    k = math.floor(len(ratios) / 2 - 1.96 * math.sqrt(len(ratios)) / 2)
    assert result.board_ratio == pytest.approx(ratios[k - 1]) and result.board_ratio < result.ratio
    assert result.instrument == SPEED_INSTRUMENT == 2
    assert result.learner_s > 0 and result.reference_s > 0 and result.spread >= 0
    # softmax reads its 2048×1024 float32 x once and writes as much; each side's figure is
    # from its own fastest call (noise only adds time)
    moved = 2 * 2048 * 1024 * 4
    fastest_learner = min(le for _, le in outcome.samples)
    fastest_reference = min(r for r, _ in outcome.samples)
    assert result.achieved_gbs == pytest.approx(moved / fastest_learner / 1e9)
    assert result.reference_gbs == pytest.approx(moved / fastest_reference / 1e9)
    assert result.device and result.device != "cpu"  # the CPU's model, the board's class


#: how far five trials of one honest file may stray from their median: the issue asks for 5%
#: on a quiet machine, and bench/speed_fidelity.py measured ±3-9% here; inside the full suite
#: on two cores, after the grading tests, one run strayed 21%
FAIRNESS = 0.3


def test_the_same_honest_file_ranks_the_same_every_time(honest: list[TrialOutcome]) -> None:
    ratios = [ratio(o) for o in honest]
    middle = statistics.median(ratios)
    assert all(abs(r - middle) <= FAIRNESS * middle for r in ratios), ratios


#: the least fidelity the suite accepts: below the bench's 0.79-0.92 (K=2) and 0.79-0.83
#: (K=4) for this task, for a loaded machine (0.63 at K=4 in one full run), above the old
#: instrument's 0.56 and 0.31
FIDELITY = {2: 0.65, 4: 0.5}


@pytest.mark.parametrize("k", [2, 4])
def test_a_file_made_k_times_slower_ranks_about_k_times_lower(
    zygote: Zygote, honest: list[TrialOutcome], k: int
) -> None:
    """Fidelity (ratio of the file / ratio of its K-times-slower twin) / K is 1 for a
    faithful instrument; the old one read 0.56 and 0.31 here.  The bench reports it; here
    (a repeated call finds its data in cache, the first does not) the bound is looser."""
    outcome = run_trial(SPEED, slower(k), "slower.py", zygote, LIMITS)
    fidelity = honest_median(honest) / ratio(outcome) / k
    assert FIDELITY[k] <= fidelity <= 1.25, fidelity


def test_a_python_loop_ranks_below_the_vectorised_file_every_time(
    zygote: Zygote, honest: list[TrialOutcome]
) -> None:
    loops = [trial(zygote, "python_loop") for _ in range(2)]
    assert all(o.result is not None or "too slow to rank" in o.reason for o in loops)
    ranked = [ratio(o) for o in loops if o.result is not None]
    assert all(r < min(ratio(o) for o in honest) / 2 for r in ranked), ranked


@pytest.mark.parametrize(
    ("name", "marker"),
    [
        ("cached_outputs", "FORGERY output cache"),
        ("work_ahead", "FORGERY work ahead"),
        ("reference_turn_burner", "FORGERY reference-turn burner"),
        ("flood", "FORGERY output flood"),
    ],
)
def test_tricks_that_leave_the_answer_right_gain_no_rank(
    zygote: Zygote, honest: list[TrialOutcome], name: str, marker: str
) -> None:
    """A cache never sees the same fresh input twice; threads started at import are
    stopped, with the whole job, while the reference runs on the core (and no process can be
    started at all); output is drained in the learner's own time.  The reference's own
    times are those of an honest trial."""
    before = trial(zygote, "honest")
    outcome = trial(zygote, name)
    after = trial(zygote, "honest")
    assert marker in outcome.learner_output
    assert "FORGERY cache hit" not in outcome.learner_output
    assert ratio(outcome) <= honest_median(honest) * NOISE, (ratio(outcome), honest_median(honest))
    # the reference's own calls against honest trials just before and after: this host's
    # speed swings 2-3x over minutes, so only neighbours compare
    assert outcome.result is not None and before.result is not None and after.result is not None
    nearest = max(before.result.reference_s, after.result.reference_s)
    assert outcome.result.reference_s <= nearest * 1.3, (outcome.result.reference_s, nearest)


def test_the_output_cache_would_win_if_an_input_ever_came_again(
    zygote: Zygote, honest: list[TrialOutcome], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache above gains nothing only because no input repeats: with the warm-up's draw
    given to every call (the fresh draws taken away) it hits and outranks its honest twin."""
    draw = speed_trial.fresh_inputs(graders.speed.load(SPEED.reference))
    monkeypatch.setattr(speed_trial, "fresh_inputs", lambda module, batch=None: draw)
    outcome = trial(zygote, "cached_outputs")
    assert "FORGERY cache hit" in outcome.learner_output
    assert ratio(outcome) > honest_median(honest) * NOISE, (ratio(outcome), honest_median(honest))


def test_no_process_outlives_a_call_or_runs_beside_the_reference(zygote: Zygote) -> None:
    outcome = trial(zygote, "reference_turn_burner")
    assert "fork refused: PermissionError" in outcome.learner_output


def test_taking_over_the_feed_ranks_no_better_than_its_honest_twin(zygote: Zygote) -> None:
    """The old instrument's loop ran in the learner's process and its copies could be
    skipped (1.22x -> 1.56x).  Now the loop is the worker's: inputs are written into the
    stopped job and results read out of it, so a module that serves the feed itself saves
    nothing its honest twin (the same maths into one kept buffer) pays."""
    twins = [trial(zygote, "honest_out") for _ in range(3)]
    takeovers = [trial(zygote, "takeover") for _ in range(3)]
    assert all("FORGERY takeover serving" in o.learner_output for o in takeovers)
    twin, taken = (statistics.median(ratio(o) for o in group) for group in (twins, takeovers))
    assert taken <= twin * NOISE, (taken, twin)


@pytest.mark.parametrize(
    ("name", "marker", "reason"),
    [
        ("precomputed", "FORGERY precomputed answer", "returned a wrong result"),
        ("lazy_result", "FORGERY lazy result", "returned a wrong result"),
        ("counts_calls", "FORGERY call counter", "returned a wrong result"),
        ("detects_shape", "FORGERY shape detector", "returned a wrong result"),
        ("warmup_only", "FORGERY warm-up only", "returned a wrong result"),
        ("warmup_garbage", "FORGERY warm-up skipped", "returned a wrong result"),
        ("takeover_early", "FORGERY takeover answers early", "returned a wrong result"),
    ],
)
def test_tricks_that_skip_work_in_the_timed_call_fail_the_trial(
    zygote: Zygote, name: str, marker: str, reason: str
) -> None:
    """Every result, the warm-ups' too, is checked against the reference on that call's
    fresh inputs, and the bytes are read only after every thread of the job has stopped: an
    answer sent before the work was done is read as it stood."""
    outcome = trial(zygote, name)
    assert marker in outcome.learner_output
    assert outcome.result is None and not outcome.our_fault
    assert reason in outcome.reason and "every timed result is checked" in outcome.reason


def test_a_huge_warm_up_result_is_refused_unread(zygote: Zygote) -> None:
    source = (FORGERIES / "warmup_garbage.py").read_text().replace("_CALLS[0] == 1", "False")
    outcome = run_trial(SPEED, source, "huge.py", zygote, LIMITS)
    assert outcome.result is None and not outcome.our_fault
    assert "returned float32 [41943040], not float32 [2048, 1024]" in outcome.reason


def test_an_answer_sent_before_its_call_breaks_the_trial(zygote: Zygote) -> None:
    """A forged answer written between calls is refused: none is awaited then, and none
    can carry the next call's nonce."""
    outcome = trial(zygote, "early_answer")
    assert "FORGERY early answer" in outcome.learner_output
    assert outcome.result is None and not outcome.our_fault
    assert "the job's reply was malformed: unexpected 'returned' frame" in outcome.reason


def test_no_input_can_be_foreseen_from_an_earlier_one(zygote: Zygote) -> None:
    """Every draw has its own secret 63-bit seed: a search of the small seeds finds none."""
    outcome = trial(zygote, "predict_inputs")
    assert "FORGERY prediction missed" in outcome.learner_output
    assert "found seed" not in outcome.learner_output


def test_an_output_flood_past_the_cap_ends_the_trial(zygote: Zygote) -> None:
    outcome = trial(zygote, "flood_over")
    assert "FORGERY output flood over the cap" in outcome.learner_output
    assert outcome.result is None and not outcome.our_fault
    assert "output limit exceeded" in outcome.reason


def test_a_call_faster_than_the_physics_floor_is_refused(zygote: Zygote) -> None:
    """cumsum must do n - 1 additions; at a roof of g FLOP/s that takes (n - 1)/(1.5 g) s.
    With g set so that the floor is 1 ms, the n² reference (milliseconds) passes and
    ``torch.cumsum`` (microseconds) is refused as implausible, whatever produced it."""
    n = 2048
    gflops = (n - 1) / (1.5 * 1e-3) / 1e9
    source = "import torch\n\n\ndef cumsum(a):\n    return torch.cumsum(a, dim=0)\n"
    outcome = run_trial(
        SpeedSpec("cumsum", "cumsum_mask"),
        source,
        "fast.py",
        zygote,
        registry()["tensor_puzzles"].limits,
        roof=Roof(None, gflops),
    )
    assert outcome.result is None and not outcome.our_fault
    assert outcome.reason.startswith("implausible: a timed run took"), outcome.reason
    assert "takes at least 1000 µs" in outcome.reason


def test_a_learner_far_slower_than_the_reference_is_cut_off(zygote: Zygote) -> None:
    """A call over 20x the reference's median call ends the trial at once, the worker free."""
    outcome = run_trial(SPEED, slower(60), "slow.py", zygote, LIMITS)
    assert outcome.result is None and not outcome.our_fault
    assert "too slow to rank" in outcome.reason
    assert outcome.seconds < 5, outcome.seconds


def test_a_wider_cpu_set_is_refused_and_more_threads_gain_nothing(
    zygote: Zygote, honest: list[TrialOutcome]
) -> None:
    outcome = trial(zygote, "wider_cpu")
    assert "FORGERY widen affinity from [" in outcome.learner_output
    assert "affinity refused: PermissionError errno 1" in outcome.learner_output
    assert "affinity widened" not in outcome.learner_output
    assert "torch threads 16" in outcome.learner_output  # granted, but on one core
    assert ratio(outcome) <= honest_median(honest) * NOISE
