"""Speed trials: how fast a passing submission is, by the worker's clock, against a reference.

The trial holds two jobs on the job core (``sandbox.turn_client``): the trusted
reference in one zygote's job, the learner's function in its partner's.  Each has loaded its
source and is stopped; the trial then makes ``pairs`` pairs of calls, the two sides in turn
(which goes first alternates), each on inputs drawn here from a fresh secret seed and written
into the stopped job.  A call's time runs from resuming the job to having it stopped again
after it answered, by this process's clock; the result's bytes are read out of the stopped
job afterwards, so nothing in the job can move bytes faster, finish late, or touch the clock.
Every learner result (the untimed warm-ups too) is checked against the reference computed
here, so a run that skipped work fails the trial instead of ranking.

What ranks: the median of the per-pair ratios reference/learner (both sides ran on the same
core moments apart, so a busy host slows both and the ratio stays put), and on the boards a
lower 95% confidence bound of that median, which luck cannot raise much.  A call faster than
the bytes and FLOPs its op must move and do allow at this host's measured peaks is refused
as a forgery, whatever produced it.  Runs in the worker (imports torch).

The trial decides nothing about the verdict: its ``TrialOutcome`` (``graders.base``) goes to
the task's grader, which judges it (``bot.worker.grade_job``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import os
import secrets
import statistics
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

import torch

import graders.speed
from bot.jobs.job_spec import SpeedSpec
from graders.base import SPEED_INSTRUMENT, SpeedResult, TrialOutcome
from sandbox.api import Limits
from sandbox.cores import cpu_model, job_core
from sandbox.turn_client import Timed, Turn
from sandbox.turns import TensorShape, TurnSpec

#: timed pairs of calls.  Measured here (bench/speed_fidelity.py, five trials of one file):
#: within ±3-5% of their median at 60 pairs, ±4-10% at 40; a pair costs 25-35 ms of the
#: trial, mostly drawing, writing, reading and checking 8 MB, so 50 is the compromise
#: between a steady ratio and a trial under twice a plain grade
PAIRS = 50
#: untimed calls per side before the timed ones (checked and capped like them)
WARM_UPS = 2
#: a learner call allowed this many times the reference's median call, or MIN_CALL_LIMIT_S
SLOWER_CAP = 20.0
MIN_CALL_LIMIT_S = 0.02
REFERENCE_CALL_LIMIT_S = 5.0
#: the whole trial, loads included: past it the trial ends "too slow to rank"
DEADLINE_S = 30.0
LOAD_TIMEOUT_S = 15.0
#: a call is refused as implausible when faster than its op's bytes and FLOPs allow at the
#: measured peaks times this margin (the peaks are the host's best, measured by torch;
#: a hand-written kernel may do a little better, never 1.5x)
FLOOR_MARGIN = 1.5
#: the boards rank the lower end of a two-sided 95% confidence interval of the median
CONFIDENCE_TAIL = 0.025


class TurnRunner(Protocol):
    """What a trial needs of the sandbox (``sandbox.Zygote`` provides it)."""

    def turn(
        self, spec: TurnSpec, load_timeout_s: float | None = None
    ) -> AbstractContextManager[Turn]: ...

    def partner(self) -> TurnRunner: ...


@dataclass(frozen=True)
class Roof:
    """The fastest this host can move bytes and do float32 FLOPs (for the physics floor);
    None where a roof is unknown."""

    bandwidth_gbs: float | None
    gflops: float | None

    def floor_s(self, moved_bytes: int, flops: int) -> float:
        """The least time an op that must move ``moved_bytes`` and do ``flops`` can take."""
        times = [0.0]
        if self.bandwidth_gbs:
            times.append(moved_bytes / (self.bandwidth_gbs * 1e9 * FLOOR_MARGIN))
        if self.gflops:
            times.append(flops / (self.gflops * 1e9 * FLOOR_MARGIN))
        return max(times)


class _Failed(Exception):
    def __init__(self, reason: str, our_fault: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.our_fault = reason, our_fault


def device_name(device: str) -> str:
    """The device class a result is ranked within: the GPU's name, or the CPU model."""
    if device == "cuda":
        return str(torch.cuda.get_device_name())[:128]
    return cpu_model()


