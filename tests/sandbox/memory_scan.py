"""A submission that searches everything it can read for what it must not find there.

It reads every readable mapping of its own process (``/proc/self/maps`` through
``/proc/self/mem``: heap, stacks, anonymous memory, libraries' data), every string and bytes
object the garbage collector can reach and every frame's locals, and counts where each
needle occurs.  The needles must not occur in the scanner itself, or it would find its own
copy: each is held as its first half plus a SHA-256 of the second, and a hit is the first
half followed by bytes that hash to the second.  The whole needle never exists in the job's
memory unless it was there already.
"""

from __future__ import annotations

import hashlib
import json

MARK = "MEMSCAN"

SCANNER = r"""
import gc, hashlib, json, os, sys

def _needles(spec):
    return {name: (bytes.fromhex(head), bytes.fromhex(digest), size)
            for name, (head, digest, size) in spec.items()}

def _count(data, limit, needle):
    head, digest, size = needle
    found, at = 0, data.find(head)
    while 0 <= at < limit:
        tail = data[at + len(head): at + len(head) + size]
        if len(tail) == size and hashlib.sha256(tail).digest() == digest:
            found += 1
        at = data.find(head, at + 1)
    return found

def _memory(needles):
    hits = dict.fromkeys(needles, 0)
    longest = max(len(h) + s for h, _, s in needles.values())
    scanned = 0
    regions = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if parts[1][0] != "r":
                continue
            start, end = (int(v, 16) for v in parts[0].split("-"))
            regions.append((start, end))
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0)  # dumpable: /proc/self/mem is ours
    memory = os.open("/proc/self/mem", os.O_RDONLY)
    chunk = 8 << 20
    for start, end in regions:
        at = start
        while at < end:
            try:
                data = os.pread(memory, min(chunk + longest, end - at), at)
            except OSError:
                break
            limit = min(chunk, len(data))
            scanned += limit
            for name, needle in needles.items():
                hits[name] += _count(data, limit, needle)
            at += chunk
    os.close(memory)
    return hits, scanned

def _objects(needles):
    hits = dict.fromkeys(needles, 0)
    gc.unfreeze()
    seen = set()
    def look(value):
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogatepass")
        elif not isinstance(value, (bytes, bytearray)):
            return
        for name, needle in needles.items():
            hits[name] += _count(bytes(value), len(value), needle)
    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            if id(ref) not in seen:
                seen.add(id(ref))
                look(ref)
    for frame in sys._current_frames().values():
        while frame is not None:
            for value in list(frame.f_locals.values()):
                look(value)
                look(repr(value)[:100000])
            frame = frame.f_back
    return hits

def scan_report(spec):
    needles = _needles(spec)
    memory, scanned = _memory(needles)
    objects = _objects(needles)
    report = {"memory": memory, "objects": objects, "scanned": scanned}
    print("MEMSCAN " + json.dumps(report), flush=True)
"""


def split(needle: bytes) -> tuple[str, str, int]:
    """The needle as the scanner holds it: first half, SHA-256 of the rest, its length."""
    half = len(needle) // 2
    head, tail = needle[:half], needle[half:]
    return head.hex(), hashlib.sha256(tail).hexdigest(), len(tail)


def scanner_source(needles: dict[str, bytes], body: str) -> str:
    """A submission defining ``scan()``, which searches for ``needles``, and then ``body``."""
    spec = {name: split(needle) for name, needle in needles.items()}
    return f"{SCANNER}\ndef scan():\n    scan_report({json.dumps(spec)})\n\n{body}"


def scan_results(stdout: str) -> dict[str, dict[str, int] | int]:
    """The scanner's report from what the job printed (one line; text may follow it)."""
    lines = [line for line in stdout.splitlines() if line.startswith(MARK + " ")]
    assert len(lines) == 1, stdout[-2000:]
    report, _ = json.JSONDecoder().raw_decode(lines[0][len(MARK) + 1 :])
    return report
