"""bot.content must stay importable without discord or torch (CLI checker, CI)."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO


def test_importing_content_pulls_in_neither_torch_nor_discord() -> None:
    code = (
        "import bot.content, sys; "
        "assert 'torch' not in sys.modules and 'discord' not in sys.modules, "
        "sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'discord'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
