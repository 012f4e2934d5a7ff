"""One job seen from the trusted client: the order to the zygote, the job's own pipes.

The client makes the job's pipes and sends their job ends with the order; the zygote forks
the job onto them and closes its copies unread.  The client then writes the request (and a
speed trial's inputs) straight to the job and reads its results, stdout and stderr straight
from it (``sandbox.streams``), while the zygote reports only how the job lived and
ended (``Life``).  When the client has what it needs, or the job broke a rule, it says
``stop``; the zygote kills the job and sends its report.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sandbox.codec import MAX_ERROR_CHARS, JobOrder, order_to_json
from sandbox.control import Control
from sandbox.framing import ProtocolError
from sandbox.observation import Life, Observation, life_from_json
from sandbox.pipes import JobPipes
from sandbox.poller import Poller
from sandbox.streams import DRAIN_S, JobStreams, Reading

#: setup, teardown and transfer on top of the job's wall limit, before the client gives up
#: on its zygote
RESPONSE_MARGIN_S = 30.0


class ZygoteGone(Exception):
    """The zygote's socket closed: it died (killed from outside, or crashed)."""


class JobChannel:
    """One running job; not thread-safe (the zygote's lock is held while it runs)."""

    def __init__(self, control: Control, order: JobOrder, transcript: Reading) -> None:
        self.control = control
        job_pipes = JobPipes.new()
        self.streams = JobStreams(job_pipes, transcript, order.limits)
        ends = job_pipes.job_ends()
        try:
            control.send(order_to_json(order), ends.fds)
        except (BrokenPipeError, ConnectionResetError) as exc:
            self.streams.close()
            raise ZygoteGone("it closed its socket") from exc
        except BaseException:
            self.streams.close()
            raise
        finally:
            ends.close()  # the job holds them now; the client keeps no copy
        self.poller = Poller()
        self.streams.register(self.poller)
        self.poller.on_readable(control.fileno(), self._on_control)
        self.life: Life | None = None
        self.stopped = False
        self.closed = False
        self.deadline = time.monotonic() + order.limits.wall_s + RESPONSE_MARGIN_S

    def send(self, chunks: list[bytes]) -> None:
        self.streams.send(chunks)

    def end_feed(self) -> None:
        self.streams.end_feed()

    def pump_until(self, done: Callable[[], bool]) -> bool:
        """Serve the job until ``done()`` holds (True), or it ended or broke a rule (False)."""
        while not done():
            if self.life is not None or self.streams.broken:
                return done()
            self._pump()
        return True

    def spin_until(self, done: Callable[[], bool], deadline: float) -> bool:
        """``pump_until`` without ever sleeping, until ``deadline`` (``perf_counter``): for a
        timed window, where the time to wake this process would be timed too."""
        while not done():
            if self.life is not None or self.streams.broken or time.perf_counter() > deadline:
                return done()
            self.poller.pump(0)
        return True

    def finish(self) -> Observation:
        """Serve the job until its transcript is finished or it ended or broke a rule, stop
        it, wait for the zygote's report and read what is left."""
        self.pump_until(lambda: self.streams.settled)
        if self.life is None:
            self._stop()
        while self.life is None:
            self._pump()
        self.streams.drain(0.0 if self.stopped else DRAIN_S)
        self.close()
        return Observation.of(self.life, self.streams.facts)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.poller.forget(self.control.fileno())
            self.streams.close()

    def _pump(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the sandbox did not report the end of the job")
        self.poller.pump(remaining)
        if self.streams.settled and self.life is None:
            self._stop()  # all results are in, or nothing more the job sends counts

    def _stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            try:
                self.control.send({"kind": "stop"})
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise ZygoteGone("it closed its socket") from exc

    def _on_control(self) -> None:
        try:
            self.control.receive()
        except ConnectionResetError as exc:
            raise ZygoteGone("its socket broke") from exc
        header = self.control.next_frame()
        if header is None:
            if self.control.closed:
                raise ZygoteGone("it closed its socket")
            return
        if header.get("kind") == "error":
            message = str(header.get("message", ""))[:MAX_ERROR_CHARS]
            raise ProtocolError(f"the sandbox refused the job: {message}")
        if self.life is not None or self.control.next_frame() is not None:
            raise ProtocolError("more than one report for a job")
        self.life = life_from_json(header)
