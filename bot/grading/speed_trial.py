"""Speed trials: how fast a passing submission is, by the worker's clock, against a reference.

The trial alternates turns (``bot.sandbox.turns``): the trusted reference, then the learner's
function, ``pairs`` times.  Every turn is a fresh job pinned to the job core, loaded before any
input exists; it gets one untimed warm-up call and one timed call, each on inputs drawn fresh
here, and the time is taken by this process from sending the inputs to holding the result
bytes.  Every timed learner result is checked against the reference computed here, so a run
that skipped work fails the trial instead of ranking.  The figure that ranks is the median of
the per-pair ratios reference/learner: both sides ran on the same core at nearly the same
moment, so a busy host slows both and the ratio stays put.

For a task whose reference declares ``moved_bytes`` the trial also times an "echo" turn per
pair (a trusted function returning its input: the transfers and nothing else), so the
learner's compute time is its fastest time minus the echo's fastest, and achieved GB/s can be
set against the host's peak (and the reference's, the same way).  Runs in the worker (imports
torch); nothing here trusts the job's answers.
"""

from __future__ import annotations

import inspect
import secrets
import statistics
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from types import ModuleType
from typing import Protocol

import torch

import graders.speed
from bot.grading.job_spec import SpeedSpec
from bot.sandbox.api import Limits, RawTensor
from bot.sandbox.cores import cpu_model
from bot.sandbox.turn_client import Turn
from bot.sandbox.turns import TurnOutput, TurnSpec
from graders.base import SpeedResult

#: pairs of turns (the issue asks for at least 15).  Measured on a quiet 2-core machine, five
#: trials of one honest file strayed from their median by up to 30% at 21 pairs, by 8% at most
#: at 41 (ten sets of five); a turn costs about half what it did when the zygote relayed its
#: bytes, so 41 pairs take about 1.5x the time 21 once did
PAIRS = 41
#: timed calls per turn, each on fresh inputs and each checked; the turn counts its fastest,
#: since noise from the rest of the host only ever adds time
TIMED_CALLS = 3
ECHO_SOURCE = "def echo(*args):\n    return args[0]\n"


class TurnRunner(Protocol):
    """What a trial needs of the sandbox (``bot.sandbox.Zygote`` provides it)."""

    def turn(self, spec: TurnSpec) -> AbstractContextManager[Turn]: ...


@dataclass(frozen=True)
class TrialOutcome:
    """A ranked result, or why there is none (``our_fault``: the reference or the sandbox
    failed, not the learner)."""

    result: SpeedResult | None
    reason: str = ""
    our_fault: bool = False
    samples: tuple[tuple[float, float], ...] = ()  # (reference_s, learner_s) per pair
    learner_output: str = ""  # what the learner's turns printed (the first turn's and last's)


