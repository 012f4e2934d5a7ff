"""The bot and every worker make themselves non-dumpable at start: another process of their own
uid cannot read their environment, where the Discord token and database passwords are.

Security: the attack (a process of the same uid reading ``/proc/<pid>/environ``) is first shown
to work on an ordinary process of that uid, then run against the bot and a worker once they are
started, printing a marker just before it, and must fail with EACCES.  As root the processes
run as ``nobody`` (root may read anything); otherwise as this user.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import REPO

SECRET = "discord-token-7f3e9a-never-readable"
NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3.11"  # root's own Python may sit where nobody can reach it

ATTACK = """
import errno, sys
path = f"/proc/{sys.argv[1]}/environ"
print("ATTACK: read", path, "as uid", __import__("os").getuid(), flush=True)
try:
    with open(path, "rb") as environ:
        print("read", environ.read().decode(errors="replace"), flush=True)
except OSError as exc:
    print("refused", errno.errorcode[exc.errno], flush=True)
"""


@dataclass
class Unprivileged:
    """How to start a process as the unprivileged user, and its home (its working folder)."""

    python: str
    home: Path
    user: int | None

    def start(self, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
        ids = {} if self.user is None else {"user": self.user, "group": self.user}
        return subprocess.Popen(
            [self.python, *args],
            cwd=self.home,
            env={"PATH": "/usr/bin:/bin", "HOME": str(self.home), **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            extra_groups=[] if self.user is not None else None,
            **ids,  # type: ignore[arg-type]
        )

    def attack(self, pid: int) -> list[str]:
        done = subprocess.run(
            [self.python, "-c", ATTACK, str(pid)],
            capture_output=True,
            text=True,
            timeout=60,
            **({} if self.user is None else {"user": self.user, "group": self.user}),  # type: ignore[arg-type]
        )
        print(done.stdout, end="")
        return done.stdout.splitlines()


@pytest.fixture(scope="module")
def unprivileged() -> Iterator[Unprivileged]:
    home = Path(tempfile.mkdtemp(prefix="brrrbot-undumpable-"))
    try:
        if os.geteuid() != 0:
            yield Unprivileged(sys.executable, home, None)
            return
        if not os.access(SYSTEM_PYTHON, os.X_OK):
            pytest.skip(f"as root, needs {SYSTEM_PYTHON} to run processes as nobody")
        home.chmod(0o755)
        venv = home / "venv"
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = next(venv.glob("lib/python3*/site-packages"))
        import sqlalchemy  # this interpreter's packages, lent to the venv nobody runs

        (site / "brrrbot-packages.pth").write_text(f"{Path(sqlalchemy.__file__).parents[1]}\n")
        work = home / "work"
        work.mkdir()
        os.chown(work, NOBODY, NOBODY)
        yield Unprivileged(str(venv / "bin" / "python"), work, NOBODY)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _alive(process: subprocess.Popen[str]) -> bool:
    """Running, not a zombie: a zombie's /proc files are root's whatever it did."""
    if process.poll() is not None:
        return False
    try:
        stat = Path(f"/proc/{process.pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _has_memory(pid: int) -> bool:
    """Whether the process still has its memory: an exiting one drops it before it is a
    zombie, and its /proc files turn root's then too."""
    try:
        return bool(Path(f"/proc/{pid}/maps").read_text())
    except PermissionError:  # not ours to read: it has memory, and it is not dumpable
        return True
    except OSError:
        return False


def _until_root_owned(process: subprocess.Popen[str], timeout_s: float) -> None:
    """Until the kernel makes the process's /proc files root's, which it does exactly when a
    living process is not dumpable."""
    deadline = time.monotonic() + timeout_s
    while True:
        owner = os.stat(f"/proc/{process.pid}/environ").st_uid
        if owner == 0 and _alive(process) and _has_memory(process.pid):
            return
        if not _alive(process):
            process.wait()
            raise AssertionError(f"exited while still dumpable:\n{process.stderr.read()[-3000:]}")  # type: ignore[union-attr]
        assert time.monotonic() < deadline, f"still dumpable {timeout_s} s after its start"
        # the kernel sends no notice when a process changes its dumpability: polling /proc is
        # the only way to see it
        time.sleep(0.01)


@pytest.mark.parametrize(
    "command",
    [["run", "--no-workers"], ["worker", "--count", "1"]],
    ids=["bot", "worker"],
)
def test_no_process_of_the_same_uid_reads_the_environment(
    unprivileged: Unprivileged, command: list[str]
) -> None:
    env = {"PYTHONPATH": str(REPO), "DISCORD_TOKEN": SECRET, "HTTP_PORT": "0"}
    # the control: a process of the same uid, left dumpable, gives its environment away
    plain = unprivileged.start("-c", "import time; time.sleep(120)", env=env)
    try:
        lines = unprivileged.attack(plain.pid)
        assert lines[0].startswith("ATTACK: read") and lines[1].startswith("read ")
        assert SECRET in lines[1], "the attack finds a dumpable process's environment"
    finally:
        plain.kill()
        plain.wait()

    # a database that takes connections and never answers keeps both waiting for it (a bot
    # for the 5 s connect timeout, a worker until it is stopped), so each stays up
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        url = f"postgresql+asyncpg://brrrbot:password@127.0.0.1:{port}/brrrbot"
        process = unprivileged.start("-m", "bot", *command, env={**env, "DATABASE_URL": url})
        try:
            _until_root_owned(process, timeout_s=60)
            lines = unprivileged.attack(process.pid)
            assert _alive(process), "the attack met a process that had already exited"
        finally:
            process.kill()
            process.wait()
    assert lines == [lines[0], "refused EACCES"], lines
    assert lines[0].startswith("ATTACK: read")
