"""Wait for a file to be saved again: inotify on its directory, so that editors that save
atomically (write a temporary file, rename it over the old one) count as a save too.

Linux only, like the sandbox.  A burst of events (truncate, write, close, rename) is one
save: the wait ends once the file's directory has been quiet for ``DEBOUNCE_S``.
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import time
from pathlib import Path
from types import TracebackType

IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then the name, NUL-padded
DEBOUNCE_S = 0.02

_libc = ctypes.CDLL(None, use_errno=True)
_libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]


class FileWatch:
    """``wait()`` returns when ``path`` was written, created or renamed into place."""

    def __init__(self, path: Path) -> None:
        self.path = path.resolve()
        self._fd = _libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        directory = os.fsencode(self.path.parent)
        if _libc.inotify_add_watch(self._fd, directory, _MASK) < 0:
            errno = ctypes.get_errno()
            os.close(self._fd)
            raise OSError(errno, f"cannot watch {self.path.parent}: {os.strerror(errno)}")

    def __enter__(self) -> FileWatch:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the file is saved (True), or ``timeout_s`` passes (False)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ours = self._events(left)
            if ours is None:
                return False
            if ours:
                break
        while self._events(DEBOUNCE_S) is not None:  # the rest of the same save
            pass
        return True

    def _events(self, timeout_s: float | None) -> bool | None:
        """The next batch of events: whether one was about our file; None after a timeout."""
        ready, _, _ = select.select([self._fd], [], [], timeout_s)
        if not ready:
            return None
        data = os.read(self._fd, 64 * 1024)
        name = os.fsencode(self.path.name)
        offset, ours = 0, False
        while offset < len(data):
            _, _, _, length = _EVENT.unpack_from(data, offset)
            start = offset + _EVENT.size
            ours |= data[start : start + length].rstrip(b"\0") == name
            offset = start + length
        return ours
