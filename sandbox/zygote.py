"""The zygote: imports torch once, then forks one confined job per order.

The trusted client starts it with exec and an empty environment (or forks it from a CLI
that has read no setting, ``bot.worker.local``), so it holds no token, database handle or
expected output that a job could inherit.  It holds nothing of any job either: an order
(``sandbox.control``) brings only limits and the job's pipe ends, which the zygote hands
to the job unread (``sandbox.pipes``), so the request, the inputs and the results pass
between the client and the job alone.  What the zygote sees of a job is its life: setup,
exit status, wall clock, the kill.  It reads orders on a Unix socket that it first moves off
descriptor 0 (1 joins 2, so that a stray print goes to the log), and exits when the socket
closes.

Before serving it runs a probe job through each sandbox mode in turn (full
namespaces as root, user namespaces otherwise, the degraded "bare" mode last)
and keeps the first that works; the probe's observations go to the client in
the ``ready`` frame for the isolation report.
"""

from __future__ import annotations

import contextlib
import gc
import os
import socket
from collections.abc import Callable
from typing import Any, NoReturn

import torch

from sandbox import cgroups, hugepages, job_runner, linux, pipes, probe, rootfs, seccomp
from sandbox.api import Limits, RawTensor
from sandbox.codec import JobKind, JobOrder, order_from_json
from sandbox.confine import Identity
from sandbox.control import Control
from sandbox.cores import job_core
from sandbox.framing import ProtocolError
from sandbox.jail import MODES, Body, Jail, Mode, cap_last
from sandbox.job import run_job
from sandbox.job_runner import describe, from_torch, to_torch
from sandbox.observation import Life, life_to_json
from sandbox.pipes import JobEnds, JobPipes
from sandbox.poller import Poller
from sandbox.streams import DRAIN_S, JobStreams
from sandbox.supervise import REAP_S, reap, reap_strays
from sandbox.tracer import OpRecorder
from sandbox.transcript import Transcript

JOB_ID_BASE = 1_500_000_000  # job uid/gid = base + zygote pid: unique per live zygote
CONTROL_HEADER_MAX = 1 << 20
PROBE_LIMITS = Limits(wall_s=30.0, cpu_s=30.0)
ZYGOTE_OOM_SCORE = -900  # a job raises its own to 1000 (confine.JOB_OOM_SCORE)


def _claim_control() -> socket.socket:
    """Keep the control socket on a private descriptor; 0 becomes /dev/null, 1 joins 2."""
    control = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return socket.socket(fileno=control)


def cuda_available() -> bool:
    """Ask NVML, not the CUDA runtime: initialising CUDA here would break it in every fork."""
    if torch.version.cuda is None:
        return False
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    return torch.cuda.is_available()


def warm_up() -> None:
    """Touch what every job uses so the forks inherit it ready (single-threaded torch)."""
    sample = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    raw, _ = from_torch(sample @ sample)
    assert raw is not None
    rebuilt = to_torch(RawTensor(raw.dtype, raw.shape, raw.data), "cpu")
    with OpRecorder():
        torch.nn.functional.relu(rebuilt + rebuilt).softmax(-1).sum()
    try:
        exec(compile("1 / 0", "warm-up.py", "exec"), {})
    except ZeroDivisionError as exc:
        describe(exc, "warm-up.py")


def identity_for(mode: Mode) -> tuple[Identity, int]:
    """The job's identity in ``mode`` and the uid it has on the host."""
    job_id = JOB_ID_BASE + os.getpid()
    if mode.user_namespace:
        return Identity(job_id, job_id, switch=False), os.geteuid()
    if os.geteuid() == 0:
        return Identity(job_id, job_id, switch=True), job_id
    return Identity(os.getuid(), os.getgid(), switch=False), os.getuid()


def ladder(requested: list[str]) -> list[str]:
    if requested:
        return requested
    if os.geteuid() == 0:
        return ["namespaces", "user-namespaces", "bare"]
    return ["user-namespaces", "bare"]


