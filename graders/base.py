"""What every grader provides, and the verdict it returns.

A grader is pure trusted-side logic: it plans the calls (generating inputs with
fresh seeds), the sandbox runs the learner's functions, and the grader judges
the raw results after the job process is gone.  Importing this module must not
import torch; grader modules import it lazily.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from bot.sandbox.api import Call, Limits, SandboxResult

VerdictStatus = Literal["passed", "failed", "error"]


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    message: str


@dataclass(frozen=True)
class Verdict:
    task: str  # QUEST/TASK
    status: VerdictStatus
    score: float  # 0..1
    checks: tuple[Check, ...]
    feedback: str  # a short paragraph that teaches
    duration_s: float = 0.0
    device: str = "cpu"
    notes: tuple[str, ...] = ()  # e.g. "dropped 2 IPython magic lines"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["checks"] = [asdict(c) for c in self.checks]
        data["notes"] = list(self.notes)
        return data


@dataclass
class Plan:
    """The calls to make and the trusted state needed to judge them.

    ``expected`` never leaves the trusted process.
    """

    calls: tuple[Call, ...]
    expected: dict[str, Any] = field(default_factory=dict)


class Grader(Protocol):
    name: str
    interface: tuple[str, ...]  # function names the submission must define
    limits: Limits
    needs_cuda: bool

    def plan(self, seed: int, device: str) -> Plan: ...

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict: ...
