"""Hostile submissions that try to reach outside the job: network, secrets, files, signals.

Each test checks that the job reached its attack (a marker it prints just
before), that the attack failed in the way the responsible layer makes it fail
(the errno the job saw), and the side effect on the host (a listener that saw
nothing, a file that did not change, a secret that never showed up).
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from pathlib import Path

from sandbox import syscalls
from sandbox.client import PROJECT_ROOT, Zygote
from sandbox.jail import JOB_ENV
from tests.sandbox.support import (
    ADD,
    ERRNO_NAME,
    SECRET_ENV,
    SECRET_VALUE,
    assert_job_left_nothing,
    output,
    reports,
    request,
)


def test_cannot_connect_to_a_loopback_listener(sandbox: Zygote) -> None:
    numbers = syscalls.table()
    assert numbers is not None
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        source = (
            ERRNO_NAME
            + f"""
import ctypes, json, socket
for host in ("127.0.0.1", "::1"):
    print("ATTEMPT connect", host, flush=True)
    try:
        socket.create_connection((host, {port}), timeout=1)
        print("connected", host, flush=True)
    except OSError as exc:
        print("refused", host, errno_name(exc), flush=True)
libc = ctypes.CDLL(None, use_errno=True)
print("ATTEMPT raw-socket", flush=True)
code = libc.syscall({numbers["socket"]}, socket.AF_INET, socket.SOCK_STREAM, 0)
print("refused raw-socket", _errno.errorcode.get(ctypes.get_errno()) if code < 0 else "succeeded")
with open("/proc/net/dev") as handle:
    print("interfaces", json.dumps(sorted(line.split(":")[0].strip() for line in list(handle)[2:])))