def fresh_inputs(module: ModuleType, batch: int | None = None) -> tuple[torch.Tensor, ...]:
    """One draw of the reference's inputs from a seed nobody has seen: no draw tells
    anything about the next.  ``batch``: the draw a reference makes for that many sequences
    at once (``inputs(generator, batch)``), for a trial of what batching buys."""
    generator = torch.Generator().manual_seed(secrets.randbits(63))
    drawn = module.inputs(generator) if batch is None else module.inputs(generator, batch)
    return tuple(t.contiguous() for t in drawn)


def shape_of(tensor: torch.Tensor) -> TensorShape:
    return TensorShape(str(tensor.dtype).removeprefix("torch."), tuple(tensor.shape))


def lower_bound_of_median(values: list[float], tail: float = CONFIDENCE_TAIL) -> float:
    """A distribution-free lower confidence bound of the median: the k-th smallest value,
    k the largest for which fewer than k of n values fall below the median with probability
    at most ``tail`` (Binomial(n, 1/2), summed exactly: no approximation at small n)."""
    n = len(values)
    k, below = 0, 0.0  # below: P(at most k values under the median)
    while k < n:
        below += math.comb(n, k) / 2**n
        if below > tail:
            break
        k += 1
    return sorted(values)[max(k, 1) - 1]


def run_trial(
    speed: SpeedSpec,
    source: str,
    filename: str,
    sandbox: TurnRunner,
    limits: Limits,
    device: str = "cpu",
    *,
    pairs: int = PAIRS,
    roof: Roof | None = None,
    deadline_s: float = DEADLINE_S,
    batch: int | None = None,
) -> TrialOutcome:
    """Time ``speed.function`` of ``source`` against ``speed.reference`` (on the reference's
    batched inputs when ``batch`` is given); never raises for anything the submission does."""
    started = time.perf_counter()
    module = graders.speed.load(speed.reference)
    sample = fresh_inputs(module, batch)
    expect = shape_of(module.reference(*sample))
    trial = _Trial(module, expect, roof or Roof(None, None), started + deadline_s, batch)
    inputs = tuple(shape_of(t) for t in sample)
    # the jobs live as long as the trial, stopped between their calls
    turn_limits = dataclasses.replace(limits, wall_s=deadline_s + 10, cpu_s=deadline_s + 10)
    name = module.__name__.rsplit(".", 1)[-1]
    reference = TurnSpec(
        _source_of(module), f"reference_{name}.py", "reference", turn_limits, device, inputs
    )
    learner = TurnSpec(source, filename, speed.function, turn_limits, device, inputs)
    output = ""
    try:
        with ExitStack() as stack:
            ref_turn = stack.enter_context(sandbox.partner().turn(reference, LOAD_TIMEOUT_S))
            own_turn = stack.enter_context(sandbox.turn(learner, LOAD_TIMEOUT_S))
            try:
                samples = trial.race(ref_turn, own_turn, pairs)
            finally:
                output = _printed(own_turn)
    except _Failed as failed:
        return TrialOutcome(
            None,
            failed.reason,
            failed.our_fault,
            learner_output=output,
            seconds=time.perf_counter() - started,
        )
    result = trial.result(samples, device)
    return TrialOutcome(
        result, samples=samples, learner_output=output, seconds=time.perf_counter() - started
    )


def _source_of(module: ModuleType) -> str:
    return inspect.getsource(module)


def _printed(turn: Turn) -> str:
    over = turn.end()
    return over.stdout + over.stderr