class _Failed(Exception):
    def __init__(self, reason: str, our_fault: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.our_fault = reason, our_fault


def device_name(device: str) -> str:
    """The device class a result is ranked within: the GPU's name, or the CPU model."""
    if device == "cuda":
        return str(torch.cuda.get_device_name())[:128]
    return cpu_model()


def raw(tensor: torch.Tensor) -> RawTensor:
    tensor = tensor.detach().to("cpu").contiguous()
    name = str(tensor.dtype).removeprefix("torch.")
    return RawTensor(name, tuple(tensor.shape), tensor.numpy().tobytes())


def run_trial(
    speed: SpeedSpec,
    source: str,
    filename: str,
    sandbox: TurnRunner,
    limits: Limits,
    device: str = "cpu",
    *,
    pairs: int = PAIRS,
    seed: int | None = None,
) -> TrialOutcome:
    """Time ``speed.function`` of ``source`` against ``speed.reference``; never raises for
    anything the submission does."""
    module = graders.speed.load(speed.reference)
    generator = torch.Generator().manual_seed(secrets.randbits(62) if seed is None else seed)
    sides = _Sides(module, source, filename, speed.function, limits, device)
    reference_s: list[float] = []
    learner_s: list[float] = []
    echo_s: list[float] = []
    try:
        for _ in range(pairs):
            reference_s.append(sides.time(sandbox, sides.reference, generator, check=False))
            learner_s.append(sides.time(sandbox, sides.learner, generator, check=True))
            if sides.echo is not None:
                echo_s.append(sides.time(sandbox, sides.echo, generator, check=False))
    except _Failed as failed:
        return TrialOutcome(
            None, failed.reason, failed.our_fault, learner_output=sides.printed_text()
        )
    ratios = [r / max(le, 1e-9) for r, le in zip(reference_s, learner_s, strict=True)]
    ratio = statistics.median(ratios)
    quartiles = statistics.quantiles(ratios, n=4, method="inclusive")
    result = SpeedResult(
        ratio=ratio,
        learner_s=statistics.median(learner_s),
        reference_s=statistics.median(reference_s),
        spread=(quartiles[2] - quartiles[0]) / ratio if ratio > 0 else 0.0,
        pairs=pairs,
        device=device_name(device),
        achieved_gbs=_achieved_gbs(module, sides.timed_inputs, learner_s, echo_s),
        reference_gbs=_achieved_gbs(module, sides.timed_inputs, reference_s, echo_s),
    )
    samples = tuple(zip(reference_s, learner_s, strict=True))
    return TrialOutcome(result, samples=samples, learner_output=sides.printed_text())


def _achieved_gbs(
    module: ModuleType,
    inputs: tuple[torch.Tensor, ...] | None,
    side_s: list[float],
    echo_s: list[float],
) -> float | None:
    """GB/s one side's compute achieved: the bytes the op must move over (its fastest turn -
    the fastest echo turn); None when the task has no roofline or the compute time is lost
    in the transfers.  Fastest, not median: the rest of the host only ever adds time, so the
    two minima each approach their undisturbed values, while a difference of two medians
    carries the noise of both."""
    moved: Callable[..., int] | None = getattr(module, "moved_bytes", None)
    if moved is None or inputs is None or not echo_s:
        return None
    compute = min(side_s) - min(echo_s)
    if compute <= 0:
        return None
    return moved(*inputs) / compute / 1e9


class _Sides:
    """The three kinds of turn of one trial and how each is timed and checked."""

    def __init__(
        self,
        module: ModuleType,
        source: str,
        filename: str,
        function: str,
        limits: Limits,
        device: str,
    ) -> None:
        self.module = module
        name = module.__name__.rsplit(".", 1)[-1]
        self.reference = TurnSpec(
            inspect.getsource(module), f"reference_{name}.py", "reference", limits, device
        )
        self.learner = TurnSpec(source, filename, function, limits, device)
        has_roofline = hasattr(module, "moved_bytes")
        self.echo = (
            TurnSpec(ECHO_SOURCE, "echo.py", "echo", limits, device) if has_roofline else None
        )
        self.timed_inputs: tuple[torch.Tensor, ...] | None = None
        self.printed: list[str] = []  # the learner turns' stdout and stderr

    def printed_text(self) -> str:
        kept = self.printed[:1] + self.printed[-1:] if len(self.printed) > 1 else self.printed
        return "\n".join(kept)

    def time(
        self, sandbox: TurnRunner, spec: TurnSpec, generator: torch.Generator, *, check: bool
    ) -> float:
        """One turn: a warm-up call, then TIMED_CALLS timed ones; the fastest's seconds."""
        warm_up = tuple(raw(t) for t in self.module.inputs(generator))
        draws = [self.module.inputs(generator) for _ in range(TIMED_CALLS)]
        self.timed_inputs = draws[0]
        answers: list[tuple[float, TurnOutput | None]] = []
        with sandbox.turn(spec) as turn:
            turn.call(warm_up)
            for timed in draws:
                answers.append(turn.call(tuple(raw(t) for t in timed)))
                if answers[-1][1] is None:
                    break
        learner = spec is self.learner
        if learner and turn.over is not None:
            self.printed.append(turn.over.stdout + turn.over.stderr)
        for (_, output), timed in zip(answers, draws, strict=False):
            self._accept(output, turn, learner)
            if check and output is not None and output.tensor is not None:
                self._check(output.tensor, timed)
        return min(seconds for seconds, _ in answers)

    def _accept(self, output: TurnOutput | None, turn: Turn, learner: bool) -> None:
        if output is None:
            over = turn.over
            message = over.message if over is not None else "the turn ended early"
            raise _Failed(
                f"the {'timed run' if learner else 'reference'} stopped: {message}",
                our_fault=not learner or (over is not None and over.status == "internal_error"),
            )
        if output.status != "ok" or output.tensor is None:
            raise _Failed(f"a timed call raised: {_first_line(output.error)}", not learner)

    def _check(self, got: RawTensor, timed: tuple[torch.Tensor, ...]) -> None:
        expected = self.module.reference(*timed)
        name = str(expected.dtype).removeprefix("torch.")
        if got.dtype != name or got.shape != tuple(expected.shape):
            raise _Failed(
                f"a timed run returned {got.dtype} {list(got.shape)}, not {name} "
                f"{list(expected.shape)}: every timed result is checked"
            )
        actual = torch.frombuffer(bytearray(got.data), dtype=expected.dtype).reshape(expected.shape)
        rtol, atol = self.module.TOLERANCE
        if not torch.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=False):
            error = (actual - expected).abs().max().item()
            raise _Failed(
                f"a timed run returned a wrong result (largest error {error:.3g}): every timed "
                "result is checked against the reference, on fresh inputs"
            )


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "an error"
