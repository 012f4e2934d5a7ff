"""Hostile submissions that try to reach outside the job: network, secrets, files, signals.

Each test checks the side effect on the host (a listener that saw nothing, a
file that did not change, a secret that never showed up), not the verdict.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

from bot.sandbox.client import PROJECT_ROOT, Zygote
from tests.sandbox.support import ADD, SECRET_VALUE, output, request


def test_cannot_connect_to_a_loopback_listener(sandbox: Zygote) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        source = f"""
import ctypes, socket
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        socket.create_connection((host, {port}), timeout=1)
        print("connected")
    except OSError as exc:
        print("refused", exc)
libc = ctypes.CDLL(None, use_errno=True)
print("raw socket()", libc.syscall(41, 2, 1, 0), ctypes.get_errno())
{ADD}"""
        result = sandbox.run(request(source))
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            connection = None
    assert connection is None
    assert "connected" not in result.stdout


def test_environment_and_proc_environ_hold_no_secret(sandbox: Zygote) -> None:
    source = f"""
import glob, os
print(dict(os.environ))
paths = ["/proc/self/environ", f"/proc/{{os.getppid()}}/environ", "/proc/1/environ",
         "/proc/{sandbox.pid}/environ", "/proc/{os.getpid()}/environ",
         *glob.glob("/proc/*/environ")]
for path in paths:
    try:
        print(path, open(path, "rb").read())
    except OSError as exc:
        print(path, exc)
{ADD}"""
    result = sandbox.run(request(source))
    assert "'HOME': '/scratch'" in result.stdout  # the job did print its environment
    assert SECRET_VALUE not in output(result)


def test_database_file_outside_is_unreadable(sandbox: Zygote, tmp_path: Path) -> None:
    database = tmp_path / "bot.sqlite3"
    database.write_text("DB-SECRET-8d41 expected outputs")
    database.chmod(0o600)
    source = f"""
import os
for attempt in (lambda: open({str(database)!r}).read(), lambda: os.listdir({str(tmp_path)!r})):
    try:
        print(attempt())
    except OSError as exc:
        print("denied", exc)
{ADD}"""
    result = sandbox.run(request(source))
    assert "DB-SECRET-8d41" not in output(result)
    assert f"[{database.name!r}]" not in result.stdout  # no directory listing either


def test_writes_outside_scratch_do_not_reach_the_host(sandbox: Zygote, tmp_path: Path) -> None:
    owned = tmp_path / "owned.txt"
    owned.write_text("original")
    name = f"brrrbot-{uuid.uuid4().hex}"
    created = [Path("/tmp") / name, Path("/dev/shm") / name, Path(PROJECT_ROOT) / name]
    targets = [str(owned), *map(str, created)]
    source = f"""
for path in {targets!r}:
    try:
        with open(path, "w") as handle:
            handle.write("pwned")
        print("wrote", path)
    except OSError as exc:
        print("denied", path, exc)
{ADD}"""
    sandbox.run(request(source))
    assert owned.read_text() == "original"
    assert not any(path.exists() for path in created)


def test_setsid_daemon_does_not_outlive_the_job(sandbox: Zygote, tmp_path: Path) -> None:
    heartbeat = tmp_path / "heartbeat"
    source = f"""
import os, time
if os.fork() == 0:
    try:
        os.setsid()
    except OSError:
        pass
    if os.fork() == 0:
        for _ in range(1000):
            for path in ({str(heartbeat)!r}, "/scratch/heartbeat"):
                try:
                    open(path, "a").write("x")
                except OSError:
                    pass
            time.sleep(0.02)
    os._exit(0)
time.sleep(0.2)
{ADD}"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    # the sandbox fixture then scans /proc: no process of the job's uid may remain
    assert not heartbeat.exists()


def test_signals_cannot_reach_the_zygote_or_the_test(sandbox: Zygote) -> None:
    source = f"""
import os, signal
for target in (os.getppid(), 1, -1, {sandbox.pid}, {os.getpid()}):
    try:
        os.kill(target, signal.SIGKILL)
        print("sent", target)
    except OSError as exc:
        print("refused", target, exc)
{ADD}"""
    zygote_pid = sandbox.pid
    result = sandbox.run(request(source))
    assert result.status == "ok"  # kill(-1) spared the job itself, and nothing else was there
    assert sandbox.pid == zygote_pid and sandbox.alive
    os.kill(zygote_pid, 0)  # the zygote and this test process are still alive


def test_symlink_in_scratch_to_a_host_file_changes_nothing(sandbox: Zygote, tmp_path: Path) -> None:
    host_file = tmp_path / "config.toml"
    host_file.write_text("token = 'kept'")
    source = f"""
import os
for link in ("/scratch/result.txt", "/tmp/result.txt"):
    os.symlink({str(host_file)!r}, link)
    try:
        open(link, "w").write("overwritten")
    except OSError as exc:
        print("denied", exc)
{ADD}"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    assert host_file.read_text() == "token = 'kept'"
    assert not Path("/scratch").exists()


def test_host_proc_stays_hidden_after_umount_attempts(sandbox: Zygote) -> None:
    source = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("umount", libc.umount2(b"/proc", 2), ctypes.get_errno())
print("mount", libc.mount(b"proc", b"/tmp", b"proc", 0, None), ctypes.get_errno())
print(sorted(os.listdir("/proc"))[:20])
for pid in os.listdir("/proc"):
    if pid.isdigit():
        print(pid, open(f"/proc/{{pid}}/cmdline", "rb").read())
try:
    print(open("/proc/1/mem", "rb").read(16))
except OSError as exc:
    print("mem", exc)
{ADD}"""
    result = sandbox.run(request(source))
    assert result.status == "ok"
    assert "pytest" not in result.stdout
    pids = [line.split()[0] for line in result.stdout.splitlines() if line[:1].isdigit()]
    assert set(pids) <= {"1", "2"}  # only the init and the job exist in its PID namespace


def test_namespace_and_privilege_escapes_fail(sandbox: Zygote) -> None:
    source = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
attempts = {{
    "unshare-user": lambda: libc.unshare(0x10000000),
    "clone-newuser": lambda: libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0),
    "ptrace-init": lambda: libc.ptrace(16, 1, 0, 0),
    "setuid-0": lambda: libc.setuid(0),
    "chroot": lambda: libc.chroot(b"/tmp"),
}}
for name, attempt in attempts.items():
    print(name, attempt())
print("uids", *os.getresuid())
{ADD}"""
    result = sandbox.run(request(source))
    outcome = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert {outcome[name] for name in outcome if name != "uids"} == {"-1"}, outcome
    assert "0" not in outcome["uids"].split()
