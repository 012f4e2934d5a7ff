"""Profile one learner call inside the job with torch's own profiler: advice, never trusted.

A call that asks for it (``Call.profile``) runs under ``torch.autograd.profiler.profile``,
the engine that ``torch.profiler.profile`` drives (the latter imports ``torch._inductor`` on
its first start, 0.8 s inside a job, to read one setting), with CPU activities, and CUDA's
too on a "cuda" job; inside it, a ``record_function`` mark of the runner's own wraps just
the learner's function, so nothing of the runner (the profiler's own start and stop, the
wait for the GPU after the call) is counted.

Kineto's raw events are summed here per name (torch's ``FunctionEvent`` tree costs about
40 µs an event to build in Python; this 3 to 4 µs, after kineto's own stop, about 3): self
time (an event's time less its direct children's on its thread; a kernel's device time), how
many times it ran, and how many of those ran at the learner's own level, inside no other
operator (a record_function label is no operator, so ops under a learner's label still
count).  The entries with the most self time are kept, at most ``MAX_PROFILE_OPS``.

Nothing here may fail the call: a profiler that cannot start, that the learner stopped,
whose events cannot be read, or that has more events than can be summed before the job's
wall limit gives no profile and says why.  What the profile cost in memory (about 1.5 KB an
event, mostly kineto's) is given back before the next call.  The submission shares this
process and can fake all of it, so the client validates every entry and cleans every name
(``sandbox.codec.profile_from_json``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from time import perf_counter  # bound now: a learner patching time.* cannot break it
from typing import Any

from torch.autograd import profiler as autograd_profiler

from sandbox import linux
from sandbox.api import OpTime
from sandbox.codec import MAX_NAME_CHARS, MAX_PROFILE_OPS, MAX_PROFILE_PROBLEM_CHARS, clip

#: the runner's own label around the learner's function
CALL_MARK = "brrrbot::call"
#: kineto logs each profiler start and stop to stderr (the learner's) below this level
KINETO_LOG_LEVEL = "6"
#: kineto activity kinds counted, on the CPU and on the device
LABEL_KINDS = frozenset({"user_annotation"})
RUNTIME_KINDS = frozenset({"cuda_runtime", "cuda_driver"})
CPU_KINDS = frozenset({"cpu_op"}) | LABEL_KINDS | RUNTIME_KINDS
KERNEL_KINDS = frozenset({"kernel", "gpu_memcpy", "gpu_memset"})
#: the profiler's own bookkeeping, which torch's tables leave out too
HIDDEN_NAMES = frozenset(
    {
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
    }
)

#: a generous bound on the time to read and sum one event here (3-4 µs on a 2-core host);
#: a profile whose events would not be summed before the job's wall limit is given up
SUMMARY_S_PER_EVENT = 10e-6

_ready = False


class ProfileProblem(Exception):
    """The profile cannot be read; the message says why."""


def _first_use() -> None:
    """Once a job: keep kineto off the learner's stderr (it reads its level when it first
    starts) and pay the profiler's first start, and its first events, outside any call (else
    the first profiled call takes 2 ms longer, inside its first operator)."""
    global _ready
    if _ready:
        return
    _ready = True
    os.environ["KINETO_LOG_LEVEL"] = KINETO_LOG_LEVEL
    session = autograd_profiler.profile(use_kineto=True, use_cpu=True)
    with session, autograd_profiler.record_function(CALL_MARK):
        pass
    session.kineto_results.events()


def _why(what: str, exc: BaseException) -> str:
    """``what`` happened, and the exception that says why, on one line that fits."""
    try:
        kind = "" if isinstance(exc, ProfileProblem) else f"{type(exc).__name__}: "
        text = f"{what}: {kind}{exc}"
    except BaseException:  # a hostile __str__
        text = f"{what}: {type(exc).__name__}"
    return clip(" ".join(text.split()), MAX_PROFILE_PROBLEM_CHARS)


class CallProfiler:
    """The profiler around one call: ``start`` before it, ``mark`` (when not None) entered
    around the learner's function alone, ``finish`` after it.  None of them raises."""

    def __init__(self, device: str, limit_s: float, deadline: float) -> None:
        self.device = device
        self.limit_s = limit_s  # no entry's time is reported as longer (the job's wall limit)
        self.deadline = deadline  # perf_counter() when the job's wall limit will have passed
        self.session: Any = None
        self.mark: Any = None
        self.problem = ""

    def start(self) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _first_use()
                session = autograd_profiler.profile(
                    use_kineto=True,
                    use_cpu=True,
                    use_device="cuda" if self.device == "cuda" else None,
                )
                session.__enter__()
            self.session = session
            self.mark = autograd_profiler.record_function(CALL_MARK)
        except BaseException as exc:
            self.problem = _why("the profiler did not start", exc)

    def finish(self) -> tuple[tuple[OpTime, ...] | None, str]:
        """The call's profile, or None and why there is none."""
        if self.session is None:
            return None, self.problem
        session, self.session = self.session, None
        try:
            return self._summary(session), ""
        except BaseException as exc:
            return None, _why("the profile failed", exc)
        finally:
            # kineto's stop and the sums take about 1.5 KB an event; freed with the session,
            # but kept by malloc (and counted against the job's memory) unless given back
            del session
            linux.trim_malloc()

    def _summary(self, session: Any) -> tuple[OpTime, ...]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            session.__exit__(None, None, None)
        results = session.kineto_results
        if results is None:
            raise ProfileProblem("the profiler returned no results")
        events = results.events()
        if perf_counter() + len(events) * SUMMARY_S_PER_EVENT > self.deadline:
            raise ProfileProblem(f"{len(events)} events are too many to sum in the time left")
        return summarise(events, self.limit_s)


