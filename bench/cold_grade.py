"""A cold ``brrrbot grade`` with a secret in the environment against one without.

Run from the repository root:  .venv/bin/python bench/cold_grade.py [--runs 10]

With only plain variables set, the CLI forks its sandbox at once; with a token (or any other
variable a forked sandbox must not inherit) it first starts itself again without it
(``bot.clean_start``) and then forks.  The two kinds of run alternate, so that drift in the
machine's load falls on both; the numbers are medians of the whole command's wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLUTION = REPO / "tests" / "graders" / "solutions" / "correct.py"
TASK = "go-brrrr/matmul-three-ways"


def _grade(folder: Path, extra: dict[str, str]) -> float:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/"), **extra}
    env["PYTHONPATH"] = str(REPO)
    command = [sys.executable, "-m", "bot", "grade", "correct.py", "--task", TASK]
    started = time.perf_counter()
    subprocess.run(command, cwd=folder, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each kind")
    args = parser.parse_args()
    token = {"BRRRBOT_TOKEN": "brrr_1_" + "x" * 43, "SSH_AUTH_SOCK": "/tmp/agent.sock"}
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "correct.py").write_bytes(SOLUTION.read_bytes())
        _grade(folder, {})  # warm the page cache
        plain, secret = [], []
        for _ in range(args.runs):
            plain.append(_grade(folder, {}))
            secret.append(_grade(folder, token))
    without, with_token = statistics.median(plain), statistics.median(secret)
    print(f"cold grade, plain environment      median {without:6.3f} s  (n={len(plain)})")
    print(f"cold grade, token in environment   median {with_token:6.3f} s  (n={len(secret)})")
    print(f"ratio with/without: {with_token / without:.3f}")


if __name__ == "__main__":
    main()
