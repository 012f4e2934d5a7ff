"""One job from the zygote's side: cgroup limits around a launched, supervised job."""

from __future__ import annotations

from collections.abc import Callable

from sandbox import linux
from sandbox.api import Limits
from sandbox.jail import Body, Jail, launch
from sandbox.observation import Life
from sandbox.pipes import JobEnds
from sandbox.poller import Poller
from sandbox.supervise import Supervisor


def run_job(
    jail: Jail,
    limits: Limits,
    device: str,
    body: Body,
    ends: JobEnds,
    core: int | None,
    poller: Poller,
    settled: Callable[[], bool],
) -> tuple[Life, int | None]:
    """Run ``body`` confined on the data pipes ``ends`` until it ends, runs out of time or
    ``settled()`` (its watcher has all it needs) holds, serving ``poller`` meanwhile.

    Every process of the job is dead or has SIGKILL pending when this returns, with the
    job's life and the keeper still to reap (None when none is).
    """
    cgroup = jail.cgroup
    if cgroup is not None:
        try:
            cgroup.arm(limits)
        except OSError as exc:
            ends.close()
            return Life(setup_error=f"cgroup: {exc}"), None
    try:
        launched = launch(jail, limits, device, body, ends, core)
        group_kill = not jail.mode.flags & linux.CLONE_NEWPID
        supervisor = Supervisor(launched, limits, cgroup, group_kill, poller)
        try:
            supervisor.pump_until(settled)
        except BaseException:
            supervisor.finish(False)  # the job dies with whatever broke here
            raise
        life, unreaped = supervisor.finish(settled())
    finally:
        if cgroup is not None:
            oom, pids = cgroup.disarm()
    if cgroup is not None:
        life.oom, life.pids_exhausted = oom, pids
    return life, unreaped
