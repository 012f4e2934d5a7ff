"""The isolation report: which layers a job really gets, judged from the probe job.

Each layer is decided from what the probe observed inside a real job (its
namespaces compared with the zygote's, /proc/self/status, its mounts, its
rlimits, a socket attempt), not from what the code meant to set up.  The
required layers are the minimum a worker should insist on.
"""

from __future__ import annotations

from typing import Any

from sandbox.api import IsolationLayer
from sandbox.rootfs import WRITABLE

_UNLIMITED = -1
_LIMITED = ("CPU", "FSIZE", "NOFILE", "NPROC")


def _layer(name: str, active: bool, detail: str, required: bool = False) -> IsolationLayer:
    return IsolationLayer(name=name, active=bool(active), required=required, detail=detail)


def build_layers(ready: dict[str, Any]) -> list[IsolationLayer]:
    """Layers from the zygote's ``ready`` frame (its own facts plus the probe's)."""
    facts: dict[str, Any] = ready["probe"]
    zygote_ns, job_ns = ready["zygote_namespaces"], facts["namespaces"]

    def separate(name: str) -> bool:
        return job_ns.get(name) != zygote_ns.get(name)

    status, writes, limits = facts["status"], facts["writes"], facts["rlimits"]
    mounts = facts["mounts"]
    seccomp_on = status.get("Seccomp") == "2"
    pid_ns = separate("pid") and facts["pid"] == 2
    writable = sorted({m[0] for m in mounts if m[2] == "rw"} - {"/proc"})
    leaked = [p for p, seen in facts["visible"].items() if seen]
    written = [p for p in writes if p not in WRITABLE and p != facts["cwd"] and writes[p] == "ok"]
    read_only = separate("mnt") and set(writable) <= set(WRITABLE) and not written and not leaked
    tmpfs = all([p, "tmpfs", "rw"] in mounts and writes.get(p) == "ok" for p in WRITABLE)
    limited = [n for n in _LIMITED if limits[n][0] != _UNLIMITED]
    no_new_privs = status.get("NoNewPrivs") == "1"
    bounded = int(status.get("CapBnd", "1"), 16) == 0 or no_new_privs  # NNP: exec adds none
    caps = int(status.get("CapEff", "1"), 16) == 0 and bounded
    versions, notes = ready["cgroup_versions"], ready["cgroups"]
    kill_detail = (
        "killing the PID namespace's init ends every process"
        if pid_ns
        else "process group kill; setsid and setpgid denied by seccomp"
    )
    mode = ready["mode"] + "".join(f" ({note})" for note in ready["mode_notes"])
    other_uid = ready["job_uid"] != ready["zygote_uid"]
    if other_uid:
        reach = f"job runs as uid {ready['job_uid']}, the worker as uid {ready['zygote_uid']}"
    elif pid_ns and read_only:
        reach = "the PID and mount namespaces hide the worker's processes and files"
    else:
        reach = (
            "same uid as the worker and no PID or mount namespace: a job could read the "
            "worker's environment and write its files"
        )
    return [
        _layer(
            "separate process (exec)",
            True,
            f"zygote pid {ready['pid']}, empty environment, mode {mode}, "
            + ("CUDA available" if ready["cuda"] else "CPU only"),
            required=True,
        ),
        _layer(
            "no network",
            separate("net") or facts["socket"] != "ok",
            f"socket(AF_INET) -> {facts['socket']}",
            required=True,
        ),
        _layer(
            "network namespace",
            separate("net"),
            "its own, loopback only" if separate("net") else "shares the host's network",
        ),
        _layer("PID namespace", pid_ns, f"job is pid {facts['pid']}"),
        _layer(
            "mount namespace, read-only root",
            read_only,
            f"writable: {', '.join(writable) or 'none'}; host paths hidden: {not leaked}",
        ),
        _layer("tmpfs /tmp, /dev/shm, scratch", tmpfs, f"scratch {facts['cwd']}"),
        _layer("IPC and UTS namespaces", separate("ipc") and separate("uts"), ""),
        _layer(
            "worker out of the job's reach",
            other_uid or (pid_ns and read_only),
            reach,
            required=True,
        ),
        _layer(
            "resource limits (rlimits)",
            len(limited) == len(_LIMITED) and limits["CORE"][0] == 0,
            "limited: " + ", ".join(limited + (["AS"] if limits["AS"][0] != _UNLIMITED else [])),
            required=True,
        ),
        _layer("memory cgroup", versions.get("memory") is not None, notes.get("memory", "")),
        _layer("pids cgroup", versions.get("pids") is not None, notes.get("pids", "")),
        _layer("seccomp filter", seccomp_on, f"Seccomp: {status.get('Seccomp', '?')}"),
        _layer("unprivileged uid", ready["job_uid"] != 0, f"host uid {ready['job_uid']}"),
        _layer("no_new_privs", no_new_privs, ""),
        _layer(
            "capabilities dropped",
            caps,
            f"CapEff {status.get('CapEff', '?')}, CapBnd {status.get('CapBnd', '?')}",
        ),
        _layer(
            "every process killed at job end",
            pid_ns or seccomp_on,
            kill_detail,
            required=True,
        ),
    ]


def minimum_ok(layers: list[IsolationLayer]) -> bool:
    return all(layer.active for layer in layers if layer.required)


def format_report(layers: list[IsolationLayer]) -> str:
    """A plain-text table for ``--check``, ending with the minimum's verdict."""
    width = max(len(layer.name) for layer in layers)
    rows = [f"{'layer':<{width}}  active  required  detail"]
    for layer in layers:
        active = "yes" if layer.active else "NO"
        required = "yes" if layer.required else ""
        rows.append(f"{layer.name:<{width}}  {active:<6}  {required:<8}  {layer.detail}")
    verdict = "OK" if minimum_ok(layers) else "NOT MET"
    rows.append(f"minimum isolation (required layers): {verdict}")
    return "\n".join(rows)
