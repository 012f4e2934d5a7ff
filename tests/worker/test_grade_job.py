"""The grading pipeline attaches the speed trial and leaves the verdict to the grader: what
the grader's ``judge_speed`` returns is what the member gets (with the job's own duration,
device and preparation notes), never rescored or reworded by the worker."""

from __future__ import annotations

import dataclasses
from contextlib import AbstractContextManager
from typing import Any

import pytest

import bot.worker.grade_job as grade_job
from bot.jobs.capabilities import Requirements
from bot.jobs.job_spec import JobSpec, SpeedSpec
from graders.base import (
    BatchedRun,
    Check,
    HostPeak,
    OpProfile,
    OpShare,
    Plan,
    SpeedResult,
    TrialOutcome,
    Verdict,
    VerdictStatus,
)
from graders.declaration import Declaration, Speed
from sandbox.api import Limits, SandboxRequest, SandboxResult

TASK = "toy/fast"
PEAK = HostPeak("cpu", "Toy CPU", 12.5, "a measured")
TRIAL = TrialOutcome(
    SpeedResult(0.5, 0.02, 0.01, 0.1, 50, "Toy CPU", 3.0, None, 4.0, 2, 0.4), seconds=4.5
)
#: what the grader says of the trial: nothing a worker could have worded
JUDGED = Verdict(TASK, "failed", 0.25, (Check("fast: speed", False, "too slow"),), "the grader's")


class Sandbox:
    """Runs nothing: the toy grader's judgement does not look at results."""

    def run(self, request: SandboxRequest) -> SandboxResult:
        return SandboxResult("ok", "", device=request.device, wall_s=0.125)

    def turn(self, spec: Any, load_timeout_s: float | None = None) -> AbstractContextManager[Any]:
        raise AssertionError("the trial is faked here")

    def partner(self) -> Sandbox:
        return self


class Toy:
    name = "toy"
    declaration = Declaration(("fast(x) -> Tensor",), speed=Speed("fast", "softmax_rows"))
    interface = ("fast",)
    limits = Limits()
    needs_cuda = False

    def __init__(self, status: VerdictStatus) -> None:
        self.status = status
        self.handed: list[tuple[Verdict, TrialOutcome, HostPeak]] = []

    def plan(self, seed: int, device: str) -> Plan:
        return Plan(calls=())

    def judge(self, task: str, plan: Plan, result: SandboxResult, source: str) -> Verdict:
        check = Check("fast: correct results", self.status == "passed", "as judged")
        return Verdict(task, self.status, float(check.passed), (check,), "")

    def judge_speed(self, verdict: Verdict, trial: TrialOutcome, peak: HostPeak) -> Verdict:
        self.handed.append((verdict, trial, peak))
        return JUDGED


def spec() -> JobSpec:
    return JobSpec(
        task_ref=TASK,
        grader="toy",
        interface=("fast",),
        requirements=Requirements(),
        limits=Limits(),
        prefers_cuda=False,
        filename="fast.py",
        source="def fast(x):\n    return x\n",
        notes=("dropped 1 IPython magic line",),
        speed=SpeedSpec("fast", "softmax_rows"),
    )


@pytest.fixture
def trials(monkeypatch: pytest.MonkeyPatch) -> list[SpeedSpec]:
    """The trials the pipeline runs (each answers ``TRIAL``) on a host whose peak is PEAK."""
    ran: list[SpeedSpec] = []

    def run_trial(speed: SpeedSpec, *args: Any, **kwargs: Any) -> TrialOutcome:
        if kwargs.get("batch") is None:
            ran.append(speed)
        else:  # the batch trial: which batch, how many pairs, in what is left of the budget
            name = f"batch {kwargs['batch']} {kwargs['pairs']} {kwargs['deadline_s']}"
            ran.append(dataclasses.replace(speed, function=name))
        return TRIAL

    def profile_function(speed: SpeedSpec, *args: Any, wall_s: float) -> tuple[OpProfile, str]:
        ran.append(dataclasses.replace(speed, function=f"profile {speed.function} {wall_s}"))
        return PROFILE, ""

    monkeypatch.setattr(grade_job, "run_trial", run_trial)
    monkeypatch.setattr(grade_job, "profile_function", profile_function)
    monkeypatch.setattr(grade_job, "host_peak", lambda device: PEAK)
    monkeypatch.setattr(grade_job, "roof_of", lambda device, peak: None)
    return ran


#: what the function's profile came to
PROFILE = OpProfile(1.0, 0.001, (OpShare("aten::softmax", 0.001, 1.0, 1.0),))


def test_a_pass_gets_its_trial_and_the_graders_verdict_on_it(
    monkeypatch: pytest.MonkeyPatch, trials: list[SpeedSpec]
) -> None:
    toy = Toy("passed")
    monkeypatch.setattr(grade_job, "load_grader", lambda name: toy)
    verdict = grade_job.grade_prepared(spec(), Sandbox(), allow_cuda=False)
    # the trial, then the profile in what is left of the trial's 30 s
    left = 30.0 - TRIAL.seconds
    assert trials == [
        SpeedSpec("fast", "softmax_rows"),
        SpeedSpec(f"profile fast {left}", "softmax_rows"),
    ]
    ((before, trial, peak),) = toy.handed
    assert before.status == "passed" and peak == PEAK
    assert trial == dataclasses.replace(TRIAL, profile=PROFILE)
    # the grader's verdict as it gave it: only the job's duration, device and notes added
    assert dataclasses.replace(verdict, duration_s=0.0) == dataclasses.replace(
        JUDGED, device="cpu", notes=("dropped 1 IPython magic line",)
    )


def test_a_failure_gets_no_trial(monkeypatch: pytest.MonkeyPatch, trials: list[SpeedSpec]) -> None:
    toy = Toy("failed")
    monkeypatch.setattr(grade_job, "load_grader", lambda name: toy)
    verdict = grade_job.grade_prepared(spec(), Sandbox(), allow_cuda=False)
    assert trials == [] and toy.handed == []
    assert verdict.status == "failed" and verdict.speed is None


def test_a_spec_that_asks_for_no_profile_gets_none(
    monkeypatch: pytest.MonkeyPatch, trials: list[SpeedSpec]
) -> None:
    toy = Toy("passed")
    monkeypatch.setattr(grade_job, "load_grader", lambda name: toy)
    unprofiled = dataclasses.replace(spec(), speed=SpeedSpec("fast", "softmax_rows", profile=False))
    grade_job.grade_prepared(unprofiled, Sandbox(), allow_cuda=False)
    assert trials == [SpeedSpec("fast", "softmax_rows", profile=False)]
    ((_, trial, _),) = toy.handed
    assert trial == TRIAL and trial.profile is None


def test_a_declared_batch_is_timed_after_the_trial_in_what_is_left_of_its_budget(
    monkeypatch: pytest.MonkeyPatch, trials: list[SpeedSpec]
) -> None:
    toy = Toy("passed")
    monkeypatch.setattr(grade_job, "load_grader", lambda name: toy)
    batched = dataclasses.replace(
        spec(), speed=SpeedSpec("fast", "softmax_rows", profile=False, batch=16)
    )
    grade_job.grade_prepared(batched, Sandbox(), allow_cuda=False)
    assert trials == [
        SpeedSpec("fast", "softmax_rows", profile=False, batch=16),
        SpeedSpec(f"batch 16 10 {30.0 - 4.5}", "softmax_rows", profile=False, batch=16),
    ]
    ((_, trial, _),) = toy.handed
    assert trial.batched == BatchedRun(16, TRIAL.result)
    assert trial.seconds == 9.0  # both trials