ports = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    with open(table) as handle:
        for line in list(handle)[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":  # TCP_LISTEN
                ports.add(int(local.rsplit(":", 1)[1], 16))
print("listening", json.dumps(sorted(ports)))
{ADD}"""
        )
        result = sandbox.run(request(source))
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            connection = None
    assert connection is None  # the host's listener saw nothing
    assert reports(result.stdout, "ATTEMPT connect") == ["127.0.0.1", "::1"], result
    # EPERM from socket() itself: the seccomp filter, before any routing happens
    assert reports(result.stdout, "refused") == ["127.0.0.1 EPERM", "::1 EPERM", "raw-socket EPERM"]
    assert reports(result.stdout, "connected") == []
    # the network namespace: only its own (down) loopback, and none of the host's listeners
    assert reports(result.stdout, "interfaces") == ['["lo"]']
    assert reports(result.stdout, "listening") == ["[]"]


def test_environment_and_proc_environ_hold_no_secret(sandbox: Zygote) -> None:
    zygote_environ, test_environ = f"/proc/{sandbox.pid}/environ", f"/proc/{os.getpid()}/environ"
    source = (
        ERRNO_NAME
        + f"""
import glob, json, os
print("ENV", json.dumps(dict(os.environ)), flush=True)
paths = ["/proc/self/environ", f"/proc/{{os.getppid()}}/environ", "/proc/1/environ",
         {zygote_environ!r}, {test_environ!r}, *glob.glob("/proc/*/environ")]
for path in paths:
    print("ATTEMPT", path, flush=True)
    try:
        print("read", path, open(path, "rb").read(), flush=True)
    except OSError as exc:
        print("denied", path, errno_name(exc), flush=True)
{ADD}"""
    )
    result = sandbox.run(request(source))
    (environment,) = reports(result.stdout, "ENV")
    assert json.loads(environment) == JOB_ENV  # the job's whole environment, nothing inherited
    attempted = reports(result.stdout, "ATTEMPT")
    assert {"/proc/self/environ", "/proc/1/environ", zygote_environ, test_environ} <= set(attempted)
    denied = reports(result.stdout, "denied")
    assert len(reports(result.stdout, "read")) + len(denied) == len(attempted)  # all were tried
    assert SECRET_VALUE not in output(result) and SECRET_ENV not in output(result)
    # ENOENT: the zygote and this test (which holds the secret) are outside the PID namespace
    # and its /proc
    assert {f"{zygote_environ} ENOENT", f"{test_environ} ENOENT"} <= set(denied)


def test_database_file_outside_is_unreadable(sandbox: Zygote, tmp_path: Path) -> None:
    database = tmp_path / "bot.sqlite3"
    database.write_text("DB-SECRET-8d41 expected outputs")
    database.chmod(0o600)
    source = (
        ERRNO_NAME
        + f"""
import os
for name, attempt in (("read", lambda: open({str(database)!r}).read()),
                      ("listdir", lambda: os.listdir({str(tmp_path)!r}))):
    print("ATTEMPT", name, flush=True)
    try:
        print("got", name, attempt(), flush=True)
    except OSError as exc:
        print("denied", name, errno_name(exc), flush=True)
{ADD}"""
    )
    result = sandbox.run(request(source))
    assert reports(result.stdout, "ATTEMPT") == ["read", "listdir"], result
    assert "DB-SECRET-8d41" not in output(result)
    assert reports(result.stdout, "got") == []
    # ENOENT, not EACCES: the directory is not in the job's root at all (the mount
    # namespace), so the file's mode is not what stops the job
    assert reports(result.stdout, "denied") == ["read ENOENT", "listdir ENOENT"]


def test_writes_outside_scratch_do_not_reach_the_host(sandbox: Zygote, tmp_path: Path) -> None:
    owned = tmp_path / "owned.txt"
    owned.write_text("original")
    name = f"brrrbot-{uuid.uuid4().hex}"
    outside = [Path("/") / name, Path(PROJECT_ROOT) / name]  # read-only or absent in the job
    private = [Path("/tmp") / name, Path("/dev/shm") / name]  # the job's own tmpfs
    targets = [str(owned), *map(str, outside + private)]
    source = (
        ERRNO_NAME
        + f"""
for path in {targets!r}:
    print("ATTEMPT", path, flush=True)
    try:
        with open(path, "w") as handle:
            handle.write("pwned")
        print("wrote", path, flush=True)
    except OSError as exc:
        print("denied", path, errno_name(exc), flush=True)
{ADD}"""
    )
    try:
        result = sandbox.run(request(source))
        assert reports(result.stdout, "ATTEMPT") == targets, result
        assert owned.read_text() == "original"
        assert [path for path in outside + private if path.exists()] == []
        # the writes to /tmp and /dev/shm landed, in the job's private tmpfs
        assert reports(result.stdout, "wrote") == list(map(str, private))
        denied = dict(line.rsplit(" ", 1) for line in reports(result.stdout, "denied"))
        assert denied[str(owned)] == "ENOENT"  # the host's directory is not in the job's root
        assert denied[str(outside[0])] == "EROFS"  # the job's root is read-only
        # The checkout: only its venv is bound into the job, read-only. What the job meets at
        # the checkout's path depends on where it lives: a read-only bind (EROFS), nothing
        # (ENOENT), or, under /tmp, a root-owned directory on the job's tmpfs (EACCES).
        assert denied[str(outside[1])] in ("EROFS", "ENOENT", "EACCES")
    finally:
        for path in outside + private:
            path.unlink(missing_ok=True)


def test_setsid_daemon_does_not_outlive_the_job(sandbox: Zygote) -> None:
    source = (
        ERRNO_NAME
        + """
import os, time
ready, announce = os.pipe()
print("ATTEMPT daemon", flush=True)
middle = os.fork()
if middle == 0:
    try:
        os.setsid()
        print("setsid ok", flush=True)
    except OSError as exc:
        print("setsid refused", errno_name(exc), flush=True)
    if os.fork() == 0:
        os.write(announce, str(os.getpid()).encode())
        while True:
            time.sleep(0.02)
    os._exit(0)
os.waitpid(middle, 0)
os.close(announce)
daemon = int(os.read(ready, 32))
os.kill(daemon, 0)  # raises unless the daemon is alive now, orphaned, as the job returns
print("daemon alive", daemon, flush=True)
"""
        + ADD
    )
    result = sandbox.run(request(source))
    assert result.status == "ok", result
    assert reports(result.stdout, "ATTEMPT") == ["daemon"]
    assert len(reports(result.stdout, "daemon alive")) == 1
    assert reports(result.stdout, "setsid") in (["ok"], ["refused EPERM"])
    assert_job_left_nothing(sandbox)  # no process of the job's uid survived it


def test_signals_cannot_reach_the_zygote_or_the_test(sandbox: Zygote) -> None:
    zygote_pid = sandbox.pid
    targets = {"parent": "os.getppid()", "init": "1", "everyone": "-1"}
    targets |= {"zygote": str(zygote_pid), "test": str(os.getpid())}
    listing = ", ".join(f"({name!r}, {pid})" for name, pid in targets.items())
    source = (
        ERRNO_NAME
        + f"""
import os, signal
for name, target in ({listing}):
    print("ATTEMPT", name, flush=True)
    try:
        os.kill(target, signal.SIGKILL)
        print("sent", name, flush=True)
    except OSError as exc:
        print("refused", name, errno_name(exc), flush=True)
{ADD}"""
    )
    result = sandbox.run(request(source))
    assert reports(result.stdout, "ATTEMPT") == list(targets), result
    # ESRCH: outside the job's PID namespace the zygote and this test do not exist, and
    # kill(-1) found nothing to signal but the job's own init (which it may not)
    refused = set(reports(result.stdout, "refused"))
    assert {"zygote ESRCH", "test ESRCH", "everyone ESRCH"} <= refused
    assert result.status == "ok"  # the job and its init survived their own attempts
    assert sandbox.pid == zygote_pid and sandbox.alive
    os.kill(zygote_pid, 0)  # the zygote is still alive


def test_symlink_in_scratch_to_a_host_file_changes_nothing(sandbox: Zygote, tmp_path: Path) -> None:
    host_file = tmp_path / "config.toml"
    host_file.write_text("token = 'kept'")
    links = ["/scratch/result.txt", "/tmp/result.txt"]
    source = (
        ERRNO_NAME
        + f"""
import os
for link in {links!r}:
    os.symlink({str(host_file)!r}, link)
    print("ATTEMPT", link, "->", os.readlink(link), flush=True)
    try:
        with open(link, "w") as handle:
            handle.write("overwritten")
        print("wrote", link, flush=True)
    except OSError as exc:
        print("denied", link, errno_name(exc), flush=True)
{ADD}"""
    )
    result = sandbox.run(request(source))
    assert result.status == "ok", result
    assert reports(result.stdout, "ATTEMPT") == [f"{link} -> {host_file}" for link in links]
    # the links were planted, but what they point at does not exist in the job's root
    assert reports(result.stdout, "denied") == [f"{link} ENOENT" for link in links]
    assert host_file.read_text() == "token = 'kept'"


def test_host_proc_stays_hidden_after_umount_attempts(sandbox: Zygote) -> None:
    source = (
        ERRNO_NAME
        + """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def outcome(code):
    return f"{code} {_errno.errorcode.get(ctypes.get_errno())}" if code < 0 else str(code)
print("ATTEMPT mounts", flush=True)
print("umount", outcome(libc.umount2(b"/proc", 2)), flush=True)
print("mount", outcome(libc.mount(b"proc", b"/tmp", b"proc", 0, None)), flush=True)
for pid in os.listdir("/proc"):
    if pid.isdigit():
        print("pid", pid, open(f"/proc/{pid}/cmdline", "rb").read(), flush=True)
try:
    print("mem", open("/proc/1/mem", "rb").read(16))
except OSError as exc:
    print("mem", errno_name(exc))
"""
        + ADD
    )
    result = sandbox.run(request(source))
    assert result.status == "ok", result
    assert reports(result.stdout, "ATTEMPT") == ["mounts"]
    assert reports(result.stdout, "umount") == ["-1 EPERM"]
    assert reports(result.stdout, "mount") == ["-1 EPERM"]
    seen = dict(line.split(" ", 1) for line in reports(result.stdout, "pid"))
    assert set(seen) == {"1", "2"}  # only the init and the job exist in its PID namespace
    assert all("sandbox.zygote" in cmdline for cmdline in seen.values())  # both were read
    assert "pytest" not in result.stdout
    assert reports(result.stdout, "mem")[0] in ("EACCES", "EPERM")


def test_namespace_and_privilege_escapes_fail(sandbox: Zygote) -> None:
    numbers = syscalls.table()
    assert numbers is not None
    names = ["unshare-user", "clone-newuser", "ptrace-init", "setuid-0", "chroot"]
    source = f"""
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
attempts = {{
    "unshare-user": lambda: libc.unshare(0x10000000),
    "clone-newuser": lambda: libc.syscall({numbers["clone"]}, 0x10000000 | 17, 0, 0, 0, 0),
    "ptrace-init": lambda: libc.ptrace(16, 1, 0, 0),
    "setuid-0": lambda: libc.setuid(0),
    "chroot": lambda: libc.chroot(b"/tmp"),
}}
me = os.getpid()
for name, attempt in attempts.items():
    print("ATTEMPT", name, flush=True)
    code = attempt()
    if os.getpid() != me:  # the child of a clone that went through: only the job reports
        os._exit(0)
    print("outcome", name, code, errno.errorcode.get(ctypes.get_errno()) if code < 0 else "")
print("uids", *os.getresuid())
{ADD}"""
    result = sandbox.run(request(source))
    assert reports(result.stdout, "ATTEMPT") == names, result
    outcome = dict(line.split(" ", 1) for line in reports(result.stdout, "outcome"))
    assert outcome == dict.fromkeys(names, "-1 EPERM")
    (uids,) = reports(result.stdout, "uids")
    assert "0" not in uids.split()
