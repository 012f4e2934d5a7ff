"""Start ``brrrbot grade`` with an environment that holds no secret, until its sandbox forks.

``brrrbot grade`` forks its sandbox from the CLI process to save a torch import
(``bot.worker.local``), and a fork takes the whole memory of the process along: its
environment too, both the strings the kernel put on its stack and Python's copies of them,
which no ``os.environ.clear()`` erases.  So a ``grade`` started with any variable beyond a
short list of plain ones (paths, locale, terminal, and the thread and library settings torch
reads as it loads) starts itself again at once with only those; the others wait unread in a
pipe, which the sandbox closes when it forks, until ``restore_environment`` puts them back.
A token, a database password or the shell's own secrets (an SSH agent, a cloud key) never
enter the process the sandbox comes from, whatever they are called.  The restart costs one
interpreter start (tens of milliseconds) against the ~1.8 s torch import the fork saves.

This module is imported before anything else: it imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys

#: the restarted process's descriptor of the pipe holding the other variables
HELD = "BRRRBOT_HELD_ENVIRONMENT"
PLAIN_NAMES = frozenset(
    {
        "PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "SHLVL", "_", "HOSTNAME",
        "TERM", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "CLICOLOR",
        "LANG", "LANGUAGE", "TZ", "TMPDIR", "TMP", "TEMP", "VIRTUAL_ENV", "CONDA_PREFIX", HELD,
    }
)  # fmt: skip
PLAIN_PREFIXES = (
    "LC_", "PYTHON", "OMP_", "MKL_", "KMP_", "GOMP_", "OPENBLAS_", "TORCH", "PYTORCH_",
    "CUDA_", "NVIDIA_", "LD_", "XDG_", "TERM_", "FAKETIME",
)  # fmt: skip
#: a name with one of these in it is held back, whatever its prefix
SECRET_WORDS = ("TOKEN", "SECRET", "PASS", "KEY", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")
F_SETPIPE_SZ = 1031
PIPE_MAX = 1 << 20  # what an unprivileged process may make a pipe hold


def is_plain(name: str) -> bool:
    upper = name.upper()
    if any(word in upper for word in SECRET_WORDS):
        return False
    return upper in PLAIN_NAMES or upper.startswith(PLAIN_PREFIXES)


def held_names(environ: os._Environ[str] | dict[str, str] = os.environ) -> list[str]:
    return sorted(name for name in environ if not is_plain(name))


def is_clean() -> bool:
    """Whether this process's environment holds only plain variables."""
    return not held_names()


def restart_clean() -> None:
    """Execute this command again with only the plain variables, the rest in a pipe.

    Returns (changing nothing) when there is nothing to hold back, or when the rest does not
    fit in a pipe; then ``is_clean()`` stays false and the sandbox is exec'd instead.
    """
    names = {os.fsencode(name) for name in held_names()}
    if not names or not sys.executable or HELD in os.environ:  # never a second restart
        return
    held = b"".join(name + b"=" + os.environb[name] + b"\0" for name in sorted(names))
    if len(held) > PIPE_MAX:
        return
    read, write = os.pipe()
    try:
        if len(held) > 1 << 16:
            fcntl.fcntl(write, F_SETPIPE_SZ, len(held))
        os.set_blocking(write, False)
        written = os.write(write, held)
    except OSError:
        written = 0
    os.close(write)
    if written != len(held):
        os.close(read)
        return
    os.set_inheritable(read, True)
    environment = {k: v for k, v in os.environb.items() if k not in names}
    environment[os.fsencode(HELD)] = str(read).encode()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, environment)


def restore_environment() -> None:
    """Put back what ``restart_clean`` held back (once the sandbox is forked)."""
    value = os.environ.pop(HELD, None)
    if value is None or not value.isdigit():
        return
    fd, chunks = int(value), []
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
    with contextlib.suppress(OSError):
        os.close(fd)
    for entry in b"".join(chunks).split(b"\0"):
        name, equals, content = entry.partition(b"=")
        if name and equals:
            os.environb[name] = content
