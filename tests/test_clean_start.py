"""``bot.clean_start``: a command restarted without its non-plain variables gets them back,
byte for byte, only when it asks, and held nowhere in its memory before that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

from tests.support import REPO

#: restarts itself clean, reports what it holds, then takes the held variables back
PROGRAM = """
import json, os, sys
from bot.clean_start import HELD, restart_clean, restore_environment
restart_clean()
with open("/proc/self/environ", "rb") as block:
    before = block.read()
held_fd = int(os.environ[HELD])  # a KeyError here: it was not restarted
restore_environment()
try:
    os.fstat(held_fd)
    closed = False
except OSError:
    closed = True
print(json.dumps({
    "secret_in_block_before": os.environb[b"MY_SECRET"] in before,
    "plain_kept_before": b"LC_TIME=" in before,
    "secret_after": os.environb[b"MY_SECRET"].hex(),
    "weird_after": os.environb[b"WEIRD_NAME"].hex(),
    "held_gone": HELD not in os.environ,
    "pipe_closed": closed,
}))
"""


def test_held_variables_come_back_byte_for_byte_and_only_after_restore() -> None:
    secret = f"canary-{uuid.uuid4().hex}".encode()
    weird = b"\xff\xfe not utf-8 = with = signs"
    env = {
        b"PATH": os.environb[b"PATH"],
        b"PYTHONPATH": str(REPO).encode(),
        b"LC_TIME": b"C",
        b"MY_SECRET": secret,
        b"WEIRD_NAME": weird,
    }
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], env=env, capture_output=True, timeout=60, check=True
    )
    report = json.loads(done.stdout)
    assert report["secret_in_block_before"] is False  # the restarted process never had it
    assert report["plain_kept_before"] is True
    assert bytes.fromhex(report["secret_after"]) == secret
    assert bytes.fromhex(report["weird_after"]) == weird
    assert report["held_gone"] and report["pipe_closed"]


def test_a_plain_environment_is_not_restarted() -> None:
    code = (
        "import os\nfrom bot.clean_start import HELD, is_clean, restart_clean\n"
        "restart_clean()\nprint(is_clean(), HELD in os.environ)\n"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "LANG": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True", "False"]


def test_a_restarted_command_never_restarts_again() -> None:
    """Whatever the restarted process still holds, it goes on (and forks nothing: it is not
    clean) instead of starting itself over and over."""
    code = (
        "from bot.clean_start import is_clean, restart_clean\n"
        "restart_clean()\nprint('went on', is_clean())\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO),
        "BRRRBOT_HELD_ENVIRONMENT": "999",
        "MY_SECRET": "x",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.stdout.split() == ["went", "on", "False"]