def summarise(events: Iterable[Any], limit_s: float) -> tuple[OpTime, ...]:
    """Kineto's events of one profiled call, summed per name (see the module's doc)."""
    cpu: list[tuple[str, str, int, int, int, int, int]] = []
    totals: dict[tuple[str, bool], list[int]] = {}  # (name, kernel) -> [self ns, count, top]
    for event in events:  # each read once: a kineto event's methods are the cost here
        kind = event.activity_type()
        if kind in KERNEL_KINDS:
            entry = totals.setdefault((event.name()[:MAX_NAME_CHARS], True), [0, 0, 0])
            entry[0] += max(event.end_ns() - event.start_ns(), 0)
            entry[1] += 1
        elif kind in CPU_KINDS and not event.is_hidden_event():
            name = event.name()
            if name not in HIDDEN_NAMES:
                cpu.append(
                    (
                        kind,
                        name,
                        event.start_ns(),
                        event.end_ns(),
                        event.start_thread_id(),
                        event.correlation_id(),
                        event.linked_correlation_id(),
                    )
                )
    marks = [e for e in cpu if e[1] == CALL_MARK and e[0] in LABEL_KINDS]
    if not marks:
        raise ProfileProblem("the call's mark is missing from the profile")
    mark = min(marks, key=lambda e: (e[2], -e[3]))
    for name, self_ns, top in _cpu_rows([e for e in cpu if e is not mark], mark[2], mark[3]):
        entry = totals.setdefault((name, False), [0, 0, 0])
        entry[0] += self_ns
        entry[1] += 1
        entry[2] += top
    ranked = sorted(totals.items(), key=lambda item: (-item[1][0], item[0]))
    return tuple(
        OpTime(name, min(ns / 1e9, limit_s), count, top, kernel)
        for (name, kernel), (ns, count, top) in ranked[:MAX_PROFILE_OPS]
    )


def _cpu_rows(
    events: list[tuple[str, str, int, int, int, int, int]], low: int, high: int
) -> Iterable[tuple[str, int, bool]]:
    """(name, self ns, top level) of each CPU event (kind, name, start, end, thread,
    correlation, linked correlation) that started inside the mark, from ``low`` to ``high``."""
    # CUDA runtime calls carry their OS thread's id, operators torch's own: a runtime call
    # linked to an operator tells which of torch's threads its OS thread is
    op_thread = {e[5]: e[4] for e in events if e[6] == 0}
    thread_of: dict[int, int] = {}
    for kind, _, _, _, thread, _, linked in events:
        if kind in RUNTIME_KINDS and linked in op_thread:
            thread_of[thread] = op_thread[linked]
    rows = []  # (thread, start, -end, name, is a label), sorted: each thread's order of nesting
    for kind, name, start, end, thread, _, _ in events:
        if low <= start <= high:
            rows.append(
                (thread_of.get(thread, thread), start, -max(end, start), name, kind in LABEL_KINDS)
            )
    rows.sort(key=lambda row: row[:3])
    self_ns = [0] * len(rows)
    top = [False] * len(rows)
    open_events: list[tuple[int, int, int]] = []  # (end, row, operators open, this included)
    current = None
    for index, (thread, start, negative_end, _, label) in enumerate(rows):
        if thread != current:
            open_events.clear()
            current = thread
        while open_events and open_events[-1][0] <= start:
            open_events.pop()
        length = -negative_end - start
        self_ns[index] += length
        operators = 0
        if open_events:
            self_ns[open_events[-1][1]] -= length
            operators = open_events[-1][2]
        top[index] = operators == 0
        open_events.append((-negative_end, index, operators + (0 if label else 1)))
    for index, row in enumerate(rows):
        yield row[3][:MAX_NAME_CHARS], max(self_ns[index], 0), top[index]
