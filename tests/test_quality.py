"""Lint is part of the suite, so CI and a contributor see the same result."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import REPO


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff is not None, "ruff is part of the test extra"
    result = subprocess.run([ruff, "check", "."], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
