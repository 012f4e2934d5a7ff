"""Which parts of the zygote's memory are offered to transparent huge pages."""

from __future__ import annotations

from sandbox.hugepages import HUGE, anonymous_ranges

MAPS = """\
00400000-00421000 r-xp 00000000 fe:00 123 /usr/bin/python3.11
00621000-00a00000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000600000 rw-p 00000000 00:00 0
7f0000600000-7f0000700000 rw-p 00000000 00:00 0
7f0000800000-7f0000c00000 rw-s 00000000 00:01 9 /dev/shm/shared
7f0001000000-7f0001400000 rw-p 00001000 fe:00 77 /usr/lib/libtorch_cpu.so
7ffc00000000-7ffc00400000 rw-p 00000000 00:00 0 [stack]
"""


def test_only_private_anonymous_memory_in_whole_huge_pages() -> None:
    assert anonymous_ranges(MAPS) == [
        (0x00800000, HUGE),  # the 2 MiB-aligned part of the heap
        (0x7F0000000000, 3 * HUGE),
    ]
