"""One job from the zygote's side: cgroup limits around a launched, supervised job."""

from __future__ import annotations

from bot.sandbox import linux
from bot.sandbox.api import Limits
from bot.sandbox.jail import Body, Jail, launch
from bot.sandbox.supervise import Observation, Supervisor
from bot.sandbox.transcript import Transcript


def _supervised(
    jail: Jail, limits: Limits, device: str, body: Body, transcript: Transcript
) -> Observation:
    launched = launch(jail, limits, device, body)
    group_kill = not jail.mode.flags & linux.CLONE_NEWPID
    return Supervisor(launched, transcript, limits, jail.cgroup, group_kill).watch()


def run_job(
    jail: Jail, limits: Limits, device: str, body: Body, transcript: Transcript
) -> Observation:
    """Run ``body`` confined and return what was observed.

    Every process of the job is dead or has SIGKILL pending when this returns.
    """
    cgroup = jail.cgroup
    if cgroup is None:
        return _supervised(jail, limits, device, body, transcript)
    try:
        cgroup.arm(limits)
    except OSError as exc:
        return Observation(setup_error=f"cgroup: {exc}")
    try:
        obs = _supervised(jail, limits, device, body, transcript)
    finally:
        oom, pids = cgroup.disarm()
    obs.oom, obs.pids_exhausted = oom, pids
    return obs
