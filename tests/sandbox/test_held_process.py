"""Holding a speed trial's job from outside: every thread stopped before its memory is touched,
and what is read or written is exactly the job's memory."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from collections.abc import Iterator

import pytest

from sandbox.held_process import HeldProcess, HeldProcessError, only_child

MARK = b"held-process-" + os.urandom(8).hex().encode()


def _states(pid: int) -> set[str]:
    states = set()
    for thread in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{thread}/stat", "rb") as handle:
            stat = handle.read()
        states.add(chr(stat[stat.rindex(b")") + 2]))
    return states


@pytest.fixture
def child() -> Iterator[tuple[int, int, int, int]]:
    """A child with a buffer holding MARK and a spinning thread: (pid, address, report fd,
    command fd).  On a byte on its command pipe it writes its buffer back."""
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        buffer = ctypes.create_string_buffer(MARK, len(MARK))

        def spin() -> None:
            while True:
                pass

        threading.Thread(target=spin, daemon=True).start()
        os.write(from_child_w, ctypes.addressof(buffer).to_bytes(8, "little"))
        while os.read(to_child_r, 1):
            os.write(from_child_w, buffer.raw)
        os._exit(0)
    address = int.from_bytes(os.read(from_child_r, 8), "little")
    try:
        yield pid, address, from_child_r, to_child_w
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
            os.close(fd)


def test_memory_is_touched_only_while_every_thread_is_stopped(
    child: tuple[int, int, int, int],
) -> None:
    pid, address, _, _ = child
    held = HeldProcess(pid)
    local = ctypes.create_string_buffer(len(MARK))
    with pytest.raises(HeldProcessError, match="only while it is stopped"):
        held.read(address, ctypes.addressof(local), len(MARK))
    assert "R" in _states(pid)  # the spinning thread runs
    held.stop()
    assert _states(pid) <= {"T", "t"}  # every thread, the spinner too
    held.read(address, ctypes.addressof(local), len(MARK))
    assert local.raw == MARK
    held.resume()
    with pytest.raises(HeldProcessError, match="only while it is stopped"):
        held.write(address, ctypes.addressof(local), len(MARK))
    held.close()


def test_what_is_written_into_a_stopped_job_is_what_it_then_reads(
    child: tuple[int, int, int, int],
) -> None:
    pid, address, report, command = child
    held = HeldProcess(pid)
    fresh = os.urandom(len(MARK))
    source = ctypes.create_string_buffer(fresh, len(fresh))
    held.stop()
    held.write(address, ctypes.addressof(source), len(fresh))
    held.resume()
    os.write(command, b"?")
    assert os.read(report, len(MARK)) == fresh
    held.close()


def test_a_job_is_found_through_the_kernel_and_must_be_an_only_child() -> None:
    """In a process of its own: one living child is found, a zombie does not count."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        answers = []
        zombie = os.fork()
        if zombie == 0:
            os._exit(0)
        os.waitid(os.P_PID, zombie, os.WEXITED | os.WNOWAIT)  # exited, not reaped
        try:
            only_child(os.getpid())
        except HeldProcessError as exc:
            answers.append(str(exc))
        living = os.fork()
        if living == 0:
            os.read(read_end, 1)  # blocks: never written
            os._exit(0)
        answers.append(str(only_child(os.getpid()) == living))
        os.kill(living, signal.SIGKILL)
        os.write(write_end, "|".join(answers).encode())
        os._exit(0)
    os.close(write_end)
    answer = os.read(read_end, 1000).decode()
    os.waitpid(pid, 0)
    os.close(read_end)
    assert answer == f"process {pid} has 0 living children, not one|True", answer
