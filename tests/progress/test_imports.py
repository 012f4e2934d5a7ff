"""bot.progress is plain domain logic: importable without discord or torch."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO

MODULES = (
    "awards",
    "champions",
    "export",
    "grants",
    "highlights",
    "leaderboard",
    "level_roles",
    "levels",
    "members",
    "periods",
    "privacy",
    "profile",
    "role_queue",
    "role_sync",
    "schedule",
    "streaks",
    "totals",
)


def test_progress_imports_neither_torch_nor_discord() -> None:
    imports = "; ".join(f"import bot.progress.{name}" for name in MODULES)
    code = (
        f"{imports}; import sys; "
        "assert 'torch' not in sys.modules and 'discord' not in sys.modules, "
        "sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'discord'))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr
