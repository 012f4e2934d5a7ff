"""What every grader provides, and the verdict it returns.

A grader is pure trusted-side logic: it plans the calls (generating inputs with
fresh seeds), the sandbox runs the learner's functions, and the grader judges
the raw results after the job process is gone.  Importing this module must not
import torch; grader modules import it lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from pydantic import TypeAdapter, ValidationError

from graders.declaration import Declaration
from sandbox.api import Call, Limits, SandboxResult

VerdictStatus = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class Check:
    """One line of a verdict.  ``checked`` is False for a check that was not made (a rule
    that only counts once results are right): it earns nothing, yet is no mistake."""

    name: str
    passed: bool
    message: str
    checked: bool = True

    @property
    def mark(self) -> str:
        """How the check is shown: passed, failed or not checked."""
        return "✓" if self.passed else ("✗" if self.checked else "–")


#: the speed-trial instrument results are measured with today (``SpeedResult.instrument``)
SPEED_INSTRUMENT = 2


class Bound(StrEnum):
    """What limits a speed-ranked call (``graders.bottleneck`` decides, by rules its docstring
    states): a roof it nearly reaches, per-operator overhead, or neither roof."""

    COMPUTE = "compute"
    MEMORY = "memory"
    OVERHEAD = "overhead"
    NEITHER = "neither"  # below both roofs: an operator's own throughput bounds it


@dataclass(frozen=True)
class SpeedResult:
    """A speed trial: the worker's own clock timed a trusted reference and the learner's
    function in turns, on fresh inputs, and checked every learner result.

    ``ratio`` is reference/learner (2.0: twice as fast as the reference), the median of the
    per-pair ratios; ``spread`` is their interquartile range over that median.  ``device`` is
    the device class the boards rank within: a CPU model or a GPU name.
    """

    ratio: float
    learner_s: float  # median seconds per timed learner call
    reference_s: float  # the same for the reference, in the same trial
    spread: float
    pairs: int
    device: str
    #: the roofline reading, for tasks that have one: achieved GB/s and the peak it is
    #: compared with (measured on a CPU host, the datasheet's on a GPU)
    achieved_gbs: float | None = None
    peak_gbs: float | None = None
    reference_gbs: float | None = None  # what the reference reached in the same trial
    #: which instrument measured it: results of another instrument never rank together
    #: (1: turns over pipes, until 2026-12; 2: stopped processes, shared inputs)
    instrument: int = 1
    #: what the boards rank: a lower confidence bound of ``ratio`` (luck cannot raise it
    #: much); the ratio itself for instrument 1, which had none
    board_ratio: float | None = None
    #: what place it on a roofline: the bytes the op must move and the FLOPs it must do
    #: (the speed reference's lower bounds), the GFLOP/s each side reached in its fastest call
    #: (as the GB/s above), the host's compute roof, and the bound they name
    moved_bytes: int | None = None
    flops: int | None = None
    achieved_gflops: float | None = None
    reference_gflops: float | None = None
    peak_gflops: float | None = None
    bound: Bound | None = None
    #: the sentence that names the bound (``graders.bottleneck.name_bound``), as the verdict
    #: said it; "" when none was named, and in verdicts stored before it was kept
    bound_sentence: str = ""

    @property
    def ranked_ratio(self) -> float:
        return self.ratio if self.board_ratio is None else self.board_ratio

    def describe(self) -> str:
        """One line for the verdict: "1.8× the reference on <device>"."""
        return (
            f"{format_ratio(self.ratio)}× the reference on {self.device} "
            f"(median of {self.pairs} pairs, spread ±{self.spread * 50:.0f}%)"
        )


@dataclass(frozen=True)
class OpShare:
    """One operator of a profile: its self time per call and its share of the call's."""

    name: str  # cleaned by the sandbox's decoder: safe to show anywhere
    self_s: float
    share: float  # of ``OpProfile.total_s``
    count: float  # times it ran per call


@dataclass(frozen=True)
class OpProfile:
    """The learner's function profiled by ``torch.profiler`` in its own sandboxed process:
    advice, never ranked (the process measured itself).  Per call of the function."""

    operators: float  # operators the learner's code called directly
    total_s: float  # the self time of every operator together
    top: tuple[OpShare, ...]  # the largest by self time, largest first
    kernels: float | None = None  # GPU kernels launched; None on a CPU


@dataclass(frozen=True)
class BatchedRun:
    """What batching bought: the function timed again, on the reference's inputs for
    ``batch`` sequences at once (``graders.declaration.Speed.batch``); never ranked."""

    batch: int
    result: SpeedResult | None
    reason: str = ""  # why there is no result


@dataclass(frozen=True)
class TrialOutcome:
    """A speed trial as the worker ran it (``bot.worker.speed_trial``): a ranked result, or
    why there is none (``our_fault``: the reference or the sandbox failed, not the learner).
    The grader turns it into its verdict's speed part (``Grader.judge_speed``).  After a
    ranked trial the worker may profile the function too (``profile``, or why not)."""

    result: SpeedResult | None
    reason: str = ""
    our_fault: bool = False
    samples: tuple[tuple[float, float], ...] = ()  # (reference_s, learner_s) per pair
    learner_output: str = ""  # what the learner's job printed
    seconds: float = 0.0  # the whole trial, loads included
    profile: OpProfile | None = None
    profile_problem: str = ""  # why a profile that was asked for is missing
    batched: BatchedRun | None = None  # the batch trial, for a task that declares one


@dataclass(frozen=True)
class HostPeak:
    """The roofs a trial's result is placed under, where it ran: peak memory bandwidth and
    float32 compute, measured at start on a CPU host, the datasheet's on a GPU
    (``graders.roofline``)."""

    device: str  # "cpu" or "cuda"
    name: str  # the CPU model, or the GPU's name as the driver reports it
    gbs: float | None  # 10⁹ bytes per second; None for a GPU with no datasheet peak on file
    source: str = ""  # where the peak comes from: "a measured", "the H200's datasheet"
    gflops: float | None = None  # the compute roof: float32 10⁹ FLOP/s, measured or datasheet


def format_ratio(ratio: float) -> str:
    """Two significant figures, never an exponent: 0.053, 0.87, 1.8, 12, 140."""
    if ratio >= 10:
        return f"{ratio:.0f}"
    if ratio >= 1:
        return f"{ratio:.1f}"
    return f"{ratio:.2g}"


class BadVerdict(ValueError):
    """Stored verdict data that is not a verdict; the message says what is wrong."""


@dataclass(frozen=True)
class Verdict:
    """The one verdict type: a grader returns it, the worker stores ``to_json()``, the bot
    reads it back with ``from_json`` and delivers it.

    ``error`` means grading failed on our side (never the learner's fault, never XP).
    """

    task: str  # QUEST/TASK
    status: VerdictStatus
    score: float  # 0..1
    checks: tuple[Check, ...]
    feedback: str  # a short paragraph that teaches
    duration_s: float = 0.0
    device: str = "cpu"
    notes: tuple[str, ...] = ()  # e.g. "dropped 2 IPython magic lines"
    speed: SpeedResult | None = None  # a passing speed-ranked task's trial; never XP
    profile: OpProfile | None = None  # the function's own profile, after its trial; advice

    @classmethod
    def internal_error(cls, task: str, message: str) -> Verdict:
        """Grading failed on our side: no score, no XP, and the member is told it is not
        their fault."""
        return cls(task, "error", 0.0, (), message)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["checks"] = [asdict(c) for c in self.checks]
        data["notes"] = list(self.notes)
        data["speed"] = asdict(self.speed) if self.speed is not None else None
        data["profile"] = asdict(self.profile) if self.profile is not None else None
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        """The verdict ``to_json`` wrote; BadVerdict when ``data`` is not one."""
        try:
            return _STORED.validate_python(dict(data))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'verdict'}: {e['msg']}" for e in exc.errors()
            )
            raise BadVerdict(f"not a stored verdict ({problems})") from None


_STORED = TypeAdapter(Verdict)


@dataclass
class Plan:
    """The calls to make and the trusted state needed to judge them.

    ``expected`` never leaves the trusted process.
    """

    calls: tuple[Call, ...]
    expected: dict[str, Any] = field(default_factory=dict)
    seed: int = 0  # the draw; ``brrrbot grade --seed`` replays it exactly


class Grader(Protocol):
    """A grader (``graders/tasks/``): it plans, judges, and owns its whole verdict, the
    speed part included.  Its interface, limits and device come from its ``declaration``."""

    name: str
    declaration: Declaration
    interface: tuple[str, ...]  # function names the submission must define
    limits: Limits
    needs_cuda: bool

    def plan(self, seed: int, device: str) -> Plan: ...

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict: ...

    def judge_speed(self, verdict: Verdict, trial: TrialOutcome, peak: HostPeak) -> Verdict:
        """``verdict``, a pass of a speed-ranked task, with the trial the worker ran after it;
        ``peak`` is the host's, for the roofline reading."""
        ...
