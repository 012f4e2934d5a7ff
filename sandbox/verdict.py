"""Turn what was observed of a job into a ``SandboxResult``.

Facts measured outside the job (the zygote's wall clock, cgroup OOM kills and
the exit status reported by the init; the client's byte caps) outrank anything
the job said, and the first limit that explains the end of the job names it.
"""

from __future__ import annotations

import signal

from sandbox.api import Call, CallResult, JobStatus, Limits, SandboxRequest, SandboxResult
from sandbox.codec import MAX_ERROR_CHARS, clip
from sandbox.observation import Observation
from sandbox.transcript import Transcript
from sandbox.units import format_bytes, format_seconds


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _where(request: SandboxRequest, transcript: Transcript) -> str:
    if not transcript.loaded:
        return "during import"
    if len(transcript.calls) >= len(request.calls):
        return "after the last call"
    call = request.calls[len(transcript.calls)]
    return f"during call {call.function}" + (f" ({call.label})" if call.label else "")


def _cpu_exceeded(obs: Observation, limits: Limits) -> bool:
    if obs.exit is None or obs.exit.exited:
        return False
    return obs.exit.value == signal.SIGXCPU or (
        obs.exit.value == signal.SIGKILL and obs.exit.cpu_s >= limits.cpu_s
    )


def status_of(
    request: SandboxRequest, obs: Observation, transcript: Transcript
) -> tuple[JobStatus, str]:
    limits = request.limits
    if obs.setup_error:
        return "internal_error", f"sandbox setup failed: {obs.setup_error}"
    if obs.protocol_error:
        return "protocol_error", f"the job's reply was malformed: {obs.protocol_error}"
    if obs.over == "tensors":
        return (
            "output_limit",
            f"output limit exceeded: tensors over {format_bytes(limits.output_bytes)}",
        )
    if obs.over:
        cap = format_bytes(limits.stdout_bytes)
        return "output_limit", f"output limit exceeded: more than {cap} printed to {obs.over}"
    if obs.timed_out:
        return "timeout", f"time limit {format_seconds(limits.wall_s)} exceeded"
    if obs.oom or transcript.memory:
        return "memory", f"memory limit {format_bytes(limits.memory_bytes)} exceeded"
    if _cpu_exceeded(obs, limits):
        return "timeout", f"CPU time limit {format_seconds(limits.cpu_s)} exceeded"
    if transcript.load_error:
        return "load_error", transcript.load_error
    if transcript.done:
        return "ok", "ok"
    if obs.exit is None:
        return "internal_error", "the sandbox lost track of the job"
    where = _where(request, transcript)
    hint = f" (process limit {limits.processes} reached)" if obs.pids_exhausted else ""
    if obs.exit.exited:
        return "exited", f"exited with code {obs.exit.value} {where}{hint}"
    return "crashed", f"crashed with {_signal_name(obs.exit.value)} {where}{hint}"


def skipped(calls: tuple[Call, ...], reason: str) -> tuple[CallResult, ...]:
    """Results for calls that never ran; the first one carries the reason."""
    return tuple(
        CallResult(call.function, call.label, "skipped", error=reason if i == 0 else "")
        for i, call in enumerate(calls)
    )


def decide(
    request: SandboxRequest, device: str, obs: Observation, transcript: Transcript
) -> SandboxResult:
    status, message = status_of(request, obs, transcript)
    done = tuple(transcript.calls)
    rest = request.calls[len(done) :]
    reason = clip(message, MAX_ERROR_CHARS) if transcript.loaded and status != "ok" else ""
    return SandboxResult(
        status=status,
        message=message,
        calls=done + skipped(rest, reason),
        stdout=obs.stdout.decode("utf-8", "replace"),
        stderr=obs.stderr.decode("utf-8", "replace"),
        wall_s=obs.wall_s,
        device=device,
        cpu_s=obs.exit.cpu_s if obs.exit is not None else 0.0,
    )