class _Trial:
    """The calls of one trial, each timed, read and (the learner's) checked."""

    def __init__(
        self,
        module: ModuleType,
        expect: TensorShape,
        roof: Roof,
        deadline: float,
        batch: int | None = None,
    ) -> None:
        self.module = module
        self.expect = expect  # what every call of either side must return
        self.roof = roof
        self.deadline = deadline
        self.batch = batch
        self.last_inputs: tuple[torch.Tensor, ...] = ()

    def race(self, reference: Turn, learner: Turn, pairs: int) -> tuple[tuple[float, float], ...]:
        """Warm-ups, then ``pairs`` timed pairs; both sides of a pair get the same fresh
        inputs, and the learner's result is checked against the reference job's."""
        self._loaded(reference, learner)
        reference_s: list[float] = []
        samples = []
        with _off_the_job_core():
            for index in range(-WARM_UPS, pairs):
                if time.perf_counter() > self.deadline:
                    raise _Failed("too slow to rank: the trial ran past its deadline")
                inputs = fresh_inputs(self.module, self.batch)
                self.last_inputs = inputs
                expected, got = self._buffer(), self._buffer()
                sides = [(reference, expected), (learner, got)]
                times: dict[bool, float] = {}
                for turn, out in sides if index % 2 == 0 else sides[::-1]:
                    is_learner = turn is learner
                    limit = self._limit(reference_s) if is_learner else REFERENCE_CALL_LIMIT_S
                    times[is_learner] = self._call(turn, inputs, out, is_learner, limit)
                    if not is_learner:
                        reference_s.append(times[False])
                self._check(got, expected)
                if index >= 0:
                    samples.append((times[False], times[True]))
        return tuple(samples)

    def _buffer(self) -> torch.Tensor:
        return torch.empty(self.expect.shape, dtype=getattr(torch, self.expect.dtype))

    def _loaded(self, reference: Turn, learner: Turn) -> None:
        if reference.over is not None:
            raise _Failed(f"the reference did not start: {reference.over.message}", True)
        over = learner.over
        if over is not None:
            our_fault = over.status == "internal_error"
            raise _Failed(f"the timed run did not start: {over.message}", our_fault)

    def _limit(self, reference_s: list[float]) -> float:
        """A learner call's allowance: SLOWER_CAP × the reference's median call so far (a
        median: on a host whose speed swings, one lucky reference call must not cut off an
        honest learner)."""
        return max(MIN_CALL_LIMIT_S, SLOWER_CAP * statistics.median(reference_s))

    def _call(
        self,
        turn: Turn,
        inputs: tuple[torch.Tensor, ...],
        out: torch.Tensor,
        learner: bool,
        limit_s: float,
    ) -> float:
        timed = turn.call(
            tuple((t.data_ptr(), t.numel() * t.element_size()) for t in inputs),
            self.expect,
            (out.data_ptr(), out.numel() * out.element_size()),
            limit_s,
        )
        self._accept(timed, turn, learner, self.expect, limit_s)
        self._plausible(timed.seconds, inputs, learner)
        return timed.seconds

    def _accept(
        self, timed: Timed, turn: Turn, learner: bool, expect: TensorShape, limit_s: float
    ) -> None:
        side = "a timed run" if learner else "the reference"
        if timed.late:
            if not learner:
                raise _Failed(f"the reference took over {limit_s:.1f} s", True)
            raise _Failed(
                f"too slow to rank: a timed run took over {limit_s * 1000:.0f} ms, more than "
                f"{SLOWER_CAP:.0f}× the reference's median call"
            )
        answer = timed.answer
        if answer is None:
            over = turn.over
            message = over.message if over is not None else "the turn ended early"
            our_fault = not learner or (over is not None and over.status == "internal_error")
            raise _Failed(f"{side} stopped: {message}", our_fault)
        if answer.status != "returned" or answer.tensor is None:
            raise _Failed(f"{side} raised: {_first_line(answer.error)}", not learner)
        if answer.tensor != expect:
            got = answer.tensor
            raise _Failed(
                f"{side} returned {got.dtype} {list(got.shape)}, not {expect.dtype} "
                f"{list(expect.shape)}: every timed result is checked",
                not learner,
            )
        if not timed.read:
            raise _Failed(f"{side} returned a tensor that could not be read: {timed.problem}")

    def _check(self, actual: torch.Tensor, expected: torch.Tensor) -> None:
        rtol, atol = self.module.TOLERANCE
        # allclose's rule (NaN never close) in four passes: allclose itself takes 8x longer
        error = torch.sub(actual, expected).abs_()
        bound = expected.abs().mul_(rtol).add_(atol)
        if not bool(torch.le(error, bound).all()):
            error = error.nan_to_num_(math.inf).max().item()
            raise _Failed(
                f"a timed run returned a wrong result (largest error {error:.3g}): every timed "
                "result is checked against the reference, on fresh inputs"
            )

    def _plausible(self, seconds: float, inputs: tuple[torch.Tensor, ...], learner: bool) -> None:
        moved, flops = self.module.moved_bytes(*inputs), self.module.flops(*inputs)
        floor = self.roof.floor_s(moved, flops)
        if seconds < floor:
            raise _Failed(
                f"implausible: a {'timed run' if learner else 'reference call'} took "
                f"{seconds * 1e6:.0f} µs, but moving {moved / 1e6:.1f} MB and doing "
                f"{flops / 1e6:.0f} MFLOP takes at least {floor * 1e6:.0f} µs at this host's "
                "measured peaks",
                not learner,
            )

    def result(self, samples: tuple[tuple[float, float], ...], device: str) -> SpeedResult:
        ratios = [r / max(le, 1e-9) for r, le in samples]
        ratio = statistics.median(ratios)
        quartiles = statistics.quantiles(ratios, n=4, method="inclusive")
        learner_s = statistics.median(le for _, le in samples)
        reference_s = statistics.median(r for r, _ in samples)
        moved = self.module.moved_bytes(*self.last_inputs)
        flops = self.module.flops(*self.last_inputs)
        # GB/s and GFLOP/s from each side's fastest call: what slows a call (the host's other
        # work, its speed swinging under a hypervisor) only ever adds time, so the fastest is
        # the steadiest reading of the work itself
        fastest_learner = min(le for _, le in samples)
        fastest_reference = min(r for r, _ in samples)
        return SpeedResult(
            ratio=ratio,
            learner_s=learner_s,
            reference_s=reference_s,
            spread=(quartiles[2] - quartiles[0]) / ratio if ratio > 0 else 0.0,
            pairs=len(samples),
            device=device_name(device),
            achieved_gbs=_per_second(moved, fastest_learner),
            reference_gbs=_per_second(moved, fastest_reference),
            instrument=SPEED_INSTRUMENT,
            board_ratio=lower_bound_of_median(ratios),
            moved_bytes=moved,
            flops=flops,
            achieved_gflops=_per_second(flops, fastest_learner),
            reference_gflops=_per_second(flops, fastest_reference),
        )


@contextlib.contextmanager
def _off_the_job_core() -> Iterator[None]:
    """Keep this thread (its input draws, its spinning wait) off the core the jobs run on,
    where there is another: the jobs must have theirs to themselves."""
    allowed, threads = os.sched_getaffinity(0), torch.get_num_threads()
    others = allowed - {job_core()}
    if others:
        os.sched_setaffinity(0, others)
        torch.set_num_threads(min(threads, len(others)))
    try:
        yield
    finally:
        if others:
            torch.set_num_threads(threads)
            os.sched_setaffinity(0, allowed)


def _per_second(amount: int, seconds: float) -> float | None:
    """Bytes or FLOPs per second, in 10⁹ (GB/s, GFLOP/s)."""
    return amount / seconds / 1e9 if seconds > 0 else None


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "an error"