class Server:
    def __init__(self, requested_modes: list[str]) -> None:
        self.cuda = cuda_available()
        package = os.path.dirname(os.path.abspath(__file__))
        project = os.path.dirname(package)
        self.plan = rootfs.make_plan(rootfs.python_paths(project), self.cuda)
        self.filter = seccomp.build()
        self.cap_last = cap_last()
        self.hidden = [package]
        self.cgroups = cgroups.detect(f"{cgroups.PREFIX}{os.getpid()}-probe")
        cgroups.remove_stale(self.cgroups)
        self.cgroup = self._join_cgroup()
        self.core = job_core()
        self.unreaped: int | None = None
        self.notes: list[str] = []
        self.jail, self.host_uid, self.facts = self._choose(ladder(requested_modes))

    def _join_cgroup(self) -> cgroups.ZygoteCgroup | None:
        if not self.cgroups.hierarchies:
            return None
        try:
            cgroup = cgroups.ZygoteCgroup(self.cgroups, f"{cgroups.PREFIX}{os.getpid()}")
        except OSError as exc:
            reason = f"cannot join the zygote's cgroup: {exc}"
            self.cgroups = cgroups.Support(notes=dict.fromkeys(cgroups.CONTROLLERS, reason))
            return None
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as handle:
            handle.write(
                str(ZYGOTE_OOM_SCORE)
            )  # jobs share the cgroup: let the OOM killer spare us
        return cgroup

    def _choose(self, names: list[str]) -> tuple[Jail, int, dict[str, Any]]:
        """The first mode in ``names`` whose probe job runs, its host uid and the facts."""
        read_only = [bind.path for bind in self.plan.binds if bind.directory]

        def body(fd: int) -> NoReturn:
            probe.run(fd, self.hidden, read_only)

        for name in names:
            identity, host_uid = identity_for(MODES[name])
            jail = Jail(
                mode=MODES[name],
                plan=self.plan,
                syscall_filter=self.filter,
                identity=identity,
                host_ids=(os.geteuid(), os.getegid()),
                cap_last=self.cap_last,
                cgroup=self.cgroup,
            )
            facts, life = self._probe(jail, body)
            if facts is not None:
                return jail, host_uid, facts
            self.notes.append(f"{name}: {life.setup_error or 'the probe job failed'}")
        raise RuntimeError("no sandbox mode works here: " + "; ".join(self.notes))

    def _probe(self, jail: Jail, body: Body) -> tuple[dict[str, Any] | None, Life]:
        """The probe job's facts (None when it sent none) and its life.  The zygote reads
        this one job itself: no learner code has run, and none runs in it."""
        job_pipes = JobPipes.new()
        transcript = Transcript(None, PROBE_LIMITS)
        streams = JobStreams(job_pipes, transcript, PROBE_LIMITS)
        poller = Poller()
        streams.register(poller)
        streams.end_feed()
        ends = job_pipes.job_ends()
        try:
            life = self._run(
                jail, PROBE_LIMITS, "cpu", body, ends, None, poller, lambda: streams.settled
            )
            streams.drain(0.0 if streams.settled else DRAIN_S)
        finally:
            streams.close()
        return (transcript.facts if not streams.broken else None), life

    def _run(
        self,
        jail: Jail,
        limits: Limits,
        device: str,
        body: Body,
        ends: JobEnds,
        core: int | None,
        poller: Poller,
        settled: Callable[[], bool],
    ) -> Life:
        """One job, after the previous one's processes are fully gone."""
        try:
            if self.unreaped is not None:
                reap(self.unreaped, REAP_S)
            reap_strays()
        except BaseException:
            ends.close()
            raise
        self.unreaped = None
        life, self.unreaped = run_job(jail, limits, device, body, ends, core, poller, settled)
        return life

    def _cgroup_notes(self) -> dict[str, str]:
        if self.cgroup is None:
            return self.cgroups.notes
        return {
            controller: f"cgroup v{version} {path}, shared with the zygote, limits set per job"
            for controller, (version, path) in self.cgroup.dirs.items()
        }

    def ready(self) -> dict[str, Any]:
        return {
            "kind": "ready",
            "pid": os.getpid(),
            "mode": self.jail.mode.name,
            "mode_notes": self.notes,
            "cuda": self.cuda,
            "job_uid": self.host_uid,
            "zygote_uid": os.geteuid(),
            "cgroups": self._cgroup_notes(),
            "cgroup_dirs": sorted({path for _, path in self.cgroup.dirs.values()})
            if self.cgroup is not None
            else [],
            "cgroup_versions": {c: self.cgroups.version(c) for c in cgroups.CONTROLLERS},
            "zygote_namespaces": {n: os.readlink(f"/proc/self/ns/{n}") for n in probe.NAMESPACES},
            "probe": self.facts,
        }

    def execute(self, order: JobOrder, ends: JobEnds, control: Control) -> Life:
        """Run one job on the client's pipes until it ends or the client says stop."""
        device = "cuda" if order.device == "cuda" and self.cuda else "cpu"
        threads = order.limits.threads

        readable = order.kind is JobKind.TURN and self.jail.mode.user_namespace

        def body(fd: int) -> NoReturn:
            if readable:  # the unprivileged worker holds a turn's job: it must reach its memory;
                # no one else of this user can see into the job's own PID namespace
                linux.prctl(linux.PR_SET_DUMPABLE, 1)
            job_runner.serve(order.kind, device, threads, fd)

        stop = StopListener(control)
        poller = Poller()
        poller.on_readable(control.fileno(), stop.on_readable)
        core = self.core if order.pinned else None
        try:
            return self._run(self.jail, order.limits, device, body, ends, core, poller, stop)
        finally:
            control.close_fds()  # nothing but an order brings descriptors

    def serve(self, control: Control) -> None:
        while (header := control.read()) is not None:
            if header.get("kind") == "stop":  # for a job that had already ended
                continue
            try:
                order = order_from_json(header)
                ends = JobEnds(*control.take_fds(pipes.COUNT))
            except ProtocolError as exc:
                control.close_fds()
                control.send({"kind": "error", "message": f"bad job order: {exc}"[:2000]})
                continue
            try:
                life = self.execute(order, ends, control)
            except Exception as exc:
                life = Life(setup_error=f"sandbox failure: {type(exc).__name__}: {exc}"[:2000])
            control.send(life_to_json(life))
        if self.unreaped is not None:  # leave nothing behind for the client's cleanup
            reap(self.unreaped, REAP_S)


class StopListener:
    """The client's word during a job: "stop" (it has what it needs, or gave up), or its
    end of the socket closing.  Anything else from it is a bug there; the job stops too."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.requested = False

    def __call__(self) -> bool:
        return self.requested

    def on_readable(self) -> None:
        self.control.receive()
        while self.control.next_frame() is not None:
            self.requested = True
        self.requested |= self.control.closed


def main(argv: list[str], *, huge_pages: bool = True) -> None:
    """Serve requests until stdin closes.  ``huge_pages=False`` skips collapsing memory into
    huge pages, which takes most of a second and only pays off over many jobs."""
    control = Control(_claim_control(), CONTROL_HEADER_MAX)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)
    torch.set_num_threads(1)  # forking after a multi-threaded op would deadlock the child
    warm_up()
    if huge_pages:
        hugepages.collapse()
    try:
        server = Server(argv)
    except Exception as exc:
        control.send({"kind": "error", "message": str(exc)[:4000]})
        raise SystemExit(1) from exc
    gc.freeze()  # keep the garbage collector from touching (and copying) inherited pages
    try:
        control.send(server.ready())
        server.serve(control)
    except (BrokenPipeError, ConnectionResetError):  # the client went away: no one to tell
        pass
