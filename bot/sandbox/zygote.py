"""The zygote: imports torch once, then forks one confined job per request.

The trusted client starts it with exec and an empty environment (never by
fork), so it holds no token, database handle or expected output that a job
could inherit.  It speaks frames on its stdin and stdout, which it first moves
off descriptors 0 and 1 so that a stray print cannot corrupt the protocol, and
it exits when its stdin closes.

Before serving it runs a probe job through each sandbox mode in turn (full
namespaces as root, user namespaces otherwise, the degraded "bare" mode last)
and keeps the first that works; the probe's observations go to the client in
the ``ready`` frame for the isolation report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from typing import Any, NoReturn

import torch

import bot
from bot.sandbox import cgroups, framing, hugepages, linux, probe, rootfs, seccomp
from bot.sandbox.api import Limits, RawTensor, SandboxRequest, SandboxResult
from bot.sandbox.codec import decode_request, encode_result
from bot.sandbox.confine import Identity
from bot.sandbox.cores import job_core
from bot.sandbox.framing import FrameReader, ProtocolError
from bot.sandbox.jail import FEED_FD, MODES, Body, Jail, Mode, cap_last
from bot.sandbox.job import run_job
from bot.sandbox.runner import Runner, describe, from_torch, to_torch
from bot.sandbox.supervise import REAP_S, Observation, reap, reap_strays
from bot.sandbox.tracer import OpRecorder
from bot.sandbox.transcript import Transcript
from bot.sandbox.turns import TurnSpec, decode_turn, feed_reader, serve_turn
from bot.sandbox.verdict import decide, skipped

JOB_ID_BASE = 1_500_000_000  # job uid/gid = base + zygote pid: unique per live zygote
REQUEST_HEADER_MAX = 64 << 20
REQUEST_PAYLOAD_MAX = 1 << 36
PROBE_LIMITS = Limits(wall_s=30.0, cpu_s=30.0)
ZYGOTE_OOM_SCORE = -900  # a job raises its own to 1000 (confine.JOB_OOM_SCORE)


def _claim_stdio() -> tuple[int, int]:
    """Keep the protocol pipes on private descriptors; 0 becomes /dev/null, 1 joins 2."""
    requests, replies = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return requests, replies


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
        project = os.path.dirname(os.path.dirname(os.path.abspath(bot.__file__)))
        self.plan = rootfs.make_plan(rootfs.python_paths(project), self.cuda)
        self.filter = seccomp.build()
        self.cap_last = cap_last()
        self.hidden = [os.path.dirname(os.path.abspath(bot.__file__))]
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
            transcript = Transcript(None, PROBE_LIMITS)
            obs = self._run(jail, PROBE_LIMITS, "cpu", body, transcript)
            if transcript.facts is not None:
                return jail, host_uid, transcript.facts
            self.notes.append(f"{name}: {obs.setup_error or 'the probe job failed'}")
        raise RuntimeError("no sandbox mode works here: " + "; ".join(self.notes))

    def _run(
        self, jail: Jail, limits: Limits, device: str, body: Body, transcript: Transcript
    ) -> Observation:
        """One job, after the previous one's processes are fully gone."""
        if self.unreaped is not None:
            reap(self.unreaped, REAP_S)
        reap_strays()
        obs = run_job(jail, limits, device, body, transcript)
        self.unreaped = obs.unreaped
        return obs

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

    def execute(self, request: SandboxRequest) -> SandboxResult:
        device = "cuda" if request.device == "cuda" and self.cuda else "cpu"
        transcript = Transcript(request, request.limits)

        def body(fd: int) -> NoReturn:
            Runner(request, device, fd).run()

        obs = self._run(self.jail, request.limits, device, body, transcript)
        return decide(request, device, obs, transcript)

    def turn(self, spec: TurnSpec, requests: int, reader: FrameReader, replies: int) -> None:
        """One speed-trial turn (``bot.sandbox.turns``), after the previous job is gone."""
        device = "cuda" if spec.device == "cuda" and self.cuda else "cpu"
        request = SandboxRequest(spec.source, spec.filename, (), spec.limits, device)

        def body(fd: int) -> NoReturn:
            Runner(request, device, fd).serve_feed(spec.function, FEED_FD, feed_reader())

        if self.unreaped is not None:
            reap(self.unreaped, REAP_S)
        reap_strays()
        spec = dataclasses.replace(spec, device=device)
        self.unreaped = serve_turn(self.jail, spec, self.core, body, requests, reader, replies)

    def serve(self, requests: int, replies: int) -> None:
        reader = FrameReader(REQUEST_HEADER_MAX, REQUEST_PAYLOAD_MAX)
        while (frame := framing.read_frame(requests, reader)) is not None:
            if frame[0].get("kind") == "turn":
                try:
                    spec = decode_turn(frame[0])
                except ProtocolError as exc:
                    framing.write_frame(replies, {"kind": "error", "message": f"bad turn: {exc}"})
                    continue
                self.turn(spec, requests, reader, replies)
                continue
            try:
                request = decode_request(*frame)
            except ProtocolError as exc:
                framing.write_frame(replies, {"kind": "error", "message": f"bad request: {exc}"})
                continue
            try:
                result = self.execute(request)
            except Exception as exc:
                message = f"sandbox failure: {type(exc).__name__}: {exc}"[:2000]
                result = SandboxResult("internal_error", message, skipped(request.calls, ""))
            framing.write_frame(replies, *encode_result(result))
        if self.unreaped is not None:  # leave nothing behind for the client's cleanup
            reap(self.unreaped, REAP_S)


def main(argv: list[str], *, huge_pages: bool = True) -> None:
    """Serve requests until stdin closes.  ``huge_pages=False`` skips collapsing memory into
    huge pages, which takes most of a second and only pays off over many jobs."""
    requests, replies = _claim_stdio()
    linux.prctl(linux.PR_SET_DUMPABLE, 0)
    torch.set_num_threads(1)  # forking after a multi-threaded op would deadlock the child
    warm_up()
    if huge_pages:
        hugepages.collapse()
    try:
        server = Server(argv)
    except Exception as exc:
        framing.write_frame(replies, {"kind": "error", "message": str(exc)[:4000]})
        raise SystemExit(1) from exc
    gc.freeze()  # keep the garbage collector from touching (and copying) inherited pages
    try:
        framing.write_frame(replies, server.ready())
        server.serve(requests, replies)
    except BrokenPipeError:  # the client went away; nothing is left to report to
        pass
